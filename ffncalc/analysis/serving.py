"""Will it fit, and how fast: a model served on ``gpus`` devices of one kind, in pipeline stages of a tensor-
parallel group (its experts over ep devices, within the group or across copies).

Memory per device, on the most loaded stage = weights (in their deployed format, ``formats.py``) + KV cache and
recurrent state at the context × batch + an activation workspace + a speculative drafter's weights and cache + a
reserve. Throughput is a roofline: prefill at the device's peak (compute bound), each decode step at the slower
of its bytes over the bandwidth and its FLOPs over the peak (memory bound at small batch: every active weight
read once a step, plus the whole KV cache), then its communication over the device's links (``Link``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..model.stack import Model
from .figures import Figure
from .formats import Format, WeightBytes, weight_bytes
from .hardware import Hardware

# vLLM's default gpu_memory_utilization is 0.9 (vLLM engine arguments): a tenth of the device is left to the
# CUDA context, the allocator and whatever else runs; the same tenth is the default reserve here.
DEFAULT_RESERVE = 0.1
# Tokens of one prefill chunk, which sizes the activation workspace: llama.cpp's default logical batch
# (-b 2048); vLLM's chunked prefill budget (max_num_batched_tokens) is of the same order.
DEFAULT_CHUNK = 2048
SEARCH_LIMIT = 1 << 24  # the largest batch searched


@dataclass(frozen=True)
class Placement:
    gpus: int
    tp: int
    ep: int
    pp: int = 1

    @property
    def replicas(self) -> int:
        """Copies of the model: the devices left after tp × pp (experts spread over ep devices of a tp group)."""
        return self.gpus // (self.tp * self.pp)

    @property
    def ep_copies(self) -> int:
        """Copies whose devices share one set of experts: ep beyond tp spans ep / tp of them, their attention
        data-parallel (vLLM's data parallelism with expert parallelism, SGLang's DP attention)."""
        return self.ep // self.tp if self.ep > self.tp else 1


def place(spec: Model, gpus: int, tp: int | None, ep: int, pp: int = 1) -> Placement:
    """--gpus devices, --pp pipeline stages of --tp devices per model copy (default: all a stage can have),
    --ep of a stage's devices sharing the experts."""
    from .parallel import check_ep, check_tp

    if pp > spec.n_layers:
        raise InputError(f"--pp {pp} exceeds the {spec.n_layers} layers (each stage needs at least one)")
    if gpus % pp:
        raise InputError(f"--gpus {gpus} is not a multiple of --pp {pp}")
    tp = gpus // pp if tp is None else tp
    if gpus % (tp * pp):
        raise InputError(f"--gpus {gpus} is not a multiple of --tp {tp}" + (f" × --pp {pp}" if pp > 1 else ""))
    check_tp(spec, tp, replicate_kv=True)
    check_ep(spec, ep)
    if ep <= tp and tp % ep:
        raise InputError(f"--ep {ep} does not divide --tp {tp} (experts spread over the devices of one stage)")
    if ep > tp and (ep % tp or (gpus // pp) % ep):
        raise InputError(f"--ep {ep}: beyond --tp {tp} it spans whole copies of a stage, a multiple of --tp that "
                         f"divides the {gpus // pp} devices of a stage")
    return Placement(gpus, tp, ep, pp)


@dataclass(frozen=True)
class Stage:
    """A pipeline stage: layers ``first``..``stop`` − 1; the first stage also holds the input embedding, the
    last the rest of what no layer holds (final norm, head, model-level parts) and, with tied embeddings and
    more than one stage, its own copy of the embedding as the head (as vLLM and Megatron-LM place them)."""

    index: int
    first: int
    stop: int
    dense: int  # weight bytes held, whole (before tp)
    experts: int  # routed-expert bytes held, whole (before ep or tp)
    read: int  # dense bytes a decode step reads: all held but the input embedding, which is looked up
    last: bool


def stages(spec: Model, w: WeightBytes, pp: int) -> list[Stage]:
    from .parallel import stages as spans

    if pp > 1 and any(layer.shared is not None for layer in spec.layers):
        raise InputError(f"--pp {pp}: weight-shared blocks run in layers of every stage; pipeline stages are not "
                         "modelled for them")
    out = []
    layers = w.layers
    outside = w.total - w.experts - sum(d for d, _ in layers)  # dense bytes beside the layers (no routed experts)
    tied_copy = w.tied if pp > 1 else 0  # the last stage's own head: the token table, not a position table
    for s, (a, b) in enumerate(spans(spec.n_layers, pp)):
        first, last = s == 0, s == pp - 1
        dense = sum(d for d, _ in layers[a:b])
        held = dense + (w.embedding if first else 0) + (outside - w.embedding + tied_copy if last else 0)
        # read each step: the layers, and on the last stage the head (the tied token table when tied) and the
        # rest; the input embedding and position tables are looked up
        read = dense + (outside - w.embedding + w.tied if last else 0)
        out.append(Stage(s, a, b, held, sum(e for _, e in layers[a:b]), read, last))
    return out


def kv_per_device(spec: Model, tokens: int, bits: int, tp: int, layers: slice = slice(None)) -> int:
    """One sequence's cache on one device after ``tokens`` tokens, over ``layers``: attention splits its KV
    heads over tp (a device keeps one whole head when tp exceeds them, as vLLM replicates them); a latent cache
    (MLA) is whole on every device."""
    total = 0
    for layer in spec.layers[layers]:
        for _, b in layer.blocks():
            elements = b.cache_elements(spec)
            if not elements:
                continue
            kv = b.kv_head_count()
            if kv:
                elements = elements * max(1, kv // tp) // kv
            total += elements * b.cached_tokens(tokens)
    return total * bits // 8


def state_per_device(spec: Model, bits: int, tp: int, layers: slice = slice(None)) -> int:
    return sum(-(-b.state_elements(spec) // tp) for layer in spec.layers[layers] for _, b in layer.blocks()) * bits // 8


def workspace(spec: Model, chunk: int, batch: int, tp: int, layers: slice = slice(None), logits: bool = True) -> int:
    """Transient activations of a forward pass: the widest layer's activations as a training forward keeps
    them (each block's kept_elements, Korthikanti et al. 2022's per-layer terms), 16-bit, for one chunk of
    prefill tokens, ÷ tp; plus, where the head is, the fp32 logits of every sequence's last token (batch ×
    vocab × 4)."""
    widest = max(sum(b.kept_elements(spec) for _, b in layer.blocks()) + 2 * spec.d_model
                 for layer in spec.layers[layers])
    return -(-chunk * 2 * widest // tp) + (batch * spec.vocab_size * 4 if logits else 0)


@dataclass(frozen=True)
class Fit:
    weights: WeightBytes
    weights_per_device: int
    kv_per_device: int
    state_per_device: int
    workspace: int
    reserve: int
    memory: int
    stage: Stage | None = None  # the most loaded pipeline stage, when there are several
    draft: int = 0  # the drafter's weights and KV cache, on the last stage

    @property
    def need(self) -> int:
        return (self.weights_per_device + self.kv_per_device + self.state_per_device + self.workspace + self.reserve
                + self.draft)

    @property
    def free(self) -> int:
        return self.memory - self.need


def held_per_device(st: Stage, p: Placement) -> int:
    """Dense weights split over tp; routed experts over ep devices whole when ep > 1, else over tp."""
    return -(-st.dense // p.tp) + -(-st.experts // (p.ep if p.ep > 1 else p.tp))


def fit(spec: Model, w: WeightBytes, p: Placement, *, context: int, batch: int, kv_bits: int, memory: int,
        reserve: float, chunk: int, drafter: Drafter | None = None) -> Fit:
    """Memory per device at context × batch on the most loaded pipeline stage (the only one without pp)."""
    per_device_batch = -(-batch // p.replicas)
    fits = []
    for st in stages(spec, w, p.pp):
        span = slice(st.first, st.stop)
        fits.append(Fit(w, held_per_device(st, p),
                        per_device_batch * kv_per_device(spec, context, kv_bits, p.tp, span),
                        per_device_batch * state_per_device(spec, kv_bits, p.tp, span),
                        workspace(spec, min(chunk, context * per_device_batch), per_device_batch, p.tp, span,
                                  logits=st.last),
                        int(memory * reserve), memory, st if p.pp > 1 else None,
                        drafter.bytes_per_device(p, context, per_device_batch, kv_bits) if drafter and st.last else 0))
    return max(fits, key=lambda f: f.need)


@dataclass(frozen=True)
class Drafter:
    """What drafts the tokens a speculative step verifies, run once a drafted token on the last stage's
    devices, split over tp like the model. Either the model's own multi-token prediction modules (DeepSeek-V3
    §2.2: a layer like the model's last, the 2d → d projection eh_proj and three norms; the embedding and the
    head shared with the model, as vLLM shares them), one module a drafted token; or a draft model of its own,
    in the model's weight format."""

    label: str
    spec: Model  # the layers one draft step runs, with the embedding and head it reads
    weights: WeightBytes  # of ``spec``, in the deployed format
    held: int  # bytes it adds to the last stage, whole (before tp)
    extra: int = 0  # bytes a draft step reads beside ``spec``'s (MTP: eh_proj and its norms)
    extra_flops: int = 0  # FLOPs per drafted token beside ``spec``'s (MTP: eh_proj)
    caches: int = 1  # KV caches kept, each of ``spec``'s layers (MTP: one per module)

    def kv_per_device(self, tp: int, context: int, kv_bits: int) -> int:
        return self.caches * kv_per_device(self.spec, context, kv_bits, tp)

    def bytes_per_device(self, p: Placement, context: int, batch: int, kv_bits: int) -> int:
        return -(-self.held // p.tp) + batch * self.kv_per_device(p.tp, context, kv_bits)

    def step_bytes(self, p: Placement, sequences: int, context: int, kv_bits: int) -> float:
        """Bytes one device reads drafting a token for each of ``sequences`` sequences: the weights (the experts
        those tokens pick, ep as the model's) and each sequence's one cache a step reads (one MTP module's)."""
        return (decode_weight_bytes(self.spec, self.weights, p, sequences) + self.extra / p.tp
                + sequences * kv_per_device(self.spec, context, kv_bits, p.tp))




MAX_STAGES = 64  # pipeline stages searched


def fewest(spec: Model, w: WeightBytes, *, context: int, batch: int, kv_bits: int, memory: int, reserve: float,
           chunk: int, drafter: Drafter | None = None) -> Placement | None:
    """The fewest devices one copy of the model fits on at context × batch: tp × pp ascending, tp up to a node
    (the larger tp first), then pipeline stages across nodes, up to 64; None when none fits."""
    from .parallel import model_splits

    for tp, pp in model_splits(min(spec.n_layers, MAX_STAGES)):
        try:
            p = place(spec, tp * pp, tp, 1, pp)
        except InputError:
            continue
        if fit(spec, w, p, context=context, batch=batch, kv_bits=kv_bits, memory=memory, reserve=reserve,
               chunk=chunk, drafter=drafter).free >= 0:
            return p
    return None


def largest(fits, hi: int) -> int:
    """The largest n in 0..hi with fits(n) (fits monotone: true up to some n, false after), by bisection."""
    if not fits(1):
        return 0
    lo = 1
    if fits(hi):
        return hi
    while hi - lo > 1:  # fits(lo), not fits(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def expected_experts(n_experts: int, top_k: int, tokens: int) -> float:
    """Distinct experts a batch of ``tokens`` tokens touches in one layer, in expectation, when each token's
    k experts are a uniform draw: E · (1 − (1 − k/E)^B) (each expert is missed by one token with
    probability 1 − k/E)."""
    return n_experts * (1 - (1 - top_k / n_experts) ** tokens)


def decode_weight_bytes(spec: Model, w: WeightBytes, p: Placement, batch: int, stage: Stage | None = None) -> float:
    """Weight bytes one device of ``stage`` (default: the whole model as one stage) reads in a decode step of
    ``batch`` tokens: every dense weight it holds but the input embedding (looked up, a row a token), and of
    each mixture layer the experts the batch touches."""
    st = stage or stages(spec, w, 1)[0]
    layers = w.layers
    read = 0.0
    for i in range(st.first, st.stop):
        experts = layers[i][1]
        if not experts:
            continue
        b = next(b for _, b in spec.layers[i].blocks() if b.routed_experts())
        n = b.routed_experts()
        # the tokens of every copy sharing these experts route to them
        read += experts * expected_experts(n, b.active_experts(), batch * p.ep_copies) / n
    return st.read / p.tp + read / (p.ep if p.ep > 1 else p.tp)


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
    node: int = 8  # devices the scale-up link joins; beyond them the network
    network_gbs: float = 50.0  # per device and direction between nodes

    def ring_gbs(self, n: int) -> float | None:
        """A ring over n devices: the scale-up link within a node, the network when it spans nodes."""
        return min(self.gbs, self.network_gbs) if self.gbs and n > self.node else self.gbs


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
    gbs = link.ring_gbs(n)
    if n == 1 or not gbs:
        return 0.0
    return (n - 1) / n * nbytes / (gbs * 1e9) + calls * link.p2p_latency_s


def stage_comm_s(spec: Model, st: Stage, p: Placement, tokens: int, link: Link, forwards: int = 1) -> float:
    """Communication of ``forwards`` forwards of ``tokens`` tokens in all of one copy through a stage: its
    layers' all-reduces over tp, and the hand-off of the activations (tokens × d_model, 16-bit) to the next
    stage. Stages take devices in order, tp each, so the hand-off after stage s crosses nodes where (s + 1)·tp
    is a multiple of the node. With experts shared across copies (ep beyond tp), a mixture layer dispatches
    each token to its k experts and combines their outputs, two all-to-alls of k × d_model 16-bit values a
    token from each device's share of the tokens (DeepSeek-V3 §3.4's dispatch and combine), in place of the
    FFN's all-reduce."""
    nbytes = tokens * spec.d_model * ACTIVATION_BYTES
    reduces = alltoalls = 0.0
    for layer in spec.layers[st.first:st.stop]:
        moe = next((b for _, b in layer.blocks() if b.routed_experts()), None)
        reduces += collectives(spec, layer) - (1 if moe is not None and p.ep_copies > 1 else 0)
        if moe is not None and p.ep_copies > 1:
            alltoalls += 2 * alltoall_s(nbytes * moe.active_experts() / p.tp, p.ep, link, forwards)
    across = (st.index + 1) * p.tp % link.node == 0
    return reduces * allreduce_s(nbytes, p.tp, link, forwards) + alltoalls + (
        0.0 if st.last else send_s(nbytes, link, forwards, across))


def pipeline_cycle(stage_s: list[float], micro_batches: int) -> float:
    """Time between two tokens of a sequence when ``micro_batches`` micro-batches circulate through the
    stages: one pass through every stage, or, with enough micro-batches, the slowest stage taking each
    micro-batch in turn (vLLM's pipeline parallelism keeps one micro-batch per stage in flight)."""
    return max(sum(stage_s), micro_batches * max(stage_s))


def tokens_per_step(accept: float, draft: int) -> float:
    """Expected tokens a verification step yields with ``draft`` drafted tokens each accepted with
    probability ``accept``: (1 − a^(k+1)) / (1 − a) (Leviathan et al. 2023, Eq. 1)."""
    if draft == 0:
        return 1.0
    return float(draft + 1) if accept >= 1 else (1 - accept ** (draft + 1)) / (1 - accept)


def fit_figures(f: Fit, p: Placement, hw_key: str) -> list[Figure]:
    return [
        *([Figure("pipeline_stage", "most loaded pipeline stage", f.stage.index, "stage",
                  f"layers {f.stage.first}–{f.stage.stop - 1} of {p.pp} stages")] if f.stage else []),
        Figure("weight_bytes", "weights, whole model", f.weights.total, "bytes"),
        Figure("bits_per_weight", "bits per weight (mean)", f.weights.bits, "bits"),
        Figure("weight_bytes_per_device", "weights per device", f.weights_per_device, "bytes"),
        Figure("kv_bytes_per_device", "KV cache per device", f.kv_per_device, "bytes"),
        *([Figure("state_bytes_per_device", "recurrent state per device", f.state_per_device, "bytes")]
          if f.state_per_device else []),
        Figure("workspace_bytes_per_device", "activation workspace", f.workspace, "bytes"),
        *([Figure("draft_bytes_per_device", "drafter's weights and KV cache", f.draft, "bytes")] if f.draft else []),
        Figure("reserve_bytes", "reserve", f.reserve, "bytes"),
        Figure("need_bytes_per_device", "needed per device", f.need, "bytes"),
        Figure("device_memory_bytes", f"{hw_key} memory", f.memory, "bytes"),
        Figure("free_bytes_per_device", "left over (negative: short)", f.free, "bytes"),
    ]


def verdict(f: Fit, p: Placement, hw: Hardware, context: int, batch: int) -> str:
    layout = ", ".join([f"tp {p.tp}"] + ([f"pp {p.pp}"] if p.pp > 1 else [])
                       + ([f"ep {p.ep}" + (" across copies" if p.ep_copies > 1 else "")] if p.ep > 1 else [])
                       + ([f"{p.replicas} copies"] if p.replicas > 1 else []))
    where = f"{p.gpus} × {hw.key}" + (f" ({layout})" if p.gpus > 1 else "")
    if f.free >= 0:
        return f"fits on {where} at {context:,} tokens × batch {batch}: {f.free / 2**30:,.2f} GiB left per device"
    return (f"does NOT fit on {where} at {context:,} tokens × batch {batch}: short by {-f.free / 2**30:,.2f} GiB "
            f"per device (needs {f.need / 2**30:,.2f} GiB of {f.memory / 2**30:,.2f} GiB)")


def formats_note(fmt: Format, experts: Format | None) -> str:
    text = f"weights: {fmt.name}, {float(fmt.bits):g} bits per weight in large matrices — {fmt.source}"
    if experts is not None and experts is not fmt:
        text += f"; routed experts: {experts.name}, {float(experts.bits):g} bits — {experts.source}"
    return text


__all__ = ["place", "fit", "largest", "expected_experts", "tokens_per_step", "weight_bytes", "DEFAULT_RESERVE"]
