"""The time of a decode step and of a prefill on a placement, at an efficiency (engines.Efficiency): the roofline
(every share 1, no fixed time), or the shares an engine achieves. Each pipeline stage takes the longer of its
bytes over its memory's bandwidth and its FLOPs over its peak, plus a fixed time per layer, then its
communication; a stage of layers offloaded to the host's CPU reads at the host's bandwidth, and for a prefill
its weights cross to the device (as llama.cpp copies them for batches of 32 tokens or more,
ggml-cuda.cu ggml_backend_cuda_device_offload_op)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from ..model.stack import Model
from . import crosscache, exchange, serving
from .engines import Efficiency
from .exchange import Traffic
from .formats import WeightBytes
from .links import ACTIVATION_BYTES, Link
from .plan import Placement


@dataclass(frozen=True)
class Setting:
    """What the steps are timed on: the model and its weights on a placement, its links, the KV cache's bits,
    the device's bandwidth and peak (bytes/s, FLOP/s; None: no peak), the host's bandwidth and the device's
    link to it (bytes/s), and the decode costs (inference.decode_costs)."""

    spec: Model
    w: WeightBytes
    p: Placement
    link: Link
    kv_bits: int | Fraction
    bandwidth: float
    peak: float | None
    host: tuple[float, float]
    costs: Callable
    fp8_experts: bool = False  # the experts' format is fp8: an expert-parallel dispatch in fp8


@dataclass(frozen=True)
class Step:
    seconds: float  # between a sequence's tokens
    stage_s: tuple[float, ...]
    comm_s: float
    bound: str


def decode_step(s: Setting, eff: Efficiency, context: int, micro: tuple[int, int], per_step: int, extra_last: float = 0.0) -> Step:
    """One decode step at ``context`` tokens of ``micro`` = (micro-batches in flight, sequences in each),
    ``per_step`` tokens a sequence (draft + 1); ``extra_last``: time the last stage adds (drafting). With two-batch
    overlap (``p.overlap``) each stage runs its sequences as two halves, one half's all-to-alls beside the other's
    compute: the stage takes the longer of the halves' compute (each half reading the weights and its own cache)
    and the halves' all-to-alls, then what does not overlap (the all-reduces over tp, the hand-off, the layers'
    fixed time)."""
    spec, p = s.spec, s.p
    flight, mb = micro
    stage_s, comm_s, bounds = [], 0.0, []
    for st in serving.stages(spec, s.w, p.pp, serving.offloaded(spec, p)):
        halves = (mb / 2, mb / 2) if p.overlap else (mb,)
        work = [_decode_work(s, eff, st, context, h * per_step, h) for h in halves]
        busy = sum(w[0] for w in work)
        memory_s, compute_s = sum(w[1] for w in work), sum(w[2] for w in work)
        rest, a2a = exchange.stage_comm_parts(spec, st, p, mb * per_step, s.link, Traffic(1, s.fp8_experts, eff.alltoall))
        if p.overlap:  # the halves' all-to-alls carry the same bytes in twice the calls: the latency twice
            rest, a2a = exchange.stage_comm_parts(spec, st, p, mb * per_step, s.link, Traffic(2, s.fp8_experts, eff.alltoall))
        comm = rest + a2a
        if st.cpu:  # the hidden state crosses to the device
            comm = rest = mb * per_step * spec.d_model * ACTIVATION_BYTES / s.host[1]
            a2a = 0.0
        layers = st.stop - st.first + (1 if st.last else 0)  # the head's forward too
        core = max(busy, a2a) + rest if p.overlap else busy + comm
        stage_s.append(core + eff.layer_s * layers + (extra_last if st.last else 0.0))
        comm_s += comm
        bounds.append(
            "communication-bound" if p.overlap and a2a > busy else "memory-bound" if memory_s >= compute_s else "compute-bound"
        )
    seconds = serving.pipeline_cycle(stage_s, 1 if serving.offloaded(spec, p) else flight)
    bound = bounds[max(range(len(stage_s)), key=lambda i: stage_s[i])]
    return Step(seconds, tuple(stage_s), comm_s, bound)


def _decode_work(s: Setting, eff: Efficiency, st, context: int, tokens: float, sequences: float) -> tuple[float, float, float]:
    """A stage's decode of ``tokens`` tokens of ``sequences`` sequences, without its communication: (time, memory
    time, compute time), the longer of its bytes over the bandwidth and its FLOPs over the peak."""
    from .inference import attended

    spec, p, kv_bits = s.spec, s.p, s.kv_bits
    cpu_bw = s.host[0]
    span = slice(st.first, st.stop)
    fixed, grows = s.costs(st.first, st.stop, st.last)
    dense, experts = serving.decode_weight_parts(spec, s.w, p, tokens, st)
    cache = sequences * (
        serving.kv_per_device(spec, context, kv_bits, p.tp, span) + serving.state_per_device(spec, kv_bits, p.tp, span)
    )
    cache += sequences * crosscache.cached_per_device(spec, kv_bits, p.tp, span)  # an encoder-decoder's cross K/V
    on_host = dense + experts + cache if st.cpu else (experts if p.cpu_experts else 0.0)
    on_device = 0.0 if st.cpu else dense + cache + (0.0 if p.cpu_experts else experts)
    memory_s = on_device / (s.bandwidth * eff.bandwidth) + on_host / (cpu_bw * eff.bandwidth)
    flops = tokens * (fixed + attended(grows, context, context)) / p.tp
    compute_s = flops / (s.peak * eff.compute) if s.peak and not st.cpu else 0.0
    return max(memory_s, compute_s), memory_s, compute_s


def once(s: Setting, st: serving.Stage) -> int:
    """Weight bytes of a stage whose work is once a sequence (an encoder's, the cross-attention's k and v): a prefill
    reads them beside the rest, a decode step does not (serving.Stage.read leaves them out)."""
    return sum(s.w.once[st.first : st.stop]) + (s.w.once_outside if st.last else 0)


def prefill(s: Setting, eff: Efficiency, flops: float, shares: list[float], tokens: int, chunk: int) -> float:
    """A copy's prefill of ``tokens`` prompt tokens, ``flops`` in all, in chunks streaming through the stages
    (each stage's share of the FLOPs, over its tp devices, and of its weights read once a chunk), the pipeline
    filling in pp − 1 chunks and then moving at its slowest stage's pace. Offloaded layers run on the device,
    their weights crossing from the host each chunk."""
    spec, p = s.spec, s.p
    chunks = -(-tokens // chunk)
    cpu_bw, pcie = s.host
    peak = s.peak * eff.compute if s.peak else 0.0
    if serving.offloaded(spec, p):
        cpu_stage, device = serving.stages(spec, s.w, 1, serving.offloaded(spec, p))
        copy = (cpu_stage.read + cpu_stage.experts) / pcie
        held = device.read + once(s, device) + (0 if p.cpu_experts else device.experts)
        per_chunk = max(flops / chunks / peak, held / (s.bandwidth * eff.bandwidth)) if peak else 0.0
        return chunks * (per_chunk + copy + eff.layer_s * (spec.n_layers + 1))
    stage_chunk_s = []
    for st in serving.stages(spec, s.w, p.pp):
        compute = flops * shares[st.index] / p.replicas / (p.tp * peak) if peak else 0.0
        held = (st.read + once(s, st)) / p.tp + st.experts / (p.ep if p.ep > 1 else p.tp)
        weights = held / (s.bandwidth * eff.bandwidth) * chunks
        layers = st.stop - st.first + (1 if st.last else 0)
        if p.overlap:  # each chunk as two halves, each reading the weights, one's all-to-alls beside the other's compute
            rest, a2a = exchange.stage_comm_parts(spec, st, p, tokens, s.link, Traffic(2 * chunks, s.fp8_experts, eff.alltoall, True))
            busy = 2 * max(compute / 2, weights)
            stage_chunk_s.append((max(busy, a2a) + rest + eff.layer_s * layers * chunks) / chunks)
            continue
        comm = sum(exchange.stage_comm_parts(spec, st, p, tokens, s.link, Traffic(chunks, s.fp8_experts, eff.alltoall, True)))
        stage_chunk_s.append((max(compute, weights) + comm + eff.layer_s * layers * chunks) / chunks)
    return sum(stage_chunk_s) if chunks == 1 else (chunks - 1) * max(stage_chunk_s) + sum(stage_chunk_s)
