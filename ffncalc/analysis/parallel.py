"""Parallel layouts: how a run splits over its devices, each degree checked against what it splits.

Data parallelism (dp) replicates the model; tensor parallelism (tp) splits every matrix and every attention
head group (Shoeybi et al. 2019), so it must divide the query heads and the key/value heads; pipeline
parallelism (pp) splits the layers into stages (Narayanan et al. 2021); context parallelism (cp) splits the
sequence into 2·cp chunks, two to a device, so causal work balances (Megatron-Core context parallelism); expert
parallelism (ep) places the routed experts of a layer on ep devices inside the data-parallel group (Lepikhin et
al. 2020, GShard), so it must divide the experts and the data-parallel degree. The devices are
dp × tp × pp × cp. Every impossible layout is an ``InputError`` naming its option.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import InputError
from ..model.stack import Model
from .plan import Layout


def experts(spec: Model) -> set[int]:
    """The routed-expert counts of the model's mixture layers (empty for a dense model)."""
    return {b.routed_experts() for b in spec.blocks() if b.routed_experts()}


def check_tp(spec: Model, tp: int, option: str = "--tp", replicate_kv: bool = False) -> None:
    """Every layer's heads split evenly over tp, and its KV heads: each device needs whole ones; with
    ``replicate_kv`` (serving, as vLLM replicates them) tp may instead be a multiple of the KV heads."""
    for b in spec.blocks():
        heads = b.head_count()
        if heads is None:
            continue
        kv = b.kv_head_count() or heads
        if heads % tp:
            raise InputError(f"{option} {tp} does not divide the {heads} attention heads")
        if kv % tp == 0:
            continue
        if not replicate_kv:
            raise InputError(f"{option} {tp} does not divide the {kv} KV heads (each device needs whole KV heads)")
        if tp % kv:
            raise InputError(f"{option} {tp} neither divides the {kv} KV heads nor is a multiple of them")


def check_ep(spec: Model, ep: int, option: str = "--ep") -> None:
    if ep == 1:
        return
    counts = experts(spec)
    if not counts:
        raise InputError(f"{option} {ep}: the model has no routed experts to split")
    for n in sorted(counts):
        if n % ep:
            raise InputError(f"{option} {ep} does not divide the {n} routed experts")


def resolve(spec: Model, layout: Layout, seq_len: int) -> Layout:
    """The layout of ``gpus`` devices: dp is what the other degrees leave (--gpus alone is data parallelism);
    a given --dp must agree."""
    gpus, dp, tp, pp, cp, ep = layout.gpus, layout.dp, layout.tp, layout.pp, layout.cp, layout.ep
    for name, v in (("--tp", tp), ("--pp", pp), ("--cp", cp), ("--ep", ep)):
        if v < 1:
            raise InputError(f"{name} {v}: must be at least 1")
    model_split = tp * pp * cp
    if gpus is None:
        gpus = (dp or 1) * model_split
    if gpus % model_split:
        raise InputError(f"--gpus {gpus} is not a multiple of --tp × --pp × --cp = {model_split}")
    if dp is None:
        dp = gpus // model_split
    elif dp * model_split != gpus:
        raise InputError(f"--dp {dp} × --tp {tp} × --pp {pp} × --cp {cp} = {dp * model_split} differs from --gpus {gpus}")
    check_tp(spec, tp)
    unsplit = next((part.unsplit for part in spec.parts if part.unsplit), None)
    if unsplit and (pp > 1 or cp > 1):
        raise InputError(f"--pp {pp} --cp {cp}: {unsplit}; plan it with --tp and data parallelism")
    if pp > spec.n_layers:
        raise InputError(f"--pp {pp} exceeds the {spec.n_layers} layers (each stage needs at least one)")
    if cp > 1 and seq_len % (2 * cp):
        raise InputError(f"--cp {cp}: the sequence of {seq_len} tokens does not split into 2 × {cp} equal chunks")
    check_ep(spec, ep)
    if dp % ep:
        raise InputError(f"--ep {ep} does not divide the data-parallel degree {dp} (experts split inside it)")
    return replace(layout, gpus=gpus, dp=dp)


def stages(n_layers: int, pp: int, ends: bool = False) -> list[tuple[int, int]]:
    """Layer spans of the pp stages: as even as can be, the earlier stages one layer more when uneven. ``ends``: the
    embedding and the head each take a layer's slot, the first stage's and the last's (Megatron-LM's
    --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split; Megatron-DeepSpeed's
    --pp-partition-method 'type:transformer|embedding', which BLOOM trained with)."""
    slots = n_layers + 2 * ends
    q, r = divmod(slots, pp)
    out, first = [], 0
    for s in range(pp):
        stop = first + q + (s < r)
        out.append((min(max(first - ends, 0), n_layers), min(max(stop - ends, 0), n_layers)))
        first = stop
    return out


def check_stages(n_layers: int, lay: Layout) -> None:
    """A pipeline's split checked: a layer for each interleaved chunk; with the ends as layers, one chunk a device
    and a layer on every stage."""
    if lay.virtual_stages > 1 and lay.pp * lay.virtual_stages > n_layers:
        raise InputError(f"--virtual-stages {lay.virtual_stages} × --pp {lay.pp} exceeds the {n_layers} layers (each chunk needs one)")
    if lay.ends_as_layers and lay.virtual_stages > 1:
        raise InputError("--ends-as-layers splits one chunk a device: leave out --virtual-stages")
    if lay.ends_as_layers and any(a == b for a, b in stages(n_layers, lay.pp, True)):
        raise InputError(f"--ends-as-layers with --pp {lay.pp} leaves a stage of the {n_layers} layers without one")


def model_splits(stages: int, devices: int | None = None) -> list[tuple[int, int]]:
    """(tp, pp) layouts of one model copy, the fewest devices first and, among as many, the larger tp (it splits
    activations as well as weights): tp a power of two up to a node of 8, pp up to ``stages``; with ``devices``,
    only the splits that divide them."""
    from .hardware import NODE

    shapes = [(tp, pp) for tp in (1, 2, 4, NODE) for pp in range(1, stages + 1) if devices is None or devices % (tp * pp) == 0]
    return sorted(shapes, key=lambda s: (s[0] * s[1], -s[0]))
