"""What a pipeline stage's devices exchange in a forward: the all-reduces over tp, the hand-off to the next stage,
and with experts shared across copies the expert-parallel dispatch and combine, a decode step's (one message an
expert) and a prefill's (once a node, forwarded within it). Times over the links of links.py."""

from __future__ import annotations

from dataclasses import dataclass
from math import comb
from typing import TYPE_CHECKING

from ..errors import InputError
from ..model.stack import Model
from .figures import Figure
from .links import ACTIVATION_BYTES, Link, allreduce_s, alltoall_s, collectives, forwarded_s, send_s
from .plan import Placement

if TYPE_CHECKING:
    from .serving import Stage


@dataclass(frozen=True)
class Traffic:
    """How a stage's exchanges run: ``forwards`` calls of each (the bytes the same), the dispatch in fp8 (``fp8``:
    fp8 experts), the all-to-alls at ``alltoall`` of the link's bandwidth (an engine's share,
    engines.Rates.alltoall), and a ``prefill``'s dispatch (DeepEP's normal kernels) rather than a decode step's."""

    forwards: int = 1
    fp8: bool = False
    alltoall: float = 1.0
    prefill: bool = False


def missed(pool: int, held: int, k: int) -> float:
    """The chance that k distinct experts drawn uniformly from ``pool`` miss all ``held`` of them:
    C(pool − held, k) / C(pool, k) (the hypergeometric's zero)."""
    return comb(pool - held, k) / comb(pool, k)


@dataclass(frozen=True)
class Forwarded:
    """Where DeepEP's normal (prefill) kernels send one token's input, in expectation: ``network`` copies to other
    nodes over the network, one a node it reaches (its k inputs travel once to each node), and ``nvlink`` copies
    within nodes over the scale-up link, one to each device it reaches but the one that received it."""

    network: float
    nvlink: float
    nodes: float  # the nodes it reaches, its own among them (1 within a node, and over nodes of unequal shares)


def forwarded(n_experts: int, top_k: int, ep: int, node: int, max_nodes: int | None) -> Forwarded:
    """A token's copies when its k experts, a uniform draw, sit on ``ep`` devices of ``node`` a node, the experts in
    order (E / ep a device), and the router keeps them on at most ``max_nodes`` nodes (DeepSeek-V3 §2.1.2's
    node-limited routing, M = 4; the nodes a uniform draw too). DeepEP's normal kernels (internode.cu, the
    kernels for training and prefill: "forwarding data from NVLink domain to RDMA domain") send the token once over
    the network to each other node it reaches, to the device of its own local rank there, which forwards it over
    NVLink to each device of that node holding one of its experts (DeepSeek-V3 §3.2); within its own node it goes
    over NVLink alone. Within one node (ep ≤ node) each device it reaches once, over NVLink."""
    if ep > node and ep % node:  # nodes holding unequal shares: each device it reaches once, over the network
        return Forwarded(ep * (1 - missed(n_experts, n_experts // ep, top_k)) * (ep - 1) / ep, 0.0, 1.0)
    nodes = max(1, ep // node)
    reach = nodes if max_nodes is None else min(max_nodes, nodes)
    pool = n_experts * reach // nodes  # the experts of the nodes a token may reach
    if pool < top_k:
        raise InputError(f"--max-nodes {max_nodes}: {reach} of the {nodes} nodes hold fewer than the {top_k} experts a token picks")
    device_reached = reach / nodes * (1 - missed(pool, n_experts // ep, top_k))
    local = min(ep, node)
    nvlink = ep * device_reached * (local - 1) / local  # the receiving device keeps its own
    if nodes == 1:
        return Forwarded(0.0, nvlink, 1.0)
    reached = reach * (1 - missed(pool, n_experts // nodes, top_k))
    return Forwarded(reached * (nodes - 1) / nodes, nvlink, reached)


# DeepSeek-V3 §3.4 and DeepEP: the dispatch carries fp8 activations with one fp32 scale per 128 values, the
# combine bf16 — bytes a value of each.
FP8_DISPATCH = 1 + 4 / 128


def stage_comm_s(spec: Model, st: Stage, p: Placement, tokens: int, link: Link, forwards: int = 1, fp8: bool = False) -> float:
    """Communication of ``forwards`` forwards of ``tokens`` tokens in all of one copy through a stage: its
    layers' all-reduces over tp, and the hand-off of the activations (tokens × d_model, 16-bit) to the next
    stage. Stages take devices in order, tp each, so the hand-off after stage s crosses nodes where (s + 1)·tp
    is a multiple of the node. With experts shared across copies (ep beyond tp), a mixture layer dispatches
    each token to its k experts and combines their outputs, two all-to-alls of k × d_model 16-bit values a
    token from each device's share of the tokens (DeepSeek-V3 §3.4's dispatch and combine), in place of the
    FFN's all-reduce; with fp8 experts (``fp8``) the dispatch in fp8 with its scales, the combine in 16 bits."""
    return sum(stage_comm_parts(spec, st, p, tokens, link, Traffic(forwards, fp8)))


def stage_comm_parts(spec: Model, st: Stage, p: Placement, tokens: float, link: Link, how: Traffic = Traffic()) -> tuple[float, float]:
    """stage_comm_s as (all-reduces and the hand-off, the expert-parallel all-to-alls), ``how`` they run (Traffic). A
    decode step's all-to-alls send each of a token's k inputs on its own (DeepEP's low-latency kernels, pure RDMA,
    one message an expert); a prefill's send it once to each node it reaches and forward it within the node
    (DeepEP's normal kernels, ``forwarded``), the network and NVLink hops at once, the slower one the pace."""
    forwards, fp8, alltoall = how.forwards, how.fp8, how.alltoall
    nbytes = tokens * spec.d_model * ACTIVATION_BYTES
    reduces = alltoalls = 0.0
    for layer in spec.layers[st.first : st.stop]:
        moe = next((b for _, b in layer.blocks() if b.routed_experts()), None)
        reduces += collectives(spec, layer) - (1 if moe is not None and p.ep_copies > 1 else 0)
        if moe is not None and p.ep_copies > 1:
            dispatch = FP8_DISPATCH / ACTIVATION_BYTES if fp8 else 1.0
            share = nbytes / p.tp / alltoall  # a device's tokens, 16-bit, at the engine's share of the links
            if how.prefill:
                f = forwarded(moe.routed_experts(), moe.active_experts(), p.ep, link.node, p.max_nodes)
                combine = forwarded_s(share * f.network, share * f.nvlink, p.ep, link, forwards)
                alltoalls += combine + forwarded_s(share * f.network * dispatch, share * f.nvlink * dispatch, p.ep, link, forwards)
                continue
            sent = share * moe.active_experts()
            alltoalls += (1 + dispatch) * alltoall_s(sent, p.ep, link, forwards)
    across = (st.index + 1) * p.tp % link.node == 0
    rest = reduces * allreduce_s(round(nbytes), p.tp, link, forwards) + (
        0.0 if st.last else send_s(round(nbytes), link, forwards, across)
    )
    return rest, alltoalls


def dispatch_figures(spec: Model, p: Placement, link: Link, fp8: bool) -> list[Figure]:
    """The bytes one token's dispatch sends in a mixture layer (the first one's experts), the combine's the same in
    16 bits: a prefill's over the network and over NVLink (``forwarded``), a decode step's, one message an expert."""
    moe = next((b for b in spec.blocks() if b.routed_experts()), None)
    if moe is None or p.ep_copies == 1:
        return []
    value = FP8_DISPATCH if fp8 else ACTIVATION_BYTES  # bytes a value of the dispatch
    f = forwarded(moe.routed_experts(), moe.active_experts(), p.ep, link.node, p.max_nodes)
    k, one = moe.active_experts(), spec.d_model * value
    nodes = max(1, p.ep // link.node)
    return [
        Figure(
            "prefill_dispatch_network_bytes",
            "prefill dispatch: network bytes a token a layer",
            f.network * one,
            "bytes",
            f"{f.network:.2f} copies, once to each other node of {nodes} it reaches (DeepEP's normal kernels)",
        ),
        Figure(
            "prefill_dispatch_nvlink_bytes",
            "prefill dispatch: NVLink bytes a token a layer",
            f.nvlink * one,
            "bytes",
            f"{f.nvlink:.2f} copies, forwarded to each device of a node holding one of its {k} experts",
        ),
        Figure(
            "decode_dispatch_bytes",
            "decode dispatch: bytes a token a layer",
            k * (p.ep - 1) / p.ep * one,
            "bytes",
            f"each of its {k} inputs on its own, (ep − 1)/ep of them to other devices (DeepEP's low-latency kernels)",
        ),
    ]
