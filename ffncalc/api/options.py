"""The choices an option takes, stated once for the library and the command line, and the checks a keyword
argument meets (those the command line's reader applies to a flag's text): a value out of range or not one of
its choices raises ``OptionError`` naming the flag."""

from __future__ import annotations

import math
from typing import Any

from ..analysis.conventions import CONVENTIONS
from ..analysis.count import RECOMPUTE
from ..errors import OptionError
from ..model.schema import LIMIT

ConventionName = tuple(CONVENTIONS)
RecomputeName = tuple(RECOMPUTE)
VerifyConvention = ("exact", "causal")
KindName = ("dense", "gated")
MatchName = ("params", "flops")
BenchBlock = ("ffn", "attention", "layer")
BenchDevice = ("auto", "cpu", "cuda", "mps")
BenchDtype = ("fp32", "bf16", "fp16")
HardwareDtype = ("fp32", "bf16", "fp16", "fp8")
WeightDtype = ("fp32", "bf16", "fp16", "fp8", "int8", "int4")
KvDtype = (*WeightDtype, "q8_0", "q4_0")  # llama.cpp's -ctk/-ctv block types too (formats.KV_BITS)
EngineName = ("vllm", "sglang", "trtllm", "llamacpp", "mlx")  # analysis/engines.py
PrecisionName = ("bf16", "fp8")
OptimizerName = ("adam", "adam8bit", "paged_adam", "paged_adam8bit")
BaseDtype = ("bf16", "fp16", "fp32", "fp8", "int8", "nf4", "fp4", "gptq", "awq")  # analysis/quantized.py
AdapterDtype = ("fp32", "bf16")
FrameworkName = ("megatron", "megatron-deepspeed", "deepspeed", "fsdp2", "hf")
LossName = ("full", "chunked")
ScheduleName = ("1f1b", "zb-h1", "zb-h2")  # analysis/training.py SCHEDULES
KernelName = ("flash", "eager")
DecodeForm = ("absorbed", "expanded")
FigureWidth = ("docs", "column", "page")


def flag(name: str) -> str:
    """The command line's flag for a keyword argument: seq_len -> --seq-len."""
    return "--" + name.replace("_", "-")


def shown(value: Any, limit: int = 60) -> str:
    """A value as an error message echoes it: its repr, cut to ``limit`` characters (a message is one line)."""
    text = repr(value) if not isinstance(value, (int, float)) or isinstance(value, bool) else f"{value}"
    if len(text) > limit:
        text = f"{text[: limit - 1]}… ({len(text):,} characters)"
    return text


def choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise OptionError(f"{flag(name)} {shown(value)}: choose from {', '.join(choices)}", field=name)


def whole(name: str, value: Any, low: int = 1, high: int = LIMIT) -> None:
    """An integer from ``low`` to ``high`` (None passes: the option left to its default)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionError(f"{flag(name)} {shown(value)}: an integer", field=name)
    if not low <= value <= high:
        raise OptionError(f"{flag(name)} {shown(value)}: from {low:,} to {high:,}", field=name)


def number(name: str, value: Any, low: float = 0.0, high: float = 1e30, *, above: bool = True) -> None:
    """A finite number above (or from) ``low`` and at most ``high`` (None passes)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise OptionError(f"{flag(name)} {shown(value)}: a number", field=name)
    if not math.isfinite(value) or not (value > low if above else value >= low) or value > high:
        span = f"above {low:g} and" if above else f"from {low:g} to"
        raise OptionError(f"{flag(name)} {shown(value)}: a number {span} at most {high:g}", field=name)


def flag_value(name: str, value: Any) -> None:
    """A switch: True or False (None passes: left to its default)."""
    if value is not None and not isinstance(value, bool):
        raise OptionError(f"{flag(name)} {shown(value)}: True or False", field=name)


def text(name: str, value: Any) -> None:
    """A string (None passes)."""
    if value is not None and not isinstance(value, str):
        raise OptionError(f"{flag(name)} {shown(value)}: a string", field=name)
