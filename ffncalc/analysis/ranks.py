"""Running one function on every rank of a process group (torch.distributed): spawned here, one process a rank
(torch.multiprocessing, meeting at a file in a scratch folder), or, under ``torchrun``, this process being one rank of a job that spans
nodes (its RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT). NCCL (RCCL on ROCm)
joins GPUs, gloo CPUs. Rank 0's answer comes back; every run is bounded in time."""

from __future__ import annotations

import os
import pickle
import tempfile
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable

import torch

from ..errors import InputError, MeasurementError

TORCHRUN = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
DEFAULT_TIMEOUT_S = 900.0  # one run, all ranks together; a rank that hangs fails the run rather than the machine


@dataclass(frozen=True)
class Rank:
    """Where a function runs: its rank of ``world``, its node's ``local`` rank, the torch device, the nodes."""

    rank: int
    world: int
    local: int
    device: torch.device
    nodes: int


def torchrun() -> bool:
    """Whether this process is one rank of a job torchrun (or any launcher setting its variables) started."""
    return all(k in os.environ for k in TORCHRUN)


def device_kind(name: str) -> str:
    """``auto``: cuda where there is a GPU, else the CPU (gloo); MPS has no collectives."""
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "mps":
        raise InputError("--device mps: torch.distributed has no backend for Apple GPUs; --device cpu runs gloo")
    if name == "cuda" and not torch.cuda.is_available():
        raise InputError("--device cuda: no CUDA device here (--device cpu runs gloo over the loopback)")
    return name


def world_size(gpus: int | None, kind: str, flag: str = "--gpus") -> int:
    """The ranks: torchrun's WORLD_SIZE under torchrun, else ``gpus`` (``flag``; default: every GPU here, or 2 CPU
    ranks)."""
    if torchrun():
        world = int(os.environ["WORLD_SIZE"])
        if gpus is not None and gpus != world:
            raise InputError(f"{flag} {gpus}: torchrun started {world} ranks (WORLD_SIZE); give {flag} {world} or leave it out")
        return world
    n = gpus if gpus is not None else (torch.cuda.device_count() if kind == "cuda" else 2)
    if n < 2:
        raise InputError(f"{flag} {n}: a run across devices needs 2 ranks or more")
    if kind == "cuda" and n > torch.cuda.device_count():
        raise InputError(
            f"{flag} {n}: this machine has {torch.cuda.device_count()} CUDA devices; more ranks than that run under "
            "torchrun, across nodes"
        )
    return n


def run(fn: Callable[[Rank, Any], Any], payload: Any, world: int, kind: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> Any:
    """``fn(rank, payload)`` on every rank; rank 0's answer (None on the other ranks under torchrun)."""
    if torchrun():
        rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
        nodes = max(1, world // int(os.environ.get("LOCAL_WORLD_SIZE", world)))
        return _rank(fn, payload, rank, world, local, nodes, kind, "env://", timeout_s)
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory(prefix="ffncalc-ranks-") as folder:
        out = Path(folder) / "rank0.pkl"
        init = f"file://{Path(folder) / 'rendezvous'}"  # a file store: no port to collide with another run's
        context = mp.start_processes(
            _spawned, args=(fn, payload, world, kind, init, timeout_s, str(out)), nprocs=world, join=False, start_method="spawn"
        )
        deadline = time.monotonic() + timeout_s
        try:
            while not context.join(timeout=0.5):
                if time.monotonic() > deadline:
                    raise MeasurementError(f"the {world} ranks did not finish within {timeout_s:g} s")
        except mp.ProcessRaisedException as exc:
            lines = [line for line in str(exc).strip().splitlines() if line.strip()]
            raise MeasurementError(f"a rank failed: {_cause(folder) or (lines[-1] if lines else exc)}") from None
        except mp.ProcessExitedException as exc:
            raise MeasurementError(
                f"a rank exited ({exc})" + (f"; a rank failed: {cause}" if (cause := _cause(folder)) else "")
            ) from None
        finally:
            for p in context.processes:
                if p.is_alive():
                    p.kill()
        return pickle.loads(out.read_bytes())


def _spawned(index: int, fn, payload, world: int, kind: str, init: str, timeout_s: float, out: str) -> None:
    try:
        answer = _rank(fn, payload, index, world, index, 1, kind, init, timeout_s)
    except Exception as exc:
        # what failed first: a rank's own error, not the lost connections of the ranks it leaves behind
        import torch.distributed as dist

        text = (str(exc).strip().splitlines() or [""])[0]
        lost = isinstance(exc, getattr(dist, "DistError", ())) or "closed by peer" in text or "remote worker" in text
        Path(out).with_name(f"error-{int(lost)}-{index:05d}").write_text(f"{type(exc).__name__}: {text}"[:500])
        raise
    if index == 0:
        Path(out).write_bytes(pickle.dumps(answer))


def _cause(folder: str) -> str | None:
    """The first rank's own error where one was written (a lost connection only where there is no other)."""
    found = sorted(Path(folder).glob("error-*"))
    return found[0].read_text() if found else None


def _rank(fn, payload, rank: int, world: int, local: int, nodes: int, kind: str, init: str, timeout_s: float) -> Any:
    import torch.distributed as dist

    if kind == "cuda":
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
    else:
        device = torch.device("cpu")
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // max(1, world // nodes)))  # the node's cores shared
    backend = "nccl" if kind == "cuda" else "gloo"  # NCCL's API is RCCL's on ROCm builds of torch
    dist.init_process_group(backend, init_method=init, rank=rank, world_size=world, timeout=timedelta(seconds=timeout_s))
    try:
        answer = fn(Rank(rank, world, local, device, nodes), payload)
    finally:
        dist.destroy_process_group()
    return answer if rank == 0 else None


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def barrier(device: torch.device) -> None:
    """Every rank here before any goes on: a one-element all-reduce (a barrier NCCL needs no device ids for)."""
    import torch.distributed as dist

    dist.all_reduce(torch.zeros(1, device=device))
    sync(device)


def slowest(seconds: float, device: torch.device) -> float:
    """The largest of every rank's ``seconds``: a collective ends when its last rank does (nccl-tests reports the
    same)."""
    import torch.distributed as dist

    t = torch.tensor([seconds], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())
