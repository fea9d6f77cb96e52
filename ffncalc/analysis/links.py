"""The links between devices: the interconnect a placement's collectives run over (a device's scale-up link
within a node, the network between nodes, or what the user states), what its all-reduces, all-to-alls and
hand-offs take, and the note that says what was assumed."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..model.stack import Model
from .hardware import NODE
from .plan import Device, Placement

NETWORK_GBS = 50.0  # one 400 Gb/s NIC per GPU each way, as DGX H100, H200 and B200 ship (8 × ConnectX-7 400 Gb/s)

# Activations cross devices in 16 bits (bf16), as serving engines keep them.
ACTIVATION_BYTES = 2


@dataclass(frozen=True)
class Link:
    """The interconnect a tensor-parallel group's all-reduces and the pipeline hand-offs use: bandwidth per
    direction (10^9 bytes/s) and the fixed time of one call, whatever its size."""

    gbs: float | None  # what a ring over the tp group gets
    latency_s: float = 0.0
    p2p_gbs: float | None = None  # one device to the next stage's (default: gbs)
    p2p_latency_s: float = 0.0
    node: int = NODE  # devices the scale-up link joins; beyond them the network
    network_gbs: float = NETWORK_GBS  # per device and direction between nodes
    # measured (a links file, linkfile.py): the all-to-all's own bus bandwidth and latency (None: the ring's and a
    # hand-off's), the ranks gbs and a2a_gbs were measured over (0: none), and what was measured, in words
    a2a_gbs: float | None = None
    a2a_latency_s: float | None = None
    measured_over: int = 0
    a2a_over: int = 0
    measured: tuple[str, ...] = ()
    source: str | None = None  # the links file

    def ring_gbs(self, n: int) -> float | None:
        """A ring over n devices: the scale-up link within a node, the network when it spans nodes (unless the
        bandwidth was measured over devices beyond a node)."""
        return self._within(self.gbs, n, self.measured_over)

    def a2a(self, n: int) -> float | None:
        """An all-to-all's bus bandwidth over n devices: its own where measured, else the ring's."""
        return self._within(self.a2a_gbs, n, self.a2a_over) if self.a2a_gbs else self.ring_gbs(n)

    def _within(self, gbs: float | None, n: int, over: int) -> float | None:
        return min(gbs, self.network_gbs) if gbs and n > self.node and over <= self.node else gbs


def collectives(spec: Model, layer) -> int:
    """All-reduces a tensor-parallel layer ends its sublayers with: Megatron-LM's one after the mixer's output
    projection and one after the FFN's down projection (Shoeybi et al. 2019 §3), each block of the layer
    ending in one (a weight-shared block too); parallel sublayers sum into a single all-reduce (GPT-J,
    Falcon, Cohere). With expert parallelism inside the group, the mixture's all-reduce combines the experts'
    outputs, as vLLM does: no all-to-all beside it."""
    n = sum(1 for _, b in layer.blocks() if b.kind != "none")
    return min(n, 1) if spec.parallel else n


def allreduce_s(nbytes: int, n: int, link: Link, calls: int = 1) -> float:
    """``calls`` ring all-reduces of ``nbytes`` in all over ``n`` devices: each device sends and receives
    2(n − 1)/n of the bytes (a reduce-scatter then an all-gather; Thakur et al. 2005; NCCL's bus bandwidth),
    and each call costs the link's latency."""
    gbs = link.ring_gbs(n)
    if n == 1 or not gbs:
        return 0.0
    return 2 * (n - 1) / n * nbytes / (gbs * 1e9) + calls * link.latency_s


def send_s(nbytes: int, link: Link, calls: int = 1, across: bool = False) -> float:
    """Point-to-point hand-offs of ``nbytes`` in all between pipeline stages, ``across`` nodes or within one."""
    gbs = link.p2p_gbs or link.gbs
    if gbs and across:
        gbs = min(gbs, link.network_gbs)
    return nbytes / (gbs * 1e9) + calls * link.p2p_latency_s if gbs else 0.0


def alltoall_s(nbytes: float, n: int, link: Link, calls: int = 1) -> float:
    """``calls`` all-to-alls in which each of ``n`` devices sends ``nbytes`` in all, (n − 1)/n of it to the
    others (nccl-tests' bus bandwidth for all-to-all), over the link, or the network when they span nodes;
    each call's latency taken as one hand-off's."""
    gbs = link.a2a(n)
    if n == 1 or not gbs:
        return 0.0
    latency = link.a2a_latency_s if link.a2a_latency_s is not None else link.p2p_latency_s
    return (n - 1) / n * nbytes / (gbs * 1e9) + calls * latency


def forwarded_s(network: float, nvlink: float, ep: int, link: Link, calls: int = 1) -> float:
    """``calls`` dispatches (or combines) in which each device sends ``network`` bytes in all to other nodes and
    ``nvlink`` bytes to devices of its node (DeepEP's normal kernels, exchange.forwarded): the two hops run at once,
    a node's tokens forwarded over NVLink as they arrive (DeepSeek-V3 §3.2: IB and NVLink fully overlapped), so the
    slower takes the time: the network at its bandwidth a device, NVLink at the scale-up link's; each call's
    latency one all-to-all's."""
    gbs = link.a2a(min(ep, link.node))
    if ep == 1 or not gbs:
        return 0.0
    latency = link.a2a_latency_s if link.a2a_latency_s is not None else link.p2p_latency_s
    return max(network / (link.network_gbs * 1e9), nvlink / (gbs * 1e9)) + calls * latency


def device_link(device: Device, p: Placement) -> Link:
    """The link a placement's collectives run over: ``--link-gbs`` and ``--link-latency-us`` where given, else
    the table's scale-up link of the device (a mesh's share for a group of tp, NCCL's latency model); between its
    nodes, ``--network-gbs``."""
    link = _table_link(device, p)
    if device.links is None:
        return link
    from .linkfile import measured

    return measured(link, device.links, p)


def _table_link(device: Device, p: Placement) -> Link:
    hw, gbs, latency_us, network_gbs = device.hw, device.link_gbs, device.link_latency_us, device.network_gbs
    for option, value, floor in (("--link-gbs", gbs, 0), ("--network-gbs", network_gbs, 0)):
        if value is not None and not value > floor:
            raise InputError(f"{option} {value}: a bandwidth in GB/s, above 0")
    if latency_us is not None and not latency_us >= 0:
        raise InputError(f"--link-latency-us {latency_us}: a time, 0 or more")
    network = network_gbs if network_gbs is not None else NETWORK_GBS
    node = hw.node if hw else NODE
    if gbs is not None or hw is None:
        lat = (latency_us or 0.0) * 1e-6
        return Link(gbs, lat, gbs, lat, node, network)
    lat = latency_us * 1e-6 if latency_us is not None else hw.allreduce_latency_us(p.tp) * 1e-6
    if latency_us is not None:
        p2p = latency_us * 1e-6
    else:  # one step of the ring: a send to the next device
        p2p = sum(hw.link_latency_us) * 1e-6 if hw.link_latency_us else 0.0
    return Link(hw.allreduce_gbs(p.tp), lat, hw.link_peer_gbs or hw.link_gbs, p2p, node, network)


def link_note(device: Device, p: Placement, link: Link) -> str:
    """What the communication figures assume, for the placement ``p``."""
    hw, gbs, latency_us, network_gbs = device.hw, device.link_gbs, device.link_latency_us, device.network_gbs
    if p.tp == 1 and p.pp == 1 and p.ep_copies == 1:
        return "communication: none (one device per model copy)" + (f"; {link.source} not used" if link.source else "")
    if not link.gbs and not link.source:
        return f"communication: not counted — {hw.key}'s table entry gives no interconnect bandwidth; --link-gbs sets one"
    parts = []
    a2a_latency = link.a2a_latency_s if link.a2a_latency_s is not None else link.p2p_latency_s
    if p.tp > 1 and link.gbs:
        parts.append(
            f"an all-reduce of the 16-bit activations after each sublayer over tp {p.tp}, each device "
            f"moving 2(n − 1)/n of them at {link.ring_gbs(p.tp):g} GB/s (Shoeybi et al. 2019; nccl-tests' "
            "bus bandwidth), " + (f"{link.latency_s * 1e6:.3g} µs each" if link.latency_s else "no latency")
        )
    if p.ep_copies > 1:
        parts.append(
            f"in a mixture layer, in place of the FFN's all-reduce, a dispatch and a combine over the "
            f"{p.ep} devices sharing the experts, each device sending its share of the tokens' k inputs (the "
            "dispatch in fp8 with a scale per 128 values when the experts are fp8, DeepSeek-V3 §3.4), "
            f"(n − 1)/n of them to the others, at {link.a2a(p.ep):g} GB/s (nccl-tests' all-to-all bus "
            "bandwidth; an engine's expected rate at its share of it, engines.ALLTOALL_SHARE), "
            + (f"{a2a_latency * 1e6:.3g} µs each" if a2a_latency else "no latency")
            + "; in a decode step each of a token's k inputs on its own (DeepEP's low-latency kernels); in a "
            "prefill a token once to each device it reaches"
            + (
                ", and across nodes once over the network to each node it reaches"
                + (f" (at most {p.max_nodes}, --max-nodes)" if p.max_nodes else "")
                + f", forwarded there over the {link.a2a(link.node):g} GB/s link, the two hops at once (DeepEP's "
                "normal kernels, DeepSeek-V3 §3.2)"
                if p.ep > link.node
                else " (DeepEP's normal kernels)"
            )
        )
    if p.pp > 1 and (link.p2p_gbs or link.gbs):
        parts.append(
            f"each stage's hand-off of its activations to the next at {link.p2p_gbs or link.gbs:g} GB/s, "
            + (f"{link.p2p_latency_s * 1e6:.3g} µs each" if link.p2p_latency_s else "no latency")
        )
    if not parts:  # a links file with no fit this placement runs, and no table link beside it
        return f"communication: not counted — {link.source} holds no fit this placement uses, and the table gives no link"
    source = (
        ""
        if hw is None
        else ("--link-gbs" if gbs is not None else f"{hw.key}'s scale-up link per direction")
        + (
            ", --link-latency-us"
            if latency_us is not None
            else ", NCCL's ring latency model (src/graph/tuning.cc)"
            if hw.link_latency_us
            else ", no latency figure: a lower bound (--link-latency-us adds one)"
        )
    )
    if link.source:  # measured figures first; the table's (if any) for what the file does not hold
        measured = f"measured in {link.source}: " + ("; ".join(link.measured) or "nothing this placement uses")
        source = measured + (f"; otherwise {source}" if source else "")
    crossing = p.tp > link.node or (p.pp > 1 and p.tp * p.pp > link.node) or p.ep > link.node
    network = (
        (
            f"; between nodes of {link.node} the network at {link.network_gbs:g} GB/s a device "
            + (
                "(--network-gbs)"
                if network_gbs is not None
                else "(a 400 Gb/s NIC a GPU, as DGX H100 and B200 ship; --network-gbs sets it)"
            )
        )
        if crossing
        else ""
    )
    overlap = (
        "; two-batch overlap (--two-batch-overlap): each step's sequences (each prefill chunk's tokens) in two "
        "halves, one half's dispatch and combine beside the other's compute, a stage taking the longer of the halves' "
        "compute (each half reading the weights) and their all-to-alls, then the all-reduces, hand-offs and the layers' "
        "fixed time, which do not overlap (DeepSeek-V3 §3.4, SGLang's two-batch overlap)"
        if p.overlap
        else "; not overlapped with compute"
    )
    return f"communication ({source}): " + "; ".join(parts) + network + overlap
