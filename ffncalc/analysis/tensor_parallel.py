"""A tensor-parallel block or layer timed across ranks (``bench MODEL --tp N``), Megatron-style (Shoeybi et al.
2019 §3): each rank builds the whole reference module from the same seed, keeps its share (``Block.tensor_parallel``:
q, k, v and up, gate split by their outputs, o and down by their inputs) and ends each sublayer with an all-reduce
of its output. The time of a forward is split into the all-reduces', the wait before each for the slowest rank
(a barrier), and the rest (compute); rank 0 also runs the
whole module on the same input, and the sharded output is held to it. The communication is set beside what the plans
charge for it (links.allreduce_s over the table's link, or a links file's)."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

import torch

from ..errors import InputError
from . import ranks
from .bench import BYTES, DTYPES, Plan, build_block, required_bytes
from .links import Link, allreduce_s, collectives


@dataclass(frozen=True)
class ParallelRun:
    """One tensor-parallel timing: the planned block (bench.plan), ``tp`` ranks, ``tokens`` a forward in sequences
    of ``seq_len``, in ``dtype``, ``repeats`` timed forwards after ``warmup``."""

    plan: Plan
    tp: int
    tokens: int
    seq_len: int
    dtype: str
    repeats: int
    warmup: int


def sublayers(p: Plan) -> list[Any]:
    """The blocks the timed module holds (a ``none`` block is no sublayer: nothing to split, no all-reduce)."""
    layer = p.spec.layers[0]
    chosen = {"attention": [layer.attention], "ffn": [layer.ffn], "layer": [layer.attention, layer.ffn]}[p.block]
    return [b for b in chosen if b.kind != "none"]


def check(p: Plan, tp: int) -> None:
    """Refuse what has no tensor-parallel form here (one line naming --tp), before any rank starts: the split is
    tried on the meta device, which allocates nothing."""
    if p.spec.parallel and p.block == "layer":
        raise InputError(
            "--tp: a parallel layer (attention and FFN reading one input, one all-reduce) is not built here; "
            "time --block attention or ffn"
        )
    with torch.device("meta"):
        module = build_block(p, torch.device("meta"), "fp32")
        try:
            shard(module, p, 0, tp)
        except NotImplementedError as exc:
            raise InputError(f"--tp {tp}: {exc}") from None


def shard(module: torch.nn.Module, p: Plan, rank: int, tp: int) -> torch.nn.Module:
    """``module`` (bench.build_block's) cut to ``rank``'s share, each sublayer's output all-reduced."""
    if p.block != "layer":
        return Reduced(sublayers(p)[0].tensor_parallel(module, rank, tp))
    for name, sub, block in zip(module.names, module.sublayers(), (p.spec.layers[0].attention, p.spec.layers[0].ffn)):
        if block.kind != "none":
            setattr(module, name, Reduced(block.tensor_parallel(sub, rank, tp)))
    return module


class Reduced(torch.nn.Module):
    """A sublayer's share, its output summed over the ranks (an all-reduce). Timed, a barrier comes first, so that
    the all-reduce's time (``seconds``) is the collective's own and the time a rank waits for the others to finish
    their share (``waited``, the barrier's) is kept apart."""

    def __init__(self, inner: torch.nn.Module):
        super().__init__()
        self.inner = inner
        self.seconds, self.waited, self.timed = 0.0, 0.0, False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import torch.distributed as dist

        y = self.inner(x)
        if x.is_meta:
            return y
        if self.timed:
            ranks.sync(y.device)
            t0 = time.perf_counter()
            ranks.barrier(y.device)
            t1 = time.perf_counter()
        dist.all_reduce(y)
        if self.timed:
            ranks.sync(y.device)
            self.waited += t1 - t0
            self.seconds += time.perf_counter() - t1
        return y


def need_bytes(run: ParallelRun) -> int:
    """What a rank holds at most: the whole block (built, then cut) and its share, with a forward's buffers."""
    p = run.plan
    whole = required_bytes(p, run.tokens, run.seq_len, run.dtype, False, 0)
    return whole + p.params * BYTES[run.dtype] // run.tp


def measure(run: ParallelRun, kind: str) -> dict[str, Any] | None:
    """The timings and the check against the whole module: rank 0's record body (None on another torchrun rank)."""
    return ranks.run(_measure, run, run.tp, kind)


def _measure(r: ranks.Rank, run: ParallelRun) -> dict[str, Any]:
    p, device = run.plan, r.device
    torch.manual_seed(0)  # the same whole module on every rank
    module = build_block(p, device, run.dtype)
    gen = torch.Generator(device="cpu").manual_seed(1)
    x = torch.randn(run.tokens // run.seq_len, run.seq_len, p.spec.d_model, generator=gen).to(device, DTYPES[run.dtype])
    with torch.no_grad():
        whole = module(x) if r.rank == 0 else None
        module = shard(module, p, r.rank, run.tp)
        reduced = [m for m in module.modules() if isinstance(m, Reduced)]
        out = module(x)
        for _ in range(run.warmup):
            module(x)
        for m in reduced:
            m.timed = True
        totals, comms, waits = [], [], []
        for _ in range(run.repeats):
            for m in reduced:
                m.seconds, m.waited = 0.0, 0.0
            ranks.barrier(device)
            t0 = time.perf_counter()
            module(x)
            ranks.sync(device)
            totals.append(time.perf_counter() - t0)
            comms.append(sum(m.seconds for m in reduced))
            waits.append(sum(m.waited for m in reduced))
    computes = [t - c - w for t, c, w in zip(totals, comms, waits)]
    answer: dict[str, Any] = {
        "total_s": ranks.slowest(statistics.median(totals), device),
        "compute_s": ranks.slowest(statistics.median(computes), device),
        "comm_s": ranks.slowest(statistics.median(comms), device),
        "wait_s": ranks.slowest(statistics.median(waits), device),
        "all_reduces": len(reduced),
    }
    if whole is not None:
        err = (out.float() - whole.float()).abs().max().item()
        answer |= {"max_abs_error": err, "max_abs_output": whole.float().abs().max().item()}
    return answer


def predicted_comm_s(run: ParallelRun, link: Link | None) -> float | None:
    """What the plans charge for the run's all-reduces over ``link``: each sublayer's all-reduce of the forward's
    tokens × d_model activations, in the timed dtype (links.allreduce_s: 2(n − 1)/n of the bytes at the ring's bus
    bandwidth, plus the latency of each call); None without a link figure."""
    if link is None or not link.gbs:
        return None
    calls = len(sublayers(run.plan))
    if run.plan.block == "layer":
        calls = collectives(run.plan.spec, run.plan.spec.layers[0])
    nbytes = run.tokens * run.plan.spec.d_model * BYTES[run.dtype]
    return calls * allreduce_s(nbytes, run.tp, link)
