"""``bench`` across ranks: collectives (``--collective``) and a tensor-parallel block (``--tp``), each run over
torch.distributed (ranks spawned here, or this process one rank under torchrun). Called by ``commands.bench``."""

from __future__ import annotations

from typing import Any

from ..errors import InputError, MissingDependency
from . import options as o
from .results import Collectives, ParallelBench


def _torch() -> Any:
    try:
        from ..analysis import ranks
    except ImportError as exc:
        raise MissingDependency(f"bench needs torch ({exc}); install it: pip install torch==2.13.0") from None
    return ranks


def collectives(collective: str, gpus: int | None, device: str, sizes: str | None, repeats: int, warmup: int) -> Collectives:
    """Each collective named (comma-separated) timed over ``gpus`` ranks at every size, with its fit."""
    o.text("collective", collective)
    o.text("sizes", sizes)
    ranks = _torch()
    from ..analysis import collectives as timing

    names = tuple(n.strip() for n in collective.split(",") if n.strip())
    if not names:
        raise InputError(
            "--collective is empty: name one of all_reduce, all_gather, reduce_scatter, all_to_all, send_recv", field="collective"
        )
    timing.check(names)
    kind = ranks.device_kind(device)
    world = ranks.world_size(gpus, kind)
    chosen = timing.parse_sizes(sizes) if sizes is not None else timing.default_sizes(kind)
    if len(set(chosen)) < 2:
        raise InputError(f"--sizes {sizes}: two message sizes or more, to fit a latency and a bandwidth", field="sizes")
    _fits(kind, world, 3 * max(chosen), "--sizes: the largest message")
    run = timing.CollectiveRun(names, chosen, repeats, warmup)
    return Collectives(timing.measure(run, world, kind))


def _fits(kind: str, world: int, per_rank: int, what: str) -> None:
    """Refuse a run whose ranks would not fit in the free memory (a CPU's ranks share the machine's)."""
    import torch

    from ..analysis.machine import free_bytes

    if kind != "cpu":
        return  # one device a rank: each rank's own memory, checked by the backend
    need, free = world * per_rank, free_bytes(torch.device("cpu"))
    if need > 0.9 * free:
        raise InputError(f"{what} needs about {need / 2**30:.1f} GiB over {world} ranks but the CPU has {free / 2**30:.1f} GiB free")


# A tensor-parallel run on a CPU: each rank builds the whole block before keeping its share, and gloo copies
# through memory, so the default forward is short (a Llama 3 8B layer over 2 ranks in seconds).
CPU_TP_TOKENS = 128


def parallel(m: Any, block: str, split: tuple[str, int], timing: dict[str, Any]) -> ParallelBench:
    """``block`` of the model ``m`` split over ranks and timed: ``split`` ("tensor", tp) or ("expert", ep);
    ``timing``: device, dtype, tokens, seq_len, layer, repeats, warmup, links."""
    ranks = _torch()
    from ..analysis import bench, hardware
    from ..analysis import tensor_parallel as parallel
    from ..analysis.links import device_link
    from ..analysis.plan import Device, Placement

    mode, n = split
    flag = {"tensor": "--tp", "expert": "--ep"}[mode]
    kind = ranks.device_kind(timing["device"])
    world = ranks.world_size(n, kind, flag)
    stack, label = m.stack, m.label
    tokens = timing["tokens"] or (CPU_TP_TOKENS if kind == "cpu" else 2048)
    seq = timing["seq_len"] or min(tokens, m.context_length)
    stack.check_seq_len(seq, label)
    if tokens % seq:
        raise InputError(f"--tokens {tokens} is not a whole number of sequences of --seq-len {seq}")
    p = bench.plan(stack, block, seq, timing["layer"])
    run = parallel.ParallelRun(p, world, tokens, seq, timing["dtype"], timing["repeats"], timing["warmup"], mode)
    parallel.check(run)
    bench.check_dtype(bench.pick_device(kind), run.dtype)
    _fits(kind, world, parallel.need_bytes(run), f"the {block} split over {world} ranks")
    links = None
    if timing["links"] is not None:
        from ..analysis.linkfile import read

        links = read(timing["links"])
    import torch

    hw = hardware.lookup(torch.cuda.get_device_name()) if kind == "cuda" else None
    placement = Placement(gpus=world, tp=world) if mode == "tensor" else Placement(gpus=world, tp=1, ep=world)
    link = device_link(Device(hw, links=links), placement) if hw or links else None
    body = parallel.measure(run, kind)
    if body is None:
        return ParallelBench(None)
    measured = link is not None and (link.measured_over if mode == "tensor" else link.a2a_over)
    where = (
        f"measured in {links.path}"
        if links and measured
        else f"{hw.key}'s table link"
        if hw and link and link.gbs
        else "no link figure for this device (--links gives one)"
    )
    flops = p.flops_per_token * tokens
    body = {
        "model": label,
        "block": block,
        "variant": p.variant,
        "parallel": mode,
        "ranks": world,
        "device": "cpu" if kind == "cpu" else f"cuda ({torch.cuda.get_device_name()})",
        "backend": "gloo" if kind == "cpu" else "nccl",
        "dtype": run.dtype,
        "tokens": tokens,
        "seq_len": seq,
        "repeats": run.repeats,
        "warmup": run.warmup,
        "flops": flops,
        "compute_tflops": flops / (world if mode == "tensor" else 1) / body["compute_s"] / 1e12,
        "comm_bytes": parallel.moved_bytes(run),
        **body,
        "predicted_comm_s": parallel.predicted_comm_s(run, link),
        "link": where,
        "links": links.path if links else None,
    }
    return ParallelBench(body)
