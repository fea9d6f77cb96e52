"""Exact integer tallies of parameters and FLOPs, component by component. No printing here.

``terms(spec, seq_len)`` lists every tensor and every operation of a forward pass as typed terms;
``tally(...)`` applies a convention (``conventions.py``) and returns rows with their totals.
FLOPs are per token of a forward pass at ``seq_len``: a matmul costs 2 FLOPs per multiply-add.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import prod
from typing import Literal

from .conventions import CONVENTIONS, DEFAULT, MATRICES, Convention
from .spec import Attention, DenseFFN, GatedFFN, LatentAttention, ModelSpec, MoEFFN, Norm

Part = Literal["embedding", "layers", "final", "head"]
Recompute = Literal["none", "selective", "full"]
RECOMPUTE = ("none", "selective", "full")

# Elementwise FLOPs per element, one per arithmetic step of the textbook formula, a transcendental
# (exp, erf, tanh) counting one. These are estimates by construction and never enter the matmul figure.
ACTIVATION_OPS = {
    "identity": 0,
    "relu": 1,  # max(0, x)
    "relu2": 2,  # max(0, x)²
    "tanh": 1,
    "sigmoid": 4,  # 1 / (1 + exp(-x)): negate, exp, add, divide
    "silu": 5,  # x · sigmoid(x)
    "gelu": 5,  # 0.5 · x · (1 + erf(x / √2)): divide, erf, add, two multiplies
    "gelu_tanh": 9,  # 0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³)))
}
SOFTMAX_OPS = 6  # per score: scale by 1/√d, max, subtract, exp, sum, divide
ROTARY_OPS = 3  # per rotated element: x·cos + rotate(x)·sin
RESIDUAL_ADDS = 2  # per layer and model-width element: one after attention, one after the FFN


def norm_ops(norm: Norm, width: int) -> int:
    """Elementwise FLOPs of one norm over ``width`` elements."""
    # LayerNorm: mean (add), centre (sub), variance (mul, add), scale (mul) = 5; RMSNorm: square, add, scale = 3.
    base = 5 if norm.kind == "layernorm" else 3
    return width * (base + int(norm.affine) + int(norm.has_bias))


@dataclass(frozen=True)
class Term:
    """One tensor (or one operation without parameters) of the model, all its instances together."""

    name: str
    role: str  # see conventions.py
    part: Part
    shape: tuple[int, ...] = ()  # one instance
    numel: int = 0  # parameters of one instance
    count: int = 1  # instances in the model (layers × copies per layer)
    active_count: int = 1  # instances one token passes through (top_k of the experts)
    macs: int = 0  # forward multiply-adds per token, all instances (core: the full square)
    elementwise: int = 0  # forward elementwise FLOPs per token, all instances
    scores: int = 0  # attention score elements per token (softmax terms only)
    heads: int = 1  # matrices per instance in a per-head view (q, k, v)
    tied: bool = False  # the unembedding shares the token embedding's parameters
    layers: tuple[int, int] | None = None  # [first, stop) for terms inside the stack


@dataclass
class _Emitter:
    part: Part
    layers: tuple[int, int] | None = None
    out: list[Term] = field(default_factory=list)

    def term(self, name: str, role: str, shape: tuple[int, ...] = (), copies: int = 1, active: int | None = None,
             *, numel: int | None = None, **kw) -> None:
        if numel is None:
            numel = prod(shape) if shape else 0
        active = copies if active is None else active
        self.out.append(Term(name, role, self.part, shape, numel, copies, active, layers=self.layers, **kw))

    def linear(self, name: str, d_in: int, d_out: int, bias: bool, copies: int, active: int | None = None,
               heads: int = 1) -> None:
        """nn.Linear(d_in, d_out): a (d_out, d_in) weight and an optional bias."""
        active = copies if active is None else active
        self.term(f"{name}.weight", "weight", (d_out, d_in), copies, active, macs=active * d_in * d_out, heads=heads)
        if bias:
            self.term(f"{name}.bias", "bias", (d_out,), copies, active, elementwise=active * d_out)

    def norm(self, name: str, norm: Norm, width: int, copies: int) -> None:
        if copies:
            numel = width * (int(norm.affine) + int(norm.has_bias))
            self.term(name, "norm", (width,), copies, numel=numel, elementwise=copies * norm_ops(norm, width))

    def op(self, name: str, elementwise: int, **kw) -> None:
        self.term(name, "op", elementwise=elementwise, **kw)


def _ffn(e: _Emitter, prefix: str, d: int, ffn: DenseFFN | GatedFFN, copies: int, active: int) -> None:
    """Dense: down(act(up x)); gated: down(act(gate x) ⊙ up x) (Shazeer 2020, eq. 5-6)."""
    f = ffn.width(d)
    if isinstance(ffn, GatedFFN):
        e.linear(f"{prefix}gate", d, f, ffn.bias, copies, active)
    e.linear(f"{prefix}up", d, f, ffn.bias, copies, active)
    e.op(f"{prefix}act", active * f * ACTIVATION_OPS[ffn.activation])
    if isinstance(ffn, GatedFFN):
        e.op(f"{prefix}gate_product", active * f)
    e.linear(f"{prefix}down", f, d, ffn.bias, copies, active)


def _attention(e: _Emitter, spec: ModelSpec, attn: Attention | LatentAttention, n: int, seq_len: int) -> None:
    d, h = spec.d_model, attn.n_heads
    if isinstance(attn, LatentAttention):
        _latent_projections(e, spec, attn, n)
    else:
        kv, hd = attn.kv_heads, attn.head_size(d)
        e.linear("attn.q", d, h * hd, attn.qkv_bias, n, heads=h)
        e.linear("attn.k", d, kv * hd, attn.qkv_bias, n, heads=kv)
        e.linear("attn.v", d, kv * hd, attn.qkv_bias, n, heads=kv)
        if attn.qk_norm != "none":
            # "head": one norm over head_dim shared by all heads (Qwen3); "full": over all heads' width (OLMo2).
            q_width, k_width = (hd, hd) if attn.qk_norm == "head" else (h * hd, kv * hd)
            numel = int(spec.norm.affine) + int(spec.norm.has_bias)
            for name, width, total in (("attn.q_norm", q_width, h * hd), ("attn.k_norm", k_width, kv * hd)):
                e.term(name, "norm", (width,), n, numel=width * numel, elementwise=n * norm_ops(spec.norm, total))
        if spec.positions == "rotary":
            e.op("attn.rotary", n * ROTARY_OPS * (h + kv) * attn.rotated(d))
    qk, vd = attn.head_size(d), attn.value_size(d)
    # Each token's query meets seq_len keys in every head; grouped K/V heads are shared, not fewer products.
    e.term("attn.scores", "core", (h, seq_len, qk), n, numel=0, macs=n * h * seq_len * qk)
    scores = n * h * seq_len
    e.op("attn.softmax", SOFTMAX_OPS * scores + (scores if spec.positions == "alibi" else 0), scores=scores)
    e.term("attn.values", "core", (h, seq_len, vd), n, numel=0, macs=n * h * seq_len * vd)
    o_bias = attn.bias if isinstance(attn, LatentAttention) else attn.o_bias
    e.linear("attn.o", h * vd, d, o_bias, n)


def _latent_projections(e: _Emitter, spec: ModelSpec, attn: LatentAttention, n: int) -> None:
    """MLA's projections as DeepSeek-V2 computes them in training (arXiv:2405.04434 eqs. 9-17, and
    DeepseekV2Attention in transformers): the latents are expanded, not absorbed into the query."""
    d, h, r = spec.d_model, attn.n_heads, attn.qk_rope_head_dim
    qk = attn.qk_nope_head_dim + r
    if attn.q_lora_rank is None:
        e.linear("attn.q", d, h * qk, False, n, heads=h)
    else:
        e.linear("attn.q_a", d, attn.q_lora_rank, attn.bias, n)
        e.norm("attn.q_a_norm", spec.norm, attn.q_lora_rank, n)
        e.linear("attn.q_b", attn.q_lora_rank, h * qk, False, n, heads=h)
    e.linear("attn.kv_a", d, attn.kv_lora_rank + r, attn.bias, n)  # the latent and the shared rotary key
    e.norm("attn.kv_a_norm", spec.norm, attn.kv_lora_rank, n)
    e.linear("attn.kv_b", attn.kv_lora_rank, h * (attn.qk_nope_head_dim + attn.v_head_dim), False, n, heads=h)
    if spec.positions == "rotary":
        e.op("attn.rotary", n * ROTARY_OPS * (h + 1) * r)  # every query head and the one shared key


def _layers(e: _Emitter, spec: ModelSpec, attn: Attention, ffn, n: int, seq_len: int) -> None:
    d = spec.d_model
    e.norm("norms", spec.norm, d, spec.norm.per_layer * n)
    _attention(e, spec, attn, n, seq_len)
    if isinstance(ffn, MoEFFN):
        e.linear("ffn.router", d, ffn.n_experts, ffn.router_bias, n)
        e.op("ffn.router_softmax", n * SOFTMAX_OPS * ffn.n_experts)
        _ffn(e, "ffn.experts.", d, ffn.expert, ffn.n_experts * n, ffn.top_k * n)
        e.op("ffn.combine", n * 2 * ffn.top_k * d)  # scale each chosen expert's output, add it in
        if ffn.shared is not None:
            copies = ffn.n_shared_experts * n
            _ffn(e, "ffn.shared.", d, ffn.shared, copies, copies)
            if ffn.shared_gate:  # Qwen2MoeSparseMoeBlock: sigmoid(shared_expert_gate(x)) scales the shared output
                e.linear("ffn.shared_gate", d, 1, False, n)
                e.op("ffn.shared_gate_scale", n * (ACTIVATION_OPS["sigmoid"] + d))  # one gate value, d products
            e.op("ffn.shared_add", copies * d)
    else:
        _ffn(e, "ffn.", d, ffn, n, n)
    e.op("residual", n * RESIDUAL_ADDS * d)


def terms(spec: ModelSpec, seq_len: int) -> list[Term]:
    """Every tensor and operation of one forward pass at ``seq_len``, in model order."""
    d, v = spec.d_model, spec.vocab_size
    emb = _Emitter("embedding")
    # A lookup has no multiply-adds; macs records the one-hot matmul that Chinchilla's accounting charges.
    emb.term("embed.weight", "tied" if spec.tie_embeddings else "token", (v, d), macs=v * d)
    if spec.positions == "learned":
        emb.term("pos_embed.weight", "position", (spec.context_length, d), elementwise=d)
    if spec.embedding_norm:
        emb.norm("embed_norm", spec.norm, d, 1)
    out = emb.out
    for first, n, attn, ffn in spec.groups():
        e = _Emitter("layers", (first, first + n))
        _layers(e, spec, attn, ffn, n, seq_len)
        out += e.out
    fin = _Emitter("final")
    if spec.norm.final:
        fin.norm("final_norm", spec.norm, d, 1)
    head = _Emitter("head")
    head.term("lm_head.weight", "head", (v, d), macs=v * d, tied=spec.tie_embeddings)
    if spec.lm_head_bias:
        head.term("lm_head.bias", "bias", (v,), elementwise=v)
    return out + fin.out + head.out


@dataclass(frozen=True)
class Row:
    """A term as a convention counts it."""

    name: str
    role: str
    part: Part
    layers: tuple[int, int] | None
    shape: tuple[int, ...]
    count: int
    params: int
    active: int
    matrices: int
    flops: int  # forward matmul FLOPs per token
    elementwise: int  # forward elementwise FLOPs per token
    tied: bool = False


def core_flops(t: Term, attention: str) -> int:
    """FLOPs of QKᵀ or AV per token: 2 per multiply-add over the query-key pairs the mode keeps."""
    heads, keys, head_dim = t.shape
    pairs_x2 = {  # twice the keys an average query meets, so every mode stays an exact integer
        "full": 2 * keys,
        "causal": keys + 1,  # query i meets keys 0..i: s(s+1)/2 pairs over s queries
        "half": keys,  # s²/2, as Kaplan et al. and Megatron-LM count the masked square
        "none": 0,
    }[attention]
    return t.count * heads * head_dim * pairs_x2


def _row(t: Term, conv: Convention) -> Row:
    counted = t.role in conv.params and not (t.tied and not conv.untie)
    params = t.numel * t.count if counted else 0
    active = t.numel * t.active_count if counted else 0
    shape, count = t.shape, t.count
    if conv.per_head and t.heads > 1:
        shape, count = (t.shape[0] // t.heads,) + t.shape[1:], t.count * t.heads
    matrices = count if counted and t.role in MATRICES else 0

    if t.role == "core":
        flops = core_flops(t, conv.attention)
    elif conv.flops == "matmul":
        flops = 2 * t.macs if t.role in conv.matmul else 0
    else:
        flops = 2 * active  # 2N: two FLOPs per parameter a token uses

    if conv.elementwise == "ops":
        elementwise = t.elementwise
    elif conv.elementwise == "softmax3":
        elementwise = 3 * t.scores  # Chinchilla: softmax 3·heads·s² per sequence
    else:
        elementwise = 0
    return Row(t.name, t.role, t.part, t.layers, shape, count, params, active, matrices, flops, elementwise,
               tied=t.tied and not conv.untie)


@dataclass(frozen=True)
class Tally:
    """Rows under one convention, with the totals every output shows."""

    model: str
    convention: Convention
    seq_len: int
    batch: int
    recompute: Recompute
    rows: tuple[Row, ...]
    moe: bool

    @property
    def tokens(self) -> int:
        return self.batch * self.seq_len

    def _sum(self, attr: str, where=lambda r: True) -> int:
        return sum(getattr(r, attr) for r in self.rows if where(r))

    @property
    def params(self) -> int:
        return self._sum("params")

    @property
    def embedding(self) -> int:
        """Embedding tables and the unembedding (a tied matrix once)."""
        return self._sum("params", lambda r: r.part in ("embedding", "head"))

    @property
    def non_embedding(self) -> int:
        return self.params - self.embedding

    @property
    def active(self) -> int:
        """Parameters one token uses: top_k of the routed experts, everything else in full."""
        return self._sum("active")

    @property
    def matrices(self) -> int:
        return self._sum("matrices")

    @property
    def flops_per_token(self) -> int:
        return self._sum("flops")

    @property
    def elementwise_per_token(self) -> int:
        return self._sum("elementwise")

    @property
    def forward_flops(self) -> int:
        return self.flops_per_token * self.tokens

    @property
    def elementwise_flops(self) -> int:
        return self.elementwise_per_token * self.tokens

    @property
    def recompute_flops(self) -> int:
        """Forward work run again during the backward pass (Korthikanti et al. 2022)."""
        if self.recompute == "full":
            per_token = self._sum("flops", lambda r: r.part == "layers")
        elif self.recompute == "selective":
            per_token = self._sum("flops", lambda r: r.role == "core")
        else:
            per_token = 0
        return per_token * self.tokens

    @property
    def train_flops(self) -> int:
        """One training step: forward + backward (2 × forward: input and weight gradients) + recomputation."""
        return 3 * self.forward_flops + self.recompute_flops

    def totals(self) -> dict[str, int]:
        return {
            "params": self.params,
            "embedding_params": self.embedding,
            "non_embedding_params": self.non_embedding,
            "active_params": self.active,
            "matrices": self.matrices,
            "forward_flops_per_token": self.flops_per_token,
            "elementwise_flops_per_token": self.elementwise_per_token,
            "forward_flops": self.forward_flops,
            "elementwise_flops": self.elementwise_flops,
            "recompute_flops": self.recompute_flops,
            "train_flops": self.train_flops,
        }


def tally(spec: ModelSpec, *, model: str | None = None, convention: str = DEFAULT, seq_len: int | None = None,
          batch: int = 1, recompute: Recompute = "none") -> Tally:
    """Count ``spec`` under a named convention at ``seq_len`` (default: the model's context) and ``batch``."""
    conv = CONVENTIONS[convention]
    seq_len = spec.context_length if seq_len is None else seq_len
    rows = tuple(r for r in (_row(t, conv) for t in terms(spec, seq_len))
                 if r.params or r.flops or r.elementwise or r.tied)
    moe = any(isinstance(ffn, MoEFFN) for *_, ffn in spec.groups())
    return Tally(model or spec.name or "model", conv, seq_len, batch, recompute, rows, moe)


def merge_layers(rows: tuple[Row, ...]) -> list[Row]:
    """Fold rows of the same name across layer groups; a shape that differs between groups becomes ()."""
    merged: dict[tuple[str, str], Row] = {}
    for r in rows:
        key = (r.part, r.name)
        m = merged.get(key)
        if m is None:
            merged[key] = r
            continue
        layers = None if m.layers is None else (min(m.layers[0], r.layers[0]), max(m.layers[1], r.layers[1]))
        merged[key] = replace(
            m, layers=layers, shape=m.shape if m.shape == r.shape else (), count=m.count + r.count,
            params=m.params + r.params, active=m.active + r.active, matrices=m.matrices + r.matrices,
            flops=m.flops + r.flops, elementwise=m.elementwise + r.elementwise,
        )
    return list(merged.values())
