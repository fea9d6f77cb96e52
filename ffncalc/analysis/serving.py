"""Will it fit, and how fast: a model served on ``gpus`` devices of one kind, in pipeline stages of a tensor-
parallel group (its experts over ep devices, within the group or across copies).

Memory per device, on the most loaded stage = weights (in their deployed format, ``formats.py``) + KV cache and
recurrent state at the context × batch + an activation workspace + a speculative drafter's weights and cache + a
reserve. Throughput is a roofline: prefill at the device's peak (compute bound), each decode step at the slower
of its bytes over the bandwidth and its FLOPs over the peak (memory bound at small batch: every active weight
read once a step, plus the whole KV cache), then its communication over the device's links (``links.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING

from ..errors import InputError
from ..model.stack import Model
from . import crosscache
from .figures import Figure
from .formats import KV_BITS, WeightBytes, deployed, formats_note, weight_bytes
from .hardware import NODE, Hardware
from .plan import Device, FitRun, Formats, Placement

if TYPE_CHECKING:
    from .engines import Engine

SEARCH_LIMIT = 1 << 24  # the largest batch searched


def place(spec: Model, placement: Placement) -> Placement:
    """--gpus devices, --pp pipeline stages of --tp devices per model copy (default: all a stage can have),
    --ep of a stage's devices sharing the experts."""
    from .parallel import check_ep, check_tp

    gpus, tp, ep, pp = placement.gpus, placement.tp, placement.ep, placement.pp
    if pp > spec.n_layers:
        raise InputError(f"--pp {pp} exceeds the {spec.n_layers} layers (each stage needs at least one)")
    if gpus % pp:
        raise InputError(f"--gpus {gpus} is not a multiple of --pp {pp}")
    tp = gpus // pp if tp is None else tp
    if gpus % (tp * pp):
        raise InputError(f"--gpus {gpus} is not a multiple of --tp {tp}" + (f" × --pp {pp}" if pp > 1 else ""))
    check_tp(spec, tp, replicate_kv=True)
    check_ep(spec, ep)
    if pp > 1 and any(part.unsplit for part in spec.parts):
        raise InputError(f"--pp {pp}: " + next(part.unsplit for part in spec.parts if part.unsplit))
    if ep <= tp and tp % ep:
        raise InputError(f"--ep {ep} does not divide --tp {tp} (experts spread over the devices of one stage)")
    if ep > tp and (ep % tp or (gpus // pp) % ep):
        raise InputError(
            f"--ep {ep}: beyond --tp {tp} it spans whole copies of a stage, a multiple of --tp that "
            f"divides the {gpus // pp} devices of a stage"
        )
    g = placement.gpu_layers
    if g is not None:
        if not 1 <= g <= spec.n_layers:
            raise InputError(f"--gpu-layers {g}: from 1 to the model's {spec.n_layers} layers (the device's share is planned)")
        if gpus > 1 and g < spec.n_layers:
            raise InputError(f"--gpu-layers {g} with --gpus {gpus}: layers offloaded to the CPU are modelled beside one device")
    if placement.cpu_experts and not any(b.routed_experts() for b in spec.blocks()):
        raise InputError("--cpu-experts: the model has no routed experts")
    if placement.overlap and not (ep > tp and gpus // pp > tp):
        raise InputError(
            "--two-batch-overlap: overlaps the expert-parallel all-to-alls, which run with --ep beyond --tp "
            "(experts shared across copies)"
        )
    if placement.max_nodes is not None:
        check_max_nodes(placement.max_nodes, tp, ep, gpus // pp)
    return replace(placement, gpus=gpus, tp=tp)


def check_max_nodes(m: int, tp: int, ep: int, stage: int) -> None:
    if m < 1:
        raise InputError(f"--max-nodes {m}: the nodes a token's experts may sit on, 1 or more")
    if not (ep > tp and stage > tp):
        raise InputError(
            f"--max-nodes {m}: limits the nodes an expert-parallel dispatch sends a token to, which runs with --ep beyond --tp"
        )


def offloaded(spec: Model, p: Placement) -> int:
    """Layers on the host's CPU: the first ones, as llama.cpp offloads the last --gpu-layers (-ngl) to the GPU."""
    return 0 if p.gpu_layers is None else spec.n_layers - p.gpu_layers


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
    cpu: bool = False  # on the host's CPU (layers offloaded by --gpu-layers)


def stages(spec: Model, w: WeightBytes, pp: int, cpu_layers: int = 0) -> list[Stage]:
    """Pipeline stages of even layers; with ``cpu_layers`` (one stage only) the first layers as a stage of their
    own on the host's CPU, with the embedding (llama.cpp keeps the token table on the host), the rest on the device."""
    from .parallel import stages as spans

    if pp > 1 and any(layer.shared is not None for layer in spec.layers):
        raise InputError(f"--pp {pp}: weight-shared blocks run in layers of every stage; pipeline stages are not modelled for them")
    if cpu_layers:
        split = [(0, cpu_layers), (cpu_layers, spec.n_layers)]
        first, second = _stages(spec, w, split, False)
        return [replace(first, cpu=True), second]
    return _stages(spec, w, spans(spec.n_layers, pp), pp > 1)


def _stages(spec: Model, w: WeightBytes, spans: list[tuple[int, int]], copy_head: bool) -> list[Stage]:
    out = []
    layers = w.layers
    pp = len(spans)
    outside = w.total - w.experts - sum(d for d, _ in layers)  # dense bytes beside the layers (no routed experts)
    tied_copy = w.tied if copy_head else 0  # the last stage's own head: the token table, not a position table
    for s, (a, b) in enumerate(spans):
        first, last = s == 0, s == pp - 1
        dense = sum(d for d, _ in layers[a:b])
        held = dense + (w.embedding if first else 0) + (outside - w.embedding + tied_copy if last else 0)
        # read each step: the layers, and on the last stage the head (the tied token table when tied) and the rest;
        # the input embedding and position tables are looked up, and what runs once a sequence (an encoder) not read
        read = dense - sum(w.once[a:b]) + (outside - w.embedding + w.tied - w.once_outside if last else 0)
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
    widest = max(sum(b.kept_elements(spec) for _, b in layer.blocks()) + 2 * spec.d_model for layer in spec.layers[layers])
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
    cached: int = 0  # a cache a sequence that does not grow (crosscache.py: an encoder-decoder's cross-attention K/V)

    @property
    def need(self) -> int:
        held = self.weights_per_device + self.kv_per_device + self.state_per_device + self.cached
        return held + self.workspace + self.reserve + self.draft

    @property
    def free(self) -> int:
        return self.memory - self.need


def held_per_device(st: Stage, p: Placement) -> int:
    """Dense weights split over tp; routed experts over ep devices whole when ep > 1, else over tp."""
    return -(-st.dense // p.tp) + -(-st.experts // (p.ep if p.ep > 1 else p.tp))


@dataclass(frozen=True)
class Load:
    """What a fit holds beside the weights: ``batch`` sequences of ``context`` tokens, their KV cache and state at
    ``kv_bits`` an element, a workspace for a prefill chunk of ``chunk`` tokens, and a drafter's weights and cache."""

    context: int
    batch: int
    kv_bits: int | Fraction
    chunk: int
    drafter: Drafter | None = None
    kv_block: int = 1  # tokens a KV block holds: a sequence's cache is whole blocks (engines.py)
    fixed: int = 0  # bytes per device beside the reserve: the CUDA context, library workspaces (engines.py)
    of_free: bool = False  # the reserve is a share of what weights, workspace and fixed bytes leave (TensorRT-LLM)


def fit(spec: Model, w: WeightBytes, p: Placement, load: Load, memory: int, reserve: float) -> Fit:
    """Memory per device at context × batch on the most loaded stage; offloaded layers and experts take none."""
    context, kv_bits, drafter = load.context, load.kv_bits, load.drafter
    cached = -(-context // load.kv_block) * load.kv_block
    per_device_batch = -(-load.batch // p.replicas)
    fits = []
    for st in stages(spec, w, p.pp, offloaded(spec, p)):
        if st.cpu:
            continue
        span = slice(st.first, st.stop)
        held = held_per_device(replace(st, experts=0) if p.cpu_experts else st, p)
        ws = workspace(spec, min(load.chunk, context * per_device_batch), per_device_batch, p.tp, span, logits=st.last)
        ws = max(ws, crosscache.stack_workspace(spec, load.chunk, per_device_batch, p.tp) if st.index == 0 else 0)
        share = max(0, memory - held - ws - load.fixed) if load.of_free else memory
        fits.append(
            Fit(
                w,
                held,
                per_device_batch * kv_per_device(spec, cached, kv_bits, p.tp, span),
                per_device_batch * state_per_device(spec, kv_bits, p.tp, span),
                ws,
                int(share * reserve) + load.fixed,
                memory,
                st if p.pp > 1 else None,
                drafter.bytes_per_device(p, context, per_device_batch, kv_bits) if drafter and st.last else 0,
                per_device_batch * crosscache.cached_per_device(spec, kv_bits, p.tp, span),
            )
        )
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
        return (
            decode_weight_bytes(self.spec, self.weights, p, sequences)
            + self.extra / p.tp
            + sequences * kv_per_device(self.spec, context, kv_bits, p.tp)
        )


MAX_STAGES = 64  # pipeline stages searched


def fewest(spec: Model, w: WeightBytes, load: Load, memory: int, reserve: float) -> Placement | None:
    """The fewest devices one copy of the model fits on at context × batch: tp × pp ascending, tp up to a node
    (the larger tp first), then pipeline stages across nodes, up to 64; None when none fits."""
    from .parallel import model_splits

    for tp, pp in model_splits(min(spec.n_layers, MAX_STAGES)):
        try:
            p = place(spec, Placement(tp * pp, tp, 1, pp))
        except InputError:
            continue
        if fit(spec, w, p, load, memory, reserve).free >= 0:
            return p
    return None


def fit_result(
    spec: Model, run: FitRun, formats: Formats, p: Placement, device: Device, eng: Engine, drafter: Drafter | None = None
) -> tuple[list[Figure], str, str]:
    """The fit at context × batch, and the largest context and batch that fit: figures, verdict, note."""
    hw, reserve, chunk, context, batch = device.hw, device.reserve, run.chunk, run.context, run.batch
    if not 0 <= reserve < 1:
        raise InputError(f"--reserve {reserve}: a fraction of the device's memory, from 0 up to 1")
    if chunk < 1:
        raise InputError(f"--prefill-chunk {chunk}: must be at least 1")
    w = deployed_bytes(spec, formats)
    fixed = eng.fixed_bytes + (eng.tp_bytes if p.tp * p.pp > 1 else 0)
    load = Load(context, batch, KV_BITS[formats.kv_dtype], chunk, drafter, eng.kv_block, fixed, eng.of_free)
    memory = usable_memory(hw, device)

    def at(c: int, b: int):
        return fit(spec, w, p, replace(load, context=c, batch=b), memory, reserve)

    f = at(context, batch)
    max_context = largest(lambda c: at(c, batch).free >= 0, spec.context_length)
    max_batch = largest(lambda b: at(context, b).free >= 0, SEARCH_LIMIT)
    least = fewest(spec, w, load, memory, reserve) if p.gpu_layers is None and not p.cpu_experts else None
    span = slice(f.stage.first, f.stage.stop) if f.stage else slice(offloaded(spec, p), None)
    per_token = kv_per_device(spec, 1, load.kv_bits, p.tp, span)
    room = f.memory - f.weights_per_device - f.workspace - f.reserve - f.draft - f.state_per_device - f.cached
    figures = fit_figures(f, p, hw.key) + [
        *(
            [
                Figure(
                    "kv_capacity_tokens",
                    "KV cache capacity",
                    max(0, room) // per_token,
                    "tokens",
                    f"{eng.label}: what is left after the weights, the workspace and the reserve",
                )
            ]
            if per_token
            else []
        ),
        Figure("max_context", f"largest context at batch {batch}", max_context, "tokens"),
        Figure("max_batch", f"largest batch at {context:,} tokens", max_batch, "sequences"),
        *([Figure("min_gpus", f"fewest {hw.key} that fit", least.gpus, "devices", f"tp {least.tp} × pp {least.pp}")] if least else []),
    ]
    note = (
        (
            "memory per device on the most loaded pipeline stage (layers as even as can be, the earlier "
            "stages one more; the embedding on the first, the head on the last): "
            if p.pp > 1
            else "memory per device: "
        )
        + f"weights (dense ÷ tp, routed experts ÷ ep, or ÷ tp without ep; ep beyond tp shares the experts "
        f"among copies) + KV cache at "
        f"context × batch ({formats.kv_dtype}; KV heads ÷ tp, a latent cache whole; whole blocks of {eng.kv_block} "
        f"token{'s' if eng.kv_block > 1 else ''}) + workspace (the widest "
        f"layer's activations for a {chunk:,}-token forward, 16-bit, ÷ tp, + fp32 logits of the batch's last "
        f"tokens) + a reserve: {reserve:.0%} of "
        + ("what the weights, the workspace and the fixed bytes leave" if eng.of_free else "the device")
        + (f" and {fixed / 2**30:.2f} GiB outside the engine's tensors" if fixed else "")
        + f" ({eng.source})"
        + (
            f"; of {hw.key}'s unified memory the GPU may wire {memory / 2**30:,.1f} GiB"
            + (" (--wired-limit-gib)" if device.wired_gib is not None else " (macOS's default; --wired-limit-gib)")
            if hw.unified
            else ""
        )
        + (f"; layers 0–{offloaded(spec, p) - 1} on the host's CPU take none of it" if offloaded(spec, p) else "")
        + ("; the routed experts on the host's CPU take none of it" if p.cpu_experts else "")
        + f"; largest context searched up to the model's {spec.context_length:,}, largest batch up to "
        f"{SEARCH_LIMIT:,}, by bisection"
    )
    text = verdict(f, p, hw, context, batch)
    if f.free < 0 and p.gpu_layers is None and not p.cpu_experts:
        text += (
            f"; one copy fits on {least.gpus} (--gpus {least.gpus} --tp {least.tp}"
            + (f" --pp {least.pp}" if least.pp > 1 else "")
            + ")"
            if least
            else f"; no copy fits on up to {NODE * MAX_STAGES} of them"
        )
    return figures, text, note


def usable_memory(hw: Hardware, device: Device) -> int:
    """A device's memory; on unified memory (Apple silicon) what macOS lets the GPU wire (engines.wired_limit)."""
    from .engines import wired_limit

    return wired_limit(hw, device.wired_gib) if hw.unified else hw.memory_bytes


def deployed_bytes(spec: Model, formats: Formats) -> WeightBytes:
    from .formats import overridden

    fmt, efmt = deployed(formats)
    return overridden(spec, fmt, efmt, formats.keep) if formats.keep else weight_bytes(spec, fmt, efmt)


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
    return sum(decode_weight_parts(spec, w, p, batch, stage))


def decode_weight_parts(spec: Model, w: WeightBytes, p: Placement, batch: int, stage: Stage | None = None) -> tuple[float, float]:
    """decode_weight_bytes as (dense, routed experts)."""
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
    return st.read / p.tp, read / (p.ep if p.ep > 1 else p.tp)


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
        *(
            [
                Figure(
                    "pipeline_stage",
                    "most loaded pipeline stage",
                    f.stage.index,
                    "stage",
                    f"layers {f.stage.first}–{f.stage.stop - 1} of {p.pp} stages",
                )
            ]
            if f.stage
            else []
        ),
        Figure("weight_bytes", "weights, whole model", f.weights.total, "bytes"),
        Figure("bits_per_weight", "bits per weight (mean)", f.weights.bits, "bits"),
        Figure("weight_bytes_per_device", "weights per device", f.weights_per_device, "bytes"),
        Figure("kv_bytes_per_device", "KV cache per device", f.kv_per_device, "bytes"),
        *([Figure("state_bytes_per_device", "recurrent state per device", f.state_per_device, "bytes")] if f.state_per_device else []),
        *([Figure("cross_kv_bytes_per_device", "cross-attention K/V cache per device", f.cached, "bytes")] if f.cached else []),
        Figure("workspace_bytes_per_device", "activation workspace", f.workspace, "bytes"),
        *([Figure("draft_bytes_per_device", "drafter's weights and KV cache", f.draft, "bytes")] if f.draft else []),
        Figure("reserve_bytes", "reserve", f.reserve, "bytes"),
        Figure("need_bytes_per_device", "needed per device", f.need, "bytes"),
        Figure("device_memory_bytes", f"{hw_key} memory", f.memory, "bytes"),
        Figure("free_bytes_per_device", "left over (negative: short)", f.free, "bytes"),
    ]


def verdict(f: Fit, p: Placement, hw: Hardware, context: int, batch: int) -> str:
    layout = ", ".join(
        [f"tp {p.tp}"]
        + ([f"pp {p.pp}"] if p.pp > 1 else [])
        + ([f"ep {p.ep}" + (" across copies" if p.ep_copies > 1 else "")] if p.ep > 1 else [])
        + ([f"{p.replicas} copies"] if p.replicas > 1 else [])
    )
    where = f"{p.gpus} × {hw.key}" + (f" ({layout})" if p.gpus > 1 else "")
    if f.free >= 0:
        return f"fits on {where} at {context:,} tokens × batch {batch}: {f.free / 2**30:,.2f} GiB left per device"
    return (
        f"does NOT fit on {where} at {context:,} tokens × batch {batch}: short by {-f.free / 2**30:,.2f} GiB "
        f"per device (needs {f.need / 2**30:,.2f} GiB of {f.memory / 2**30:,.2f} GiB)"
    )


__all__ = ["place", "fit", "fit_result", "largest", "expected_experts", "tokens_per_step", "weight_bytes", "formats_note", "Placement"]
