"""Searches over training layouts: the layout of a given device count that fits with the least model parallelism,
and the fewest devices any layout fits on. Each candidate is priced by ``memory.train_memory``; pure arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..errors import InputError
from ..model.stack import Model
from .hardware import NODE
from .memory import train_memory
from .plan import Device, Layout, Step

RECOMPUTE_ORDER = ("none", "selective", "full")  # the cheapest first: each adds recomputation FLOPs
MAX_DP = 2**20  # data-parallel degrees searched: a million replicas, past any cluster


def fits(spec: Model, step: Step, layout: Layout, device: Device) -> Layout | None:
    """The layout resolved if it is possible and its most loaded device fits, else None."""
    from .schedules import bubble_fraction
    from .training import resolve_layout

    try:
        lay = resolve_layout(spec, step, replace(layout, gpus=None), step.seq_len or spec.context_length)
        m = bubble_fraction(lay.pp, step.global_batch, step.micro_batch, lay.dp, lay.virtual_stages)[1]  # any schedule's m
    except InputError:
        return None
    memory = train_memory(spec, step, lay, device, m)
    return lay if next(f.value for f in memory if f.id == "free_bytes_per_device") >= 0 else None


def fitting_layout(spec: Model, step: Step, layout: Layout, device: Device) -> Layout | None:
    """The layout of ``layout.gpus`` devices that fits ``step`` with the least model parallelism (its context and
    expert parallelism as given): tp × pp ascending (tp up to a node, the larger tp first: it splits activations
    as well as weights), each with the given ZeRO stage or a higher one up to 2, which move no more bytes than
    data parallelism does; ZeRO 3's 1.5 times that only after every layout (Rajbhandari et al. 2020 §7); None
    when none fits."""
    from . import parallel

    gpus, cp, zero = layout.gpus or 1, layout.cp, layout.zero or 0
    if gpus % cp:
        return None
    shapes = parallel.model_splits(spec.n_layers, gpus // cp)
    candidates = [(z, tp, pp) for tp, pp in shapes for z in range(zero, 3)] + [(3, tp, pp) for tp, pp in shapes]
    for z, tp, pp in candidates:
        if (gpus // cp) % (tp * pp):
            continue
        found = fits(spec, step, replace(layout, dp=gpus // (cp * tp * pp), tp=tp, pp=pp, zero=z), device)
        if found:
            return found
    return None


def shapes(spec: Model, layout: Layout) -> list[tuple[int, int, int, int]]:
    """(tp, pp, ep, zero) the search tries: tp a power of two up to a node that divides the heads, pp a power of
    two up to the layers, ep the given one or any power of two dividing every layer's routed experts, ZeRO 0–3."""
    from . import parallel

    tps = []
    for tp in (1, 2, 4, NODE):
        try:
            parallel.check_tp(spec, tp)
        except InputError:
            continue
        tps.append(tp)
    pps = [1 << i for i in range(spec.n_layers.bit_length()) if 1 << i <= spec.n_layers]
    counts = parallel.experts(spec)
    eps = [layout.ep] if layout.ep > 1 or not counts else [1 << i for i in range(21) if all(n % (1 << i) == 0 for n in counts)]
    return [(tp, pp, ep, z) for tp in tps for pp in pps for ep in eps for z in range(4)]


def degrees(step: Step, ep: int, most: int) -> Sequence[int]:
    """The data-parallel degrees a shape may take, ascending, up to ``most``: multiples of ep, dividing the global
    batch's sequences over the micro-batch when one is given."""
    if step.global_batch is None:
        return range(ep, most + 1, ep)
    per = step.global_batch // step.micro_batch if step.global_batch % step.micro_batch == 0 else 0
    return [d for d in range(ep, min(per, most) + 1, ep) if per % d == 0]


def fewest_devices(spec: Model, step: Step, layout: Layout, device: Device) -> tuple[Layout, Step] | None:
    """The layout and recomputation of the fewest devices that fits: every shape (``shapes``) with each
    recomputation, its least data-parallel degree that fits found by bisection (memory never grows with dp: ZeRO
    shards shrink and the micro-batches in flight never grow); among as few devices, the least tp × pp, then the
    least recomputation, then the lowest ZeRO stage. The context parallelism is the given one."""
    best: tuple[tuple[int, int, int, int], Layout, Step] | None = None
    for tp, pp, ep, zero in shapes(spec, layout):
        for rank, recompute in enumerate(RECOMPUTE_ORDER):
            trial = replace(step, recompute=recompute)
            base = replace(layout, gpus=None, tp=tp, pp=pp, ep=ep, zero=zero)
            # no more devices than the best so far
            dps = degrees(step, ep, MAX_DP if best is None else best[0][0] // (tp * pp * layout.cp))
            if not dps or fits(spec, trial, replace(base, dp=dps[-1]), device) is None:
                continue
            lo, hi = 0, len(dps) - 1  # dps[hi] fits; find the first that does
            while lo < hi:
                mid = (lo + hi) // 2
                if fits(spec, trial, replace(base, dp=dps[mid]), device) is None:
                    lo = mid + 1
                else:
                    hi = mid
            lay = fits(spec, trial, replace(base, dp=dps[lo]), device)
            assert lay is not None and lay.gpus is not None
            key = (lay.gpus, tp * pp, rank, zero)
            if best is None or key < best[0]:
                best = (key, lay, trial)
    return None if best is None else (best[1], best[2])


def layout_key(lay: Layout) -> str:
    """A layout as the flags that give it."""
    return (
        f"--tp {lay.tp} --pp {lay.pp} --cp {lay.cp} --dp {lay.dp}"
        + (f" --ep {lay.ep}" if lay.ep > 1 else "")
        + f" --zero {lay.zero}"
        + (f" --virtual-stages {lay.virtual_stages}" if lay.virtual_stages > 1 else "")
        + (f" --schedule {lay.schedule}" if lay.schedule != "1f1b" else "")
    )


def _powers(most: int) -> list[int]:
    return [1 << i for i in range(most.bit_length()) if 1 << i <= most]


def layouts_of(spec: Model, step: Step, layout: Layout) -> list[Layout]:
    """Every layout of ``layout.gpus`` devices the fastest search weighs: cp a power of two that splits the sequence
    into 2·cp chunks; (tp, pp) from ``parallel.model_splits`` of what cp leaves; ep 1, or a power of two dividing every
    layer's routed experts and dp; ZeRO 0–3; 1F1B over v chunks a device, v a power of two with a layer to each of
    the pp·v chunks (as ``training.resolve_layout`` allows), and ZB-H1 and ZB-H2 under a pipeline. Whether
    each is possible (heads over tp, layers over pp, …) ``fits`` asks ``resolve_layout``."""
    from . import parallel
    from .schedules import SCHEDULES

    gpus, seq, n = layout.gpus or 1, step.seq_len or spec.context_length, spec.n_layers
    counts = parallel.experts(spec)
    out = []
    for cp in _powers(gpus):
        if gpus % cp or (cp > 1 and seq % (2 * cp)):
            continue
        for tp, pp in parallel.model_splits(n, gpus // cp):
            dp = gpus // (cp * tp * pp)
            eps = [e for e in _powers(dp) if dp % e == 0 and all(c % e == 0 for c in counts)] if counts else [1]
            vs = _powers(n // pp) if pp > 1 else [1]
            pipes = [("1f1b", v) for v in vs] + ([(s, 1) for s in SCHEDULES if s != "1f1b"] if pp > 1 else [])
            for ep in eps:
                for schedule, v in pipes:
                    for zero in range(4):
                        out.append(replace(layout, dp=dp, tp=tp, pp=pp, cp=cp, ep=ep, zero=zero, virtual_stages=v, schedule=schedule))
    return out


def fastest_layouts(
    spec: Model, step: Step, layout: Layout, device: Device, convention: str = "6n", dtype: str = "bf16", keep: int = 5
) -> list[tuple[Layout, Step, float]]:
    """The ``keep`` fastest layouts of ``layout.gpus`` devices that fit, fastest first: (layout, step, seconds a
    token of the whole run). Each candidate (``layouts_of`` × recompute none, selective, full) is timed as
    ``training.train`` times a run: its FLOPs a token, recomputation included, over the devices' achieved rate; with
    a kernel efficiency (``device.kernel_mfu``: the rate while busy) the tensor-, context- and expert-parallel
    collectives no compute hides are added (``schedules.comm_per_token``) and the whole stretched by its pipeline bubble; an
    end-to-end rate (--mfu, --tflops) holds the bubble and communication inside it, so only recomputation tells
    layouts apart. The rest of the communication (data-parallel, ZeRO, the pipeline's hand-offs) is taken as
    overlapped with compute. Among layouts as fast, the least model parallelism (tp × pp × cp), then the lowest ZeRO
    stage, the fewest chunks a device, the least ep, 1F1B before ZB-H1 before ZB-H2 and the least recomputation
    come first.
    Candidates are checked for memory (``fits``, which resolves each with ``training.resolve_layout``) in that order
    until ``keep`` fit, one of each split (tp, pp, cp, chunks, schedule): the first is the fastest of all."""
    from .count import tally
    from .schedules import SCHEDULES, bubble_fraction, comm_per_token, pass_flops
    from .training import throughput

    rate = throughput(device, dtype)
    flops_per_s = rate.flops_per_s if rate else 1.0
    busy = bool(rate and rate.busy)
    gpus = layout.gpus or 1
    ranked = []
    comms: dict[tuple[int | None | str, ...], float] = {}
    for rank, recompute in enumerate(RECOMPUTE_ORDER):
        trial = replace(step, recompute=recompute)
        t = tally(spec, convention=convention, seq_len=trial.seq_len, recompute=recompute, mtp=bool(trial.mtp))
        per_token = t.train_flops // t.tokens
        passes = pass_flops(spec, trial) if busy and step.global_batch else (1, 1, 1)
        for lay in layouts_of(spec, trial, layout):
            try:
                bubble = bubble_fraction(
                    lay.pp, step.global_batch, step.micro_batch, lay.dp or 1, lay.virtual_stages, lay.schedule, passes
                )[0]
            except InputError:
                continue
            key = (lay.tp, lay.pp, lay.cp, lay.dp, lay.ep, recompute)  # what the collectives depend on
            if key not in comms:
                comms[key] = comm_per_token(spec, trial, lay, device, flops_per_s) if busy else 0.0
            comm = comms[key]
            seconds = (per_token / (flops_per_s * gpus) + comm) / ((1 - bubble) if busy else 1)
            order = (lay.tp * lay.pp * lay.cp, lay.zero, lay.virtual_stages, lay.ep, SCHEDULES.index(lay.schedule), rank)
            ranked.append((seconds, order, lay, trial))
    ranked.sort(key=lambda r: (r[0], r[1]))
    found: list[tuple[Layout, Step, float]] = []
    shown: set[tuple[int, ...] | tuple[object, ...]] = set()
    for seconds, _, lay, trial in ranked:
        split = (lay.tp, lay.pp, lay.cp, lay.virtual_stages, lay.schedule)
        if split in shown:  # one of each split: its fastest ep, ZeRO stage and recomputation that fits
            continue
        resolved = fits(spec, trial, lay, device)
        if resolved is not None:
            shown.add(split)
            found.append((resolved, trial, seconds))
            if len(found) == keep:
                break
    return found
