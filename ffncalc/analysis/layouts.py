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
    from .training import bubble_fraction, resolve_layout

    try:
        lay = resolve_layout(spec, step, replace(layout, gpus=None), step.seq_len or spec.context_length)
        m = bubble_fraction(lay.pp, step.global_batch, step.micro_batch, lay.dp, lay.virtual_stages)[1]
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
