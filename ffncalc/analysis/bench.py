"""Timing real blocks, each built from its own reference module (``Block.torch_module``), on the available
device. Returns results; never prints.

A timed run is one forward (or forward + backward) of a block on random inputs. Warm-up runs are
excluded; on CUDA each run is bracketed by events, elsewhere by a synchronize and the wall clock.
Achieved FLOP/s use the analytic FLOPs of exactly the work that ran (``count.py``), and the share of
peak compares them with one large matmul of the same dtype, timed the same way in the same run.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass, replace
from typing import Callable

import torch

from ..errors import InputError, MeasurementError
from ..model import reference
from ..model.stack import Model
from . import hardware
from .compare import counterpart
from .count import terms
from .machine import free_bytes

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}
Progress = Callable[[str, int, int], None]  # (what, done, total)


@dataclass(frozen=True)
class Result:
    block: str
    variant: str
    device: str
    dtype: str
    tokens: int
    seq_len: int
    backward: bool
    median_ms: float
    min_ms: float
    max_ms: float
    flops: int  # analytic matmul FLOPs of one timed run
    tflops: float  # achieved: flops / median time
    peak_tflops_measured: float  # one large matmul of the same dtype, same run
    share_of_peak: float
    tokens_per_s: float
    datasheet_tflops: float | None
    datasheet: str | None
    kind: str | None = None  # ffn blocks: dense, gated or moe
    d_ff: int | None = None  # ffn blocks: the (expert) hidden width
    d_model: int | None = None  # ffn blocks: the model width (plot sweep checks it against its own)

    def record(self) -> dict:
        return asdict(self)


def pick_device(name: str) -> torch.device:
    """``auto``: CUDA, then MPS, then the CPU. A named device that is absent is refused."""
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    available = {"cpu": True, "cuda": torch.cuda.is_available(), "mps": torch.backends.mps.is_available()}
    if not available.get(name, False):
        raise InputError(f"--device {name}: no such device here (available: {', '.join(k for k, v in available.items() if v)})")
    return torch.device(name)


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "mps":
        import subprocess

        out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True)
        return out.stdout.strip() or "Apple GPU (mps)"
    return "cpu"


# The x86 instructions that multiply each dtype in hardware (the flags /proc/cpuinfo lists). oneDNN also answers
# yes for bf16 on any AVX-512 CPU, where it converts to fp32 and back around every product: emulation, whose time
# says nothing of the dtype, and whose fp32 copies the memory estimate does not hold.
X86_NATIVE = {"bf16": {"avx512_bf16", "amx_bf16"}, "fp16": {"avx512_fp16", "amx_fp16"}}


def native_cpu(dtype: str) -> bool:
    """Whether this CPU multiplies ``dtype`` in hardware: oneDNN's test, and on x86 the instructions themselves
    (AVX512-BF16 or AMX-BF16 for bf16, AVX512-FP16 or AMX-FP16 for fp16) where the CPU lists them; elsewhere torch
    converts to fp32 and back around every product."""
    if dtype == "fp32":
        return True
    if not onednn_native(dtype):
        return False
    flags = cpu_flags()
    return flags is None or bool(flags & X86_NATIVE[dtype])


def onednn_native(dtype: str) -> bool:
    """oneDNN's answer: whether it multiplies ``dtype`` on this CPU, natively or (bf16 on AVX-512) by converting."""
    mkldnn = torch.ops.mkldnn
    return bool({"bf16": mkldnn._is_mkldnn_bf16_supported, "fp16": mkldnn._is_mkldnn_fp16_supported}[dtype]())


def cpu_flags() -> set[str] | None:
    """The instruction-set flags of an x86 CPU (Linux's /proc/cpuinfo); None where they cannot be read (another
    architecture or system: oneDNN's answer stands)."""
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64", "i686", "i386"):
        return None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def check_dtype(device: torch.device, dtype: str) -> None:
    """Refuse a dtype the device cannot multiply in, by trying a small matmul; on a CPU, also one it has
    no instructions for (an emulated dtype's time says nothing about the dtype)."""
    if device.type == "cpu" and not native_cpu(dtype):
        raise InputError(
            f"--dtype {dtype}: this CPU has no {dtype} matrix instructions (oneDNN finds none), so "
            "torch would emulate it and the time would not be the dtype's; use --dtype fp32"
        )
    try:
        a = torch.ones(8, 8, device=device, dtype=DTYPES[dtype])
        (a @ a).sum().item()
    except (RuntimeError, TypeError) as exc:
        raise InputError(f"--dtype {dtype} is not supported on {device.type}: {str(exc).splitlines()[0]}") from None


@dataclass(frozen=True)
class Plan:
    """One block to time: how to build it and what it costs, known before anything is allocated."""

    block: str
    variant: str
    spec: Model  # a one-layer model holding the block
    flops_per_token: int  # forward matmul FLOPs
    params: int
    activations_per_token: int  # elements a forward keeps for backward
    scores: int  # attention score elements per sequence (heads × s × s)
    experts: int = 0  # expert modules built, whose torch objects cost memory beside their weights


def _one_layer(spec: Model, layer: int, ffn=None) -> Model:
    if not 0 <= layer < spec.n_layers:
        raise InputError(f"--layer {layer}: the model has layers 0–{spec.n_layers - 1}")
    chosen = spec.layers[layer]
    return spec.with_layers([replace(chosen, ffn=ffn) if ffn is not None else chosen])


def plan(spec: Model, block: str, seq_len: int, layer: int = 0, ffn=None, variant: str | None = None) -> Plan:
    """Analytic cost of ``block`` in ``layer`` (optionally with another FFN), from count.py's terms."""
    one = _one_layer(spec, layer, ffn)
    slots = {"ffn": ("ffn",), "attention": ("attention",), "layer": ("ffn", "attention", "")}[block]
    parts = [t for t in terms(one, seq_len) if t.part == "layers" and t.slot in slots and t.role != "op"]
    flops = sum(2 * t.macs for t in parts if t.role in ("weight", "core"))
    params = sum(t.numel * t.count for t in parts)
    attn, f = one.layers[0].attention, one.layers[0].ffn
    # What a forward keeps for backward, per token, as each block states it; the attention scores and
    # probabilities are per sequence, 2 elements per score.
    per_token = {
        "ffn": f.kept_elements(one),
        "attention": attn.kept_elements(one),
        "layer": attn.kept_elements(one) + f.kept_elements(one),
    }[block]
    # eager attention's scores and probabilities, 2 elements per score (its 5 bytes per score hold 2 of them)
    scores = attn.score_bytes(one, seq_len) * 2 // 5 if block != "ffn" else 0
    if block == "layer" and one.parts:
        _check_alone(one, seq_len)
    body = f.body()
    ffn_name = f.describe() if body is not f else f"{f.describe()} d_ff {f.d_ff}"
    name = variant or {"ffn": ffn_name, "attention": attn.describe(), "layer": f"attention + {ffn_name}"}[block]
    experts = {"ffn": (f,), "attention": (attn,), "layer": (attn, f)}[block]
    return Plan(block, name, one, flops, params, per_token, scores, sum(reference.expert_modules(b) for b in experts))


def _check_alone(one: Model, seq_len: int) -> None:
    """Refuse a layer that runs only inside its model: where a part makes what the layers read (residual streams
    the model expands the input into, vectors it computes for every layer), a layer on a lone (batch, tokens,
    d_model) input does not run. Found by running the layer's parts once on the meta device, which allocates
    nothing."""
    from ..blocks import block_class
    from ..model.schema import Slot

    # the parts' modules around the layer, and no blocks of any size inside it (a mixture of a million experts is
    # as alone as one of eight): whether the layer runs alone is the parts' doing
    none = {slot: block_class(Slot(slot), "none")() for slot in ("attention", "ffn")}
    bare = replace(one.layers[0], **none)
    with torch.device("meta"):
        module = reference.LayerModule(one, bare, False)
    try:
        with torch.no_grad():
            module(torch.empty(1, seq_len, one.d_model, device="meta"))
    except (RuntimeError, KeyError, ValueError, TypeError, IndexError, NotImplementedError) as exc:
        parts = ", ".join(p.key for p in one.parts)
        raise InputError(
            f"--block layer: a layer of this model runs only inside it, which its parts ({parts}) feed with more "
            f"than the layer's input ({type(exc).__name__}); time --block attention or --block ffn"
        ) from None


def required_bytes(p: Plan, tokens: int, seq_len: int, dtype: str, backward: bool, probe: int) -> int:
    """Weights, kept activations, and with backward the gradients of both; plus the matmul probe, and the torch
    objects of every expert module (a mixture of many small experts is mostly those)."""
    size = BYTES[dtype]
    batch = tokens // seq_len
    acts = p.activations_per_token * tokens + p.scores * batch
    total = p.params + 2 * acts  # an input and an output buffer beside what is kept
    if backward:
        total += p.params + acts
    return total * size + 3 * probe * probe * size + p.experts * reference.EXPERT_BYTES


def compare_variants(spec: Model, layer: int) -> list[tuple[str, object]]:
    """The layer's FFN (a mixture's expert) and its other kind at equal parameters, dense first."""
    ffn = _one_layer(spec, layer).layers[0].ffn.body()
    if ffn is None:
        raise InputError(f"--compare-ffn: layer {layer} has no dense or gated FFN")
    other = counterpart(ffn, spec.d_model)
    return sorted([(ffn.kind, ffn), (other.kind, other)], key=lambda kv: kv[0])


def _time(
    fns: list[Callable[[], object]], device: torch.device, repeats: int, warmup: int, tick: Callable[[], None]
) -> list[list[float]]:
    """Milliseconds of each function's ``repeats`` runs after ``warmup`` untimed ones.

    The functions take turns within each repeat, so on a shared or throttling machine they all see
    the same conditions and their ratios stay meaningful.
    """
    sync = {"cuda": torch.cuda.synchronize, "mps": torch.mps.synchronize}.get(device.type, lambda: None)
    for _ in range(warmup):
        for fn in fns:
            fn()
    sync()
    out: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, times in zip(fns, out):
            if device.type == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            else:
                sync()
                t0 = time.perf_counter()
                fn()
                sync()
                times.append(1000 * (time.perf_counter() - t0))
            tick()
    return out


def probe_size(device: torch.device) -> int:
    """The largest probe: large enough to reach a device's matmul rate, small enough to fit anywhere."""
    return 8192 if device.type == "cuda" else 2048


PROBE_MS = 400  # the longest probe run the doubling aims for: a probe of 10 repeats stays within seconds


def matmul_probe(device: torch.device, dtype: str) -> tuple[Callable[[], object], int]:
    """One square matmul of ``dtype``, and its FLOPs: the device's matmul rate in this run.

    The side doubles from 256 up to ``probe_size`` while the next run (8 times the work) would still take
    under ``PROBE_MS``: large where the device is fast, and short on a device or dtype that is slow.
    """
    sync = {"cuda": torch.cuda.synchronize, "mps": torch.mps.synchronize}.get(device.type, lambda: None)
    n = 256
    while True:
        a = torch.randn(n, n, device=device, dtype=DTYPES[dtype])
        b = torch.randn(n, n, device=device, dtype=DTYPES[dtype])
        a @ b  # the first run pays for set-up
        sync()
        t0 = time.perf_counter()
        a @ b
        sync()
        if n >= probe_size(device) or 8 * 1000 * (time.perf_counter() - t0) >= PROBE_MS:
            return (lambda: a @ b), 2 * n**3
        n *= 2


def build_block(p: Plan, device: torch.device, dtype: str) -> torch.nn.Module:
    """Only the timed block (or layer), built on the device in the timed dtype (no fp32 copy first, so the memory
    estimate's weights are all there is): no embeddings or head are allocated."""
    model, layer = p.spec, p.spec.layers[0]
    before = torch.get_default_dtype()
    torch.set_default_dtype(DTYPES[dtype])
    try:
        with torch.device(device):
            module = {
                "ffn": lambda: layer.ffn.torch_module(model, False),
                "attention": lambda: layer.attention.torch_module(model, False),
                "layer": lambda: reference.LayerModule(model, layer, False),
            }[p.block]()
    finally:
        torch.set_default_dtype(before)
    return module.to(dtype=DTYPES[dtype])


@dataclass(frozen=True)
class Timing:
    """How blocks are timed: on ``device`` in ``dtype``, ``tokens`` tokens a run in sequences of ``seq_len``, a
    forward or a forward and backward, ``repeats`` timed runs after ``warmup`` untimed ones."""

    device: torch.device
    dtype: str
    tokens: int
    seq_len: int
    backward: bool
    repeats: int
    warmup: int


def run(plans: list[Plan], timing: Timing, progress: Progress | None = None) -> list[Result]:
    """Time the planned blocks and the matmul probe, taking turns; refuse a run that would not fit."""
    device, dtype, backward = timing.device, timing.dtype, timing.backward
    tokens, seq_len, repeats, warmup = timing.tokens, timing.seq_len, timing.repeats, timing.warmup
    if tokens % seq_len:
        raise InputError(f"--tokens {tokens} is not a whole number of sequences of --seq-len {seq_len}")
    check_dtype(device, dtype)
    free = free_bytes(device)
    for p in plans:
        need = required_bytes(p, tokens, seq_len, dtype, backward, probe_size(device))
        if need > 0.9 * free:
            fits = tokens
            while fits > seq_len and required_bytes(p, fits, seq_len, dtype, backward, probe_size(device)) > 0.9 * free:
                fits //= 2
            least = required_bytes(p, seq_len, seq_len, dtype, backward, probe_size(device))
            advice = (
                f"try --tokens {max(seq_len, fits // seq_len * seq_len)}"
                if least <= 0.9 * free
                else f"even one sequence of {seq_len:,} tokens needs {least / 2**30:.1f} GiB (the block's "
                f"{p.params:,} weights: {p.params * BYTES[dtype] / 2**30:.1f} GiB"
                + (
                    f"; its {p.experts:,} expert modules' torch objects: {p.experts * reference.EXPERT_BYTES / 2**30:.1f} GiB"
                    if p.experts
                    else ""
                )
                + "): time a smaller model or another device"
            )
            raise InputError(
                f"the {p.block} run needs about {need / 2**30:.1f} GiB but {device.type} has {free / 2**30:.1f} GiB free; {advice}"
            )
    total = (len(plans) + 1) * repeats
    done = 0

    def tick():
        nonlocal done
        done += 1
        if progress:
            progress("timing", done, total)

    name = device_name(device)
    sheet = hardware.lookup(name) if device.type != "cpu" else None
    probe, probe_flops = matmul_probe(device, dtype)
    steps = [probe]
    for p in plans:
        torch.manual_seed(0)
        steps.append(_step(build_block(p, device, dtype), p, device, dtype, tokens, seq_len, backward))
    times = _time(steps, device, repeats, warmup, tick)
    peak = probe_flops / (statistics.median(times[0]) / 1000) / 1e12
    results = []
    n = round((probe_flops / 2) ** (1 / 3))
    for p, ms in zip(plans, times[1:]):
        flops = p.flops_per_token * tokens * (3 if backward else 1)  # backward: input and weight gradients
        median = statistics.median(ms)
        achieved = flops / (median / 1000) / 1e12
        results.append(
            Result(
                block=p.block,
                variant=p.variant,
                device=f"{device.type} ({name})" if device.type != "cpu" else "cpu",
                dtype=dtype,
                tokens=tokens,
                seq_len=seq_len,
                backward=backward,
                median_ms=median,
                min_ms=min(ms),
                max_ms=max(ms),
                flops=flops,
                tflops=achieved,
                peak_tflops_measured=peak,
                share_of_peak=achieved / peak,
                tokens_per_s=tokens / (median / 1000),
                datasheet_tflops=sheet.tflops.get(dtype) if sheet else None,
                datasheet=sheet.name if sheet else None,
                **_ffn_shape(p),
            )
        )
        if achieved > peak:  # no block multiplies faster than the device's matmul peak: the probe missed it
            raise MeasurementError(
                f"probe error: the {p.block} block ran at {achieved:.4g} TFLOP/s, above the {peak:.4g} TFLOP/s "
                f"measured for one {n}×{n} {dtype} matmul beside it, so the probe did not reach this device's "
                "peak (a machine busy in turns?); no share of peak is shown; rerun, or with more --repeats"
            )
    return results


def _step(module: torch.nn.Module, p: Plan, device, dtype: str, tokens: int, seq_len: int, backward: bool) -> Callable[[], object]:
    """One timed run of ``module`` on random input: forward, or forward and every gradient."""
    x = torch.randn(tokens // seq_len, seq_len, p.spec.d_model, device=device, dtype=DTYPES[dtype])
    if not backward:

        def forward():
            with torch.no_grad():
                return module(x)

        return forward
    x.requires_grad_(True)
    params = list(module.parameters())
    grad = torch.randn(x.shape, device=device, dtype=x.dtype)
    # every gradient the forward makes; a parameter it does not read (a branch this input never takes) has none
    return lambda: torch.autograd.grad(module(x), [x, *params], grad, allow_unused=True)


def _ffn_shape(p: Plan) -> dict:
    if p.block != "ffn":
        return {}
    ffn = p.spec.layers[0].ffn
    return {"kind": ffn.kind, "d_ff": ffn.body().d_ff if ffn.body() is not None else None, "d_model": p.spec.d_model}
