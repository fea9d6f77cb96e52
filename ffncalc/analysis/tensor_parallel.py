"""A block or layer timed split across ranks (``bench MODEL --tp N`` or ``--ep N``). Tensor parallel, Megatron-style
(Shoeybi et al. 2019 §3): each rank builds the whole reference module from the same seed, keeps its share
(``Block.tensor_parallel``: q, k, v and up, gate split by their outputs, o and down by their inputs) and ends each
sublayer with an all-reduce of its output. Expert parallel (DeepSeek-V3 §3.4): a mixture's routed experts split over
the ranks, each rank routing its own tokens, dispatching each token-slot to its expert's rank and combining the
outputs back by all-to-alls (``Block.expert_parallel``). A forward's time is split into the collectives', the wait
before each for the slowest rank (a barrier), and the rest (compute); rank 0 also runs the whole module on its input,
and the split module's output is held to it. The communication is set beside what the plans charge for it
(exchange.stage_comm_s's terms over the table's link, or a links file's)."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

from ..errors import InputError
from . import ranks
from .bench import BYTES, DTYPES, Plan, build_block, required_bytes
from .links import Link, allreduce_s, alltoall_s, collectives


@dataclass(frozen=True)
class ParallelRun:
    """One timing across ranks: the planned block (bench.plan) split over ``devices`` ranks, ``mode`` "tensor"
    (tensor parallel) or "expert" (a mixture's routed experts shared, each rank its own tokens), ``tokens`` a
    forward (a rank's) in sequences of ``seq_len``, in ``dtype``, ``repeats`` timed forwards after ``warmup``."""

    plan: Plan
    devices: int
    tokens: int
    seq_len: int
    dtype: str
    repeats: int
    warmup: int
    mode: str = "tensor"

    @property
    def flag(self) -> str:
        return {"tensor": "--tp", "expert": "--ep"}[self.mode]


def sublayers(p: Plan) -> list[Any]:
    """The blocks the timed module holds (a ``none`` block is no sublayer: nothing to split, no all-reduce)."""
    layer = p.spec.layers[0]
    chosen = {"attention": [layer.attention], "ffn": [layer.ffn], "layer": [layer.attention, layer.ffn]}[p.block]
    return [b for b in chosen if b.kind != "none"]


def check(run: ParallelRun) -> None:
    """Refuse what has no such split here (one line naming --tp or --ep), before any rank starts: the split is
    tried on the meta device, which allocates nothing."""
    p, n, flag = run.plan, run.devices, run.flag
    if run.mode == "tensor" and p.spec.parallel and p.block == "layer":
        raise InputError(
            "--tp: a parallel layer (attention and FFN reading one input, one all-reduce) is not built here; "
            "time --block attention or ffn"
        )
    if run.mode == "expert" and p.block == "attention":
        raise InputError(f"--ep {n}: attention has no experts; time --block ffn or layer")
    with torch.device("meta"):
        module = build_block(p, torch.device("meta"), "fp32")
        try:
            shard(module, run, 0, Clock(torch.device("meta")))
        except NotImplementedError as exc:
            raise InputError(f"{flag} {n}: {exc}") from None


class Clock:
    """The time a forward's collectives take (``seconds``, ``calls``) and, apart, the wait before each for the
    slowest rank (a barrier, ``waited``); nothing is timed until ``timed``."""

    def __init__(self, device: torch.device):
        self.device, self.timed = device, False
        self.seconds, self.waited, self.calls = 0.0, 0.0, 0

    def reset(self) -> None:
        self.seconds, self.waited, self.calls = 0.0, 0.0, 0

    def run(self, collective: Callable[[], object]) -> None:
        if not self.timed:
            collective()
            return
        ranks.sync(self.device)
        t0 = time.perf_counter()
        ranks.barrier(self.device)
        t1 = time.perf_counter()
        collective()
        ranks.sync(self.device)
        self.waited += t1 - t0
        self.seconds += time.perf_counter() - t1
        self.calls += 1


def shard(module: torch.nn.Module, run: ParallelRun, rank: int, clock: Clock) -> torch.nn.Module:
    """``module`` (bench.build_block's) cut to ``rank``'s share: tensor parallel, each sublayer's output all-reduced;
    expert parallel, the mixture's routed experts split and its token-slots exchanged by all-to-alls."""
    p, n = run.plan, run.devices
    if run.mode == "expert":
        ffn = p.spec.layers[0].ffn
        if p.block == "ffn":
            return ffn.expert_parallel(module, rank, n, Exchange(clock))
        setattr(module, module.names[1], ffn.expert_parallel(module.sublayers()[1], rank, n, Exchange(clock)))
        return module
    if p.block != "layer":
        return Reduced(sublayers(p)[0].tensor_parallel(module, rank, n), clock)
    for name, sub, block in zip(module.names, module.sublayers(), (p.spec.layers[0].attention, p.spec.layers[0].ffn)):
        if block.kind != "none":
            setattr(module, name, Reduced(block.tensor_parallel(sub, rank, n), clock))
    return module


class Reduced(torch.nn.Module):
    """A sublayer's share, its output summed over the ranks (an all-reduce, timed by ``clock``)."""

    def __init__(self, inner: torch.nn.Module, clock: Clock):
        super().__init__()
        self.inner, self.clock = inner, clock

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import torch.distributed as dist

        y = self.inner(x)
        if not x.is_meta:
            self.clock.run(lambda: dist.all_reduce(y))
        return y


class Exchange:
    """An all-to-all (timed by ``clock``): ``tensor``'s rows, ``send[i]`` of them to rank i, and ``receive[i]``
    rows from rank i in return."""

    def __init__(self, clock: Clock):
        self.clock = clock

    def __call__(self, tensor: torch.Tensor, send: list[int], receive: list[int]) -> torch.Tensor:
        import torch.distributed as dist

        out = tensor.new_empty((sum(receive), *tensor.shape[1:]))
        source = tensor.contiguous()
        self.clock.run(lambda: dist.all_to_all_single(out, source, receive, send))
        return out


def need_bytes(run: ParallelRun) -> int:
    """What a rank holds at most: the whole block (built, then cut) and its share, with a forward's buffers."""
    p = run.plan
    whole = required_bytes(p, run.tokens, run.seq_len, run.dtype, False, 0)
    return whole + p.params * BYTES[run.dtype] // run.devices


def measure(run: ParallelRun, kind: str) -> dict[str, Any] | None:
    """The timings and the check against the whole module: rank 0's record body (None on another torchrun rank)."""
    return ranks.run(_measure, run, run.devices, kind)


def _measure(r: ranks.Rank, run: ParallelRun) -> dict[str, Any]:
    p, device = run.plan, r.device
    torch.manual_seed(0)  # the same whole module on every rank
    module = build_block(p, device, run.dtype)
    # tensor parallel: one input, split work; expert parallel: each rank its own tokens
    gen = torch.Generator(device="cpu").manual_seed(1 + (r.rank if run.mode == "expert" else 0))
    x = torch.randn(run.tokens // run.seq_len, run.seq_len, p.spec.d_model, generator=gen).to(device, DTYPES[run.dtype])
    clock = Clock(device)
    with torch.no_grad():
        whole = module(x) if r.rank == 0 else None
        module = shard(module, run, r.rank, clock)
        out = module(x)
        for _ in range(run.warmup):
            module(x)
        clock.timed = True
        totals, comms, waits = [], [], []
        for _ in range(run.repeats):
            clock.reset()
            ranks.barrier(device)
            t0 = time.perf_counter()
            module(x)
            ranks.sync(device)
            totals.append(time.perf_counter() - t0)
            comms.append(clock.seconds)
            waits.append(clock.waited)
    computes = [t - c - w for t, c, w in zip(totals, comms, waits)]
    answer: dict[str, Any] = {
        "total_s": ranks.slowest(statistics.median(totals), device),
        "compute_s": ranks.slowest(statistics.median(computes), device),
        "comm_s": ranks.slowest(statistics.median(comms), device),
        "wait_s": ranks.slowest(statistics.median(waits), device),
        "collectives": clock.calls,
    }
    if whole is not None:
        err, size = (out.float() - whole.float()).abs().max().item(), whole.float().abs().max().item()
        tolerance = TOLERANCE[run.dtype]
        answer |= {"max_abs_error": err, "max_abs_output": size, "tolerance": tolerance, "matches": err <= tolerance * size}
    return answer


# The largest difference from the whole module's output a split one may show, relative to the largest output: its
# partial sums are added in another order, and in bf16 or fp16 each rank's share is rounded before the sum (about
# 2^-8 and 2^-11 relative, times a few); fp32 rounding is far below its bound.
TOLERANCE = {"fp32": 1e-4, "bf16": 5e-2, "fp16": 1e-2}


def moved_bytes(run: ParallelRun) -> int:
    """The bytes a rank hands to one collective: tensor parallel, an all-reduce of the forward's tokens × d_model
    activations; expert parallel, a dispatch (or combine) of its tokens' k slots × d_model; in the dtype timed."""
    p = run.plan
    k = p.spec.layers[0].ffn.active_experts() if run.mode == "expert" else 1
    return run.tokens * k * p.spec.d_model * BYTES[run.dtype]


def predicted_comm_s(run: ParallelRun, link: Link | None) -> float | None:
    """What the plans charge for the run's collectives over ``link`` (exchange.stage_comm_s's terms): tensor parallel,
    each sublayer's all-reduce (links.allreduce_s: 2(n − 1)/n of the bytes at the ring's bus bandwidth, a latency a
    call); expert parallel, the dispatch and the combine, two all-to-alls (links.alltoall_s: (n − 1)/n of the bytes at
    the all-to-all's bus bandwidth, a latency a call); None without a link figure."""
    if link is None or not (link.a2a(run.devices) if run.mode == "expert" else link.gbs):
        return None
    if run.mode == "expert":
        return 2 * alltoall_s(moved_bytes(run), run.devices, link)
    calls = len(sublayers(run.plan))
    if run.plan.block == "layer":
        calls = collectives(run.plan.spec, run.plan.spec.layers[0])
    return calls * allreduce_s(moved_bytes(run), run.devices, link)
