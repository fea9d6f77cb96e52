"""Timing collectives across ranks (``bench --collective``), as nccl-tests does: per message size, the time of
one call (the mean of ``repeats`` back-to-back calls after ``warmup`` untimed ones, the slowest rank's), the
algorithm bandwidth (bytes / time) and the bus bandwidth (times nccl-tests' factor, doc/PERFORMANCE.md); then the
latency and bandwidth fitted to the times (linkfile.fit), which ``--out`` writes as a links file for the plans."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

from ..errors import InputError
from . import ranks
from .linkfile import COLLECTIVES, bus_factor, fit

ELEMENT = 4  # bytes: fp32 messages, which every backend reduces
GPU_LARGEST = 1 << 30  # 8 B to 1 GiB by powers of two, as nccl-tests' -b 8 -e 1G -f 2
CPU_LARGEST = 64 << 20  # on a CPU to 64 MiB: gloo copies through memory, and the ranks share the machine's


def default_sizes(kind: str) -> tuple[int, ...]:
    largest = GPU_LARGEST if kind == "cuda" else CPU_LARGEST
    return tuple(1 << k for k in range(3, largest.bit_length()))


def parse_sizes(text: str) -> tuple[int, ...]:
    """``--sizes``: sizes in bytes, comma-separated (4096,1M), or a range of powers of two (8:1G); K, M and G are
    KiB, MiB and GiB."""
    import re

    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}

    def one(part: str) -> int:
        m = re.fullmatch(r"(\d{1,12})\s*([KMG]?)(?:I?B)?", part.strip().upper())
        if not m or not 1 <= int(m[1]) * units[m[2]] <= 1 << 34:
            raise InputError(
                f"--sizes {text[:60]}: {part.strip()[:30]!r} is not a size in bytes from 1 to 16G (8, 64K, 1M, 1G)", field="sizes"
            )
        return int(m[1]) * units[m[2]]

    if ":" in text:
        low, _, high = text.partition(":")
        a, b = one(low), one(high)
        if a > b:
            raise InputError(f"--sizes {text[:60]}: the first size is above the last", field="sizes")
        out, size = [], a
        while size <= b:
            out.append(size)
            size *= 2
        return tuple(out)
    return tuple(sorted({one(p) for p in text.split(",") if p.strip()}))


@dataclass(frozen=True)
class CollectiveRun:
    """What to time: the collectives, the message sizes in bytes, the calls timed and untimed a size."""

    collectives: tuple[str, ...]
    sizes: tuple[int, ...]
    repeats: int = 20
    warmup: int = 5


def check(names: tuple[str, ...]) -> None:
    for name in names:
        if name not in COLLECTIVES:
            raise InputError(
                f"--collective {name[:60]}: choose from {', '.join(COLLECTIVES)} (several: comma-separated)", field="collective"
            )


def measure(run: CollectiveRun, world: int, kind: str) -> dict[str, Any] | None:
    """Every collective of ``run`` over ``world`` ranks: the record's body (rank 0), or None (another torchrun rank)."""
    return ranks.run(_measure, run, world, kind)


def message(name: str, size: int, n: int, rank: int, device: torch.device) -> tuple[Callable[[], object], int] | None:
    """One call of ``name`` on a message of about ``size`` bytes, and the bytes it moves as nccl-tests counts
    them: all-reduce its buffer; all-gather its output (n inputs); reduce-scatter its input (n outputs);
    all-to-all each rank's send buffer; send/receive the message each rank sends to the next and receives from
    the one before. Elements are whole, and split evenly over the ranks (None: too small to split)."""
    import torch.distributed as dist

    count = size // ELEMENT
    if name in ("all_gather", "reduce_scatter", "all_to_all"):
        count = count // n * n
    if count == 0:
        return None
    x = torch.ones(count, device=device)
    if name == "all_reduce":
        return (lambda: dist.all_reduce(x)), count * ELEMENT
    if name == "all_gather":
        part = torch.ones(count // n, device=device)
        gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        return (lambda: gather(x, part)), count * ELEMENT
    if name == "reduce_scatter":
        part = torch.empty(count // n, device=device)
        scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
        return (lambda: scatter(part, x)), count * ELEMENT
    if name == "all_to_all":
        y = torch.empty_like(x)
        return (lambda: dist.all_to_all_single(y, x)), count * ELEMENT
    y = torch.empty_like(x)

    def send_recv():
        ops = [dist.P2POp(dist.isend, x, (rank + 1) % n), dist.P2POp(dist.irecv, y, (rank - 1) % n)]
        for request in dist.batch_isend_irecv(ops):
            request.wait()

    return send_recv, count * ELEMENT


def _measure(r: ranks.Rank, run: CollectiveRun) -> dict[str, Any]:
    out = []
    for name in run.collectives:
        rows: list[dict[str, Any]] = []
        for size in run.sizes:
            made = message(name, size, r.world, r.rank, r.device)
            if made is None or any(row["bytes"] == made[1] for row in rows):
                continue
            call, nbytes = made
            for _ in range(run.warmup):
                call()
            ranks.barrier(r.device)
            t0 = time.perf_counter()
            for _ in range(run.repeats):
                call()
            ranks.sync(r.device)
            seconds = ranks.slowest((time.perf_counter() - t0) / run.repeats, r.device)
            rows.append(row(name, r.world, nbytes, seconds))
            del call, made
        out.append(entry(name, r.world, rows))
    name = torch.cuda.get_device_name(r.device) if r.device.type == "cuda" else "cpu"
    return {
        "device": f"cuda ({name})" if r.device.type == "cuda" else "cpu",
        "backend": "nccl" if r.device.type == "cuda" else "gloo",
        "ranks": r.world,
        "nodes": r.nodes,
        "dtype": "fp32",
        "repeats": run.repeats,
        "warmup": run.warmup,
        "collectives": out,
    }


def row(name: str, n: int, nbytes: int, seconds: float) -> dict[str, Any]:
    """One size: its time, algorithm bandwidth (bytes / time) and bus bandwidth (nccl-tests' factor × algbw)."""
    algbw = nbytes / seconds / 1e9
    return {"bytes": nbytes, "time_s": seconds, "algbw_gbs": algbw, "busbw_gbs": algbw * bus_factor(name, n)}


def entry(name: str, n: int, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A collective's sizes and its fit over all of them."""
    fitted = fit(name, n, [r["bytes"] for r in rows], [r["time_s"] for r in rows])
    return {"collective": name, "ranks": n, "bus_factor": bus_factor(name, n), "sizes": rows, "fit": fitted.record()}
