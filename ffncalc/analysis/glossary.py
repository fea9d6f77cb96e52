"""What each figure ffncalc prints means, and its source: every figure of ``train``, ``infer`` and ``fit`` (from
runs that produce all of them), every counting convention and the two FLOP views, each once, under the key
its JSON uses. ``ffncalc explain`` and the docs page ``figures.md`` read it; nothing here is hand-kept twice."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class Entry:
    term: str  # the JSON key (a figure's id, a convention's name, a view's name)
    kind: str  # "train", "infer", "fit", "convention" or "view"
    label: str
    unit: str
    source: str


DERIVED = "ffncalc's arithmetic on the command's inputs and other figures"

VIEWS = [
    Entry(
        "executed",
        "view",
        "forward FLOPs with attention executed dense: the full square a masked eager "
        "attention computes, what torch's FlopCounterMode counts",
        "FLOP",
        "torch.utils.flop_counter; the model's reference code",
    ),
    Entry(
        "useful",
        "view",
        "forward FLOPs with attention over the keys each query meets: the causal triangle, "
        "a sliding window, a chunk or a sparse selection",
        "FLOP",
        "the causal and sliding-window masks, as flash-attention kernels compute them",
    ),
]


def runs() -> list[tuple[str, Any]]:
    """(command, answer) for runs that between them show every figure each command can show (a pipeline's
    bubble, a draft, a decode form); the figures' JSON schemas (``output/schemas.py``) are read from them too."""
    from ..sources import presets
    from . import hardware
    from .finetune import plan_finetune
    from .fit import plan_fit
    from .inference import plan_inference
    from .plan import Device, FitRun, Formats, InferenceRun, Layout, Placement, Step, TrainingRun, Tuning
    from .training import plan_training

    _, llama = presets.load("llama3-70b")
    _, deepseek = presets.load("deepseek-v3")
    _, t5 = presets.load("flan-t5-xl")  # an encoder-decoder over a source of 512 tokens: its cross-attention cache
    t5 = replace(t5, parts=tuple(p.given(source_len=512) for p in t5.parts))
    h100 = Device(hardware.by_key("h100-sxm", None))
    rtx4090, lora = Device(hardware.by_key("rtx4090", None), reserve=0.0), Tuning(16, base_dtype="nf4")
    return [
        (
            "train",
            plan_training(
                llama,
                "llama3-70b",
                TrainingRun("15T", tokens_per_s=2e6, goodput=0.9),
                Step(recompute="selective", global_batch=512),
                Layout(gpus=64, tp=8, pp=2),
                h100,
            ),
        ),
        (
            "train",
            plan_training(deepseek, "deepseek-v3", TrainingRun("14.8T"), Step(seq_len=4096), Layout(gpus=2048, pp=16, ep=8), h100),
        ),
        (
            "train",
            plan_training(
                llama,
                "llama3-70b",
                TrainingRun("15T"),
                Step(seq_len=8192, recompute="full", framework="fsdp2", global_batch=64),
                Layout(gpus=64, tp=8, pp=2, virtual_stages=2),
                Device(h100.hw, kernel_mfu=0.5),
            ),
        ),
        (
            "infer",
            plan_inference(
                deepseek, "deepseek-v3", InferenceRun(4000, 500, batch=8, draft=1, accept=0.7), Formats("fp8"), Placement(gpus=8), h100
            ),
        ),
        ("fit", plan_fit(llama, "llama3-70b", FitRun(8192, batch=4), Formats(), Placement(gpus=2), h100)),
        ("train", plan_training(t5, "flan-t5-xl", TrainingRun("1B"), Step(seq_len=128), Layout(), h100)),
        ("infer", plan_inference(t5, "flan-t5-xl", InferenceRun(1, 128, batch=8), Formats(), Placement(), h100)),
        ("fit", plan_fit(t5, "flan-t5-xl", FitRun(128, batch=8), Formats(), Placement(), h100)),
        (
            "train",
            plan_finetune(
                llama, "llama3-70b", TrainingRun("100M"), Step(seq_len=2048, recompute="full"), Layout(gpus=2, zero=3), h100, lora
            ),
        ),
        ("fit", plan_finetune(llama, "llama3-70b", None, Step(seq_len=2048, recompute="full"), Layout(), rtx4090, lora)),
    ]


def entries() -> list[Entry]:
    """Every figure, convention and view, in the order the commands show them, each term once."""
    from .conventions import CONVENTIONS

    out: dict[str, Entry] = {}
    for command, result in runs():
        for f in result.figures:
            out.setdefault(f.id, Entry(f.id, command, f.label, f.unit, f.source or DERIVED))
    for c in CONVENTIONS.values():
        out.setdefault(c.name, Entry(c.name, "convention", c.summary, "FLOP", c.source))
    for v in VIEWS:
        out.setdefault(v.term, v)
    return list(out.values())


def explain(term: str | None) -> list[Entry]:
    """The entries whose key or label holds ``term`` (all of them for None); none found is an error naming the
    closest keys."""
    from ..errors import InputError

    every = entries()
    if term is None:
        return every
    wanted = term.lower().replace("-", "_")
    exact = [e for e in every if e.term.replace("-", "_") == wanted]
    found = exact or [e for e in every if wanted in e.term.replace("-", "_") or term.lower() in e.label.lower()]
    if not found:
        import difflib

        near = difflib.get_close_matches(wanted, [e.term for e in every], n=3, cutoff=0.4)
        raise InputError(
            f"explain {term}: no figure, convention or view by that name"
            + (f"; nearest: {', '.join(near)}" if near else "")
            + " (ffncalc explain lists them all)"
        )
    return found
