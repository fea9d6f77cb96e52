"""Multi-head attention with separate q/k/v/o projections; grouped (GQA) and multi-query (MQA) through
``n_kv_heads`` (Vaswani et al. 2017; Ainslie et al. 2023; Shazeer 2019)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Literal

from ..model.schema import NonNegative, Positive, SpecError
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, ROTARY_OPS, SOFTMAX_OPS
from . import Block, register

SOFTPLUS_OPS = 3  # log(1 + exp(x)): exp, add, log


def attention_core(
    e,
    model,
    heads: int,
    qk: int,
    vd: int,
    seq_len: int,
    o_bias: bool,
    window: int | None = None,
    chunk: int | None = None,
    ahead: int | None = None,
) -> None:
    """QKᵀ, softmax, AV and the output projection, shared by every softmax-attention kind.

    Each token's query meets seq_len keys in every head as eager attention computes it (the executed view);
    a causal kernel meets only the keys before it, within ``window`` if the layer has one (the useful
    view: analysis/count.py core_flops). Grouped K/V heads are shared, not fewer products.
    """
    n = e.n
    bound = {"window": window, "chunk": chunk, "ahead": ahead}
    e.term("attn.scores", "core", (heads, seq_len, qk), n, numel=0, macs=n * heads * seq_len * qk, **bound)
    scores = n * heads * seq_len
    e.op("attn.softmax", SOFTMAX_OPS * scores + (scores if model.positions == "alibi" else 0), scores=scores)
    e.term("attn.values", "core", (heads, seq_len, vd), n, numel=0, macs=n * heads * seq_len * vd, **bound)
    e.linear("attn.o", heads * vd, model.d_model, o_bias, n)


def softmax_score_bytes(heads: int, seq_len: int, flash: bool = False) -> int:
    """Bytes per sequence a training forward keeps of softmax attention. Eager: the softmax output (2), its
    dropout mask (1) and the dropout output (2) per score, 5·a·s² (Korthikanti et al. 2022 §4.1). Flash: no
    scores at all, only the fp32 log-sum-exp of each query row in each head, 4·a·s (Dao 2023,
    FlashAttention-2 §3.1.1: the backward pass recomputes the scores from it)."""
    return 4 * heads * seq_len if flash else 5 * heads * seq_len * seq_len


@register
@dataclass(frozen=True)
class Attention(Block):
    """Multi-head attention with separate q/k/v/o projections; GQA/MQA through ``n_kv_heads``."""

    kind = "mha"
    slot = "attention"
    summary = "softmax attention, q/k/v/o projections, grouped K/V heads (MHA, GQA, MQA)"

    n_heads: Positive
    n_kv_heads: Positive | None = None  # default: n_heads (MHA); 1 is MQA
    head_dim: Positive | None = None  # default: d_model / n_heads
    qkv_bias: bool = False
    o_bias: bool = False
    # head: one norm over head_dim shared by every head (Qwen3); each_head: over head_dim, its own weights in
    # every head (StableLM, Cohere); full: one norm over all heads' width (OLMo 2)
    qk_norm: Literal["none", "head", "each_head", "full"] = "none"
    # false: the q/k norms are the model's norm without its bias (StableLmLayerNormPerHead: LayerNorm(head_dim,
    # bias=False) in each head beside the model's biased LayerNorms)
    qk_norm_bias: bool = True
    # the q/k norms' learned weight (MUSE Glimmer's qk_norm, MuseGlimmerRMSNorm(with_scale=False), has none)
    qk_norm_affine: bool = True
    # the q/k norms LayerNorms with a weight and a bias whatever the model's norm (Chameleon's ChameleonLayerNorm of
    # (heads, head_dim) beside its RMSNorms)
    qk_layernorm: bool = False
    rotary_dim: Positive | None = None  # features of each head that rotary positions turn; default: all
    sinks: bool = False  # a learned logit per head that joins every softmax and takes no value (gpt-oss)
    # q's projection doubled: each head's query and a gate, sigmoid(gate) ⊙ the head's output before o (Qiu et al.
    # 2025, "Gated Attention for Large Language Models", arXiv:2505.06708; Qwen3-Next: Qwen3NextAttention)
    gate: bool = False
    # sliding window: each query attends the last `window` keys, its own included (Mistral's sliding_window,
    # Gemma 2/3's local layers); the layer caches no more than that many positions
    window: Positive | None = None
    # in an encoder's layer with a window (|i − j| ≤ window), the keys after each query where fewer (Moonshine
    # Streaming's lookahead: sliding_windows [16, 4], 15 keys before the query and 3 after; [16, 0], none after)
    ahead: NonNegative | None = None
    # chunked: each query attends only the keys of its own chunk of this many positions, up to its own
    # (Llama 4's attention_chunk_size); the layer caches no more than one chunk
    chunk: Positive | None = None
    rope: bool = True  # false: this layer takes no rotary positions (the NoPE layers of SmolLM3, Llama 4, Cohere 2)
    # each value head's width where it differs from the query and key heads' (MiMo-V2-Flash: 128 beside 192);
    # the heads' output, and so o's input, is n_heads × v_head_dim
    v_head_dim: Positive | None = None
    # no v projection: the values are the key projection's output, taken before k's norm and rotary (Gemma 4's
    # global layers, attention_k_eq_v)
    k_eq_v: bool = False
    # no k or v projection, k norm or cache of its own: the layer attends the keys and values an earlier layer
    # made (Gemma 3n's and Gemma 4's last num_kv_shared_layers)
    kv_shared: bool = False
    v_norm: bool = False  # an RMS norm without weights over each value head (Gemma 4's v_norm)
    # an RMS norm without weights over each head's output before the gates and o (MUSE Spark's o_norm:
    # MuseSparkTextAttention, MuseSparkRMSNorm(with_scale=False))
    o_norm: bool = False
    # a separate bias-free projection of the layer's input, softplus(g) scaling the heads' output before o:
    # one gate per head (head) or one per output feature (element) (Laguna: g_proj, gating)
    softplus_gate: Literal["none", "head", "element"] = "none"
    # a norm of the model's kind over the heads' output (n_heads × v_head_dim) before o (BitNet's attn_sub_norm)
    sub_norm: bool = False
    # the separate gate's activation (softplus_gate): softplus (Laguna) or sigmoid (AFMoE's and Beam's gate_proj,
    # LFM3's g_proj)
    gate_activation: Literal["softplus", "sigmoid"] = "softplus"
    # one learned bias per head added to the separate gate before its activation, the same for each of the head's
    # gates (Beam's gate_bias)
    gate_bias: bool = False
    # the separate gate's projection with a bias of its own, one per gate (HRM-Text's gate_proj, biased with
    # attention_bias: HrmTextAttention)
    gate_proj_bias: bool = False
    # the key projection's bias where it differs from qkv_bias (Whisper's k_proj has none: a bias on every key adds
    # the same logit to each of a query's scores, which the softmax cancels)
    k_bias: bool | None = None

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads if self.n_kv_heads is not None else self.n_heads

    def head_count(self) -> int:
        return self.n_heads

    def kv_head_count(self) -> int:
        return self.kv_heads

    @property
    def value_dim(self) -> int:
        """Each value head's width (resolved: an integer)."""
        return self.v_head_dim if self.v_head_dim is not None else self.head_dim

    @property
    def gate_width(self) -> int:
        """Outputs of the softplus gate's projection: one per head, or one per output feature."""
        return {"none": 0, "head": self.n_heads, "element": self.n_heads * self.value_dim}[self.softplus_gate]

    def resolve(self, d_model: int) -> Attention:
        head = self.head_dim if self.head_dim is not None else d_model // self.n_heads
        return replace(
            self,
            n_kv_heads=self.kv_heads,
            head_dim=head,
            rotary_dim=min(self.rotary_dim or head, head),
            v_head_dim=self.v_head_dim if self.v_head_dim is not None else head,
        )

    def _check_heads(self, d_model: int) -> None:
        if self.head_dim is None and d_model % self.n_heads:
            raise SpecError(("n_heads",), f"{self.n_heads} heads do not divide d_model {d_model} (state head_dim to allow it)")
        if self.n_heads % self.kv_heads:
            raise SpecError(("n_kv_heads",), f"{self.kv_heads} KV heads do not divide {self.n_heads} query heads")

    def describe(self) -> str:
        window = f", window {self.window:,}" if self.window else f", chunks of {self.chunk:,}" if self.chunk else ""
        window += f" ({self.ahead:,} ahead)" if self.ahead is not None else ""
        window += "" if self.rope else ", no rotary"
        if self.v_head_dim is not None and self.v_head_dim != self.head_dim:
            window += f", values × {self.v_head_dim}"
        window += ", shared KV" if self.kv_shared else ", K = V" if self.k_eq_v else ""
        window += f", {self.gate_activation} gate per {self.softplus_gate}" if self.softplus_gate != "none" else ""
        window += " with a bias per head" if self.gate_bias and self.softplus_gate != "none" else ""
        window += ", sub-norm" if self.sub_norm else ""
        window += ", o-norm" if self.o_norm else ""
        return f"{self.n_heads} heads, {self.kv_heads} KV × {self.head_dim}{window}" + (", gated" if self.gate else "")

    def facts(self) -> dict[str, object]:
        return {"heads": f"{self.n_heads}/{self.kv_heads}"}

    def terms(self, e, model, seq_len: int) -> None:
        d, h, kv, hd, vd, n = model.d_model, self.n_heads, self.kv_heads, self.head_dim, self.value_dim, e.n
        own = not self.kv_shared  # keys and values of its own
        e.linear("attn.q", d, (2 if self.gate else 1) * h * hd, self.qkv_bias, n, heads=h)  # gate: query and gate
        if own:
            e.linear("attn.k", d, kv * hd, self.qkv_bias if self.k_bias is None else self.k_bias, n, heads=kv)
        if own and not self.k_eq_v:
            e.linear("attn.v", d, kv * vd, self.qkv_bias, n, heads=kv)
        if self.qk_norm != "none":
            q_width, k_width = (hd, hd) if self.qk_norm == "head" else (h * hd, kv * hd)
            e.norm("attn.q_norm", self.qk_norm_kind(model.norm), q_width, n, total=h * hd)
            if own:
                e.norm("attn.k_norm", self.qk_norm_kind(model.norm), k_width, n, total=kv * hd)
        if self.v_norm and own:  # square, add, scale per element; no weights
            e.op("attn.v_norm", n * 3 * kv * vd)
        if self.o_norm:  # square, add, scale per element of each head's output; no weights
            e.op("attn.o_norm", n * 3 * h * vd)
        if model.positions == "rotary" and self.rope:
            e.op("attn.rotary", n * ROTARY_OPS * (h + (kv if own else 0)) * self.rotary_dim)
        if self.sinks:  # one more logit in each head's softmax (gpt-oss: GptOssAttention.sinks)
            e.term("attn.sinks", "bias", (h,), n, elementwise=n * h * SOFTMAX_OPS)
        if self.gate:  # sigmoid(gate) ⊙ each head's output: a sigmoid and a multiply per element
            e.op("attn.gate", n * (ACTIVATION_OPS["sigmoid"] + 1) * h * hd)
        if self.softplus_gate != "none":  # softplus(g) (or sigmoid) per gate, then a multiply per output element
            e.linear("attn.g", d, self.gate_width, self.gate_proj_bias, n)
            if self.gate_bias:  # its head's bias added to every gate
                e.term("attn.g_bias", "bias", (h,), n, elementwise=n * self.gate_width)
            act = SOFTPLUS_OPS if self.gate_activation == "softplus" else ACTIVATION_OPS["sigmoid"]
            e.op("attn.g_scale", n * (act * self.gate_width + h * vd))
        if self.sub_norm:
            e.norm("attn.sub_norm", model.norm, h * vd, n)
        attention_core(e, model, h, hd, vd, seq_len, self.o_bias, self.window, self.chunk, self.ahead)

    def qk_norm_kind(self, norm):
        """The q/k norms: the model's norm, or without its bias (qk_norm_bias false); a LayerNorm (qk_layernorm)."""
        if self.qk_layernorm:
            norm = Norm(kind="layernorm")
        if not self.qk_norm_affine:  # square, add, scale per element; no weight, no bias
            return replace(norm, affine=False, bias=False, layer_bias=False)
        return norm if self.qk_norm_bias else replace(norm, bias=False)

    def check(self, d_model: int) -> None:
        if self.window is not None and self.chunk is not None:
            raise SpecError(("chunk",), "a layer attends a sliding window or chunks, not both")
        if self.ahead is not None and self.window is None:
            raise SpecError(("ahead",), "ahead bounds the keys after a query within an encoder's window: give window too")
        if self.qk_norm == "none" and not self.qk_norm_bias:
            raise SpecError(("qk_norm_bias",), "qk_norm_bias describes the q/k norms: qk_norm must not be none")
        if self.qk_norm == "none" and not self.qk_norm_affine:
            raise SpecError(("qk_norm_affine",), "qk_norm_affine describes the q/k norms: qk_norm must not be none")
        if self.qk_norm == "none" and self.qk_layernorm:
            raise SpecError(("qk_layernorm",), "qk_layernorm describes the q/k norms: qk_norm must not be none")
        self._check_heads(d_model)
        vd = self.v_head_dim
        head = self.head_dim if self.head_dim is not None else d_model // self.n_heads
        if self.gate and vd is not None and vd != head:
            raise SpecError(("gate",), "the query-doubling gate needs value heads as wide as the query heads")
        if self.k_eq_v and vd is not None and vd != head:
            raise SpecError(("k_eq_v",), "values that are the keys have the keys' head_dim, not v_head_dim")
        if self.softplus_gate == "none" and (self.gate_bias or self.gate_proj_bias or self.gate_activation != "softplus"):
            raise SpecError(
                ("softplus_gate",),
                "gate_activation, gate_bias and gate_proj_bias describe the separate gate: softplus_gate must be head or element",
            )
        if self.kv_shared and (self.k_eq_v or self.v_norm):
            raise SpecError(
                ("kv_shared",),
                "a layer that reads another layer's keys and values projects and normalises none of its own (k_eq_v, v_norm)",
            )

    def cached_tokens(self, tokens: int) -> int:
        bound = self.window or self.chunk
        return tokens if bound is None else min(tokens, bound)

    def cache_elements(self, model) -> int:
        """K and V of every KV head; none in a layer that reads another layer's."""
        return 0 if self.kv_shared else self.kv_heads * (self.head_dim + self.value_dim)

    def kept_elements(self, model) -> int:
        """The input (for q/k/v's weight gradients), Q and K (for the scores' gradient), V (for AV's), and
        the heads' output (for o's): d + 2·(h + kv)·head_dim (Korthikanti et al. 2022 §4.1, GQA-aware), with V
        and the output at v_head_dim; K and V not again in a layer that reads another layer's. A gate keeps
        its input and the heads' ungated output as well (for the sigmoid's and the product's gradients): 2·h·head_dim
        more; a softplus gate its projection's output and the ungated output; a sub-norm its output as well (o's
        input), h·v_head_dim more. A norm as a fused kernel keeps its input and an fp32 statistic a row (the inverse
        RMS; a LayerNorm's mean too: 2 or 4 16-bit elements): the q/k norms their inputs, (h + kv)·head_dim, and a
        row a head (over all heads: a row each), a sub-norm its statistic (its input is the heads' output, kept); the
        weightless value norm (v_norm) its input, V before it (kv·v_head_dim; with k_eq_v and a k norm, k_norm's input
        already), and its statistic a KV head."""
        h, kv, hd, vd = self.n_heads, self.kv_heads, self.head_dim, self.value_dim
        gate = 2 * h * hd if self.gate else 0
        if self.softplus_gate != "none":
            gate += self.gate_width + h * vd
        keys = 0 if self.kv_shared else kv * (hd + vd)
        stat = 4 if model.norm.kind.startswith("layernorm") else 2  # fp32 inverse RMS (and mean) a row
        sub = h * vd + stat if self.sub_norm else 0
        sub += h * vd + 2 * h if self.o_norm else 0  # its input (the heads' output) and an fp32 statistic a head
        norms = 0
        if self.qk_norm != "none":
            own = 0 if self.kv_shared else kv
            rows = (h + own) if self.qk_norm in ("head", "each_head") else 1 + (1 if own else 0)
            qk_stat = 4 if self.qk_layernorm else stat
            norms = (h + own) * hd + rows * qk_stat
        if self.v_norm and not self.kv_shared:  # the weightless value norm's input, V before it, and its statistic;
            shared = self.k_eq_v and self.qk_norm != "none"  # with k_eq_v that input is k_norm's, kept already
            norms += (0 if shared else kv * vd) + 2 * kv
        return model.d_model + h * (hd + vd) + keys + gate + sub + norms

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        return softmax_score_bytes(self.n_heads, seq_len, flash)

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)

    def tensor_parallel(self, module, rank: int, tp: int):
        """Whole heads a device (Megatron-LM's ParallelAttention): q, k and v by their outputs, o by its inputs; a
        grouped K/V head stays with its query heads (the heads and the K/V heads both split evenly)."""
        from ._torch import split_linear

        reasons = [
            (self.kind != "mha", f"{self.kind} attention"),
            (
                bool(self.n_heads % tp or self.kv_heads % tp),
                f"{self.n_heads} heads and {self.kv_heads} K/V heads over tp {tp}: not evenly",
            ),
            (self.gate or self.softplus_gate != "none", "output gates"),
            (self.qk_norm in ("each_head", "full"), f"qk_norm {self.qk_norm}"),
            (
                self.sinks or self.sub_norm or self.o_norm or self.kv_shared or module.positions == "alibi",
                "sinks, a sub-norm or o-norm, shared KV or ALiBi",
            ),
        ]
        for wrong, what in reasons:
            if wrong:
                raise NotImplementedError(f"{what}: no tensor-parallel form here")
        module.q = split_linear(module.q, rank, tp, "outputs")
        module.k = split_linear(module.k, rank, tp, "outputs")
        if hasattr(module, "v"):
            module.v = split_linear(module.v, rank, tp, "outputs")
        module.o = split_linear(module.o, rank, tp, "inputs")
        module.heads, module.kv_heads = self.n_heads // tp, self.kv_heads // tp
        return module


@cache
def _module():
    import torch
    from torch import nn
    from torch.nn import functional as F

    from ._fused import active as fused
    from ._fused import norm as _fused_norm
    from ._torch import HeadNorm, Linear, MatMul, attend, make_norm, rotate

    class MultiHeadAttention(nn.Module):
        def __init__(self, spec: Attention, model, causal: bool):
            super().__init__()
            d = model.d_model
            self.heads, self.kv_heads, self.head_dim = spec.n_heads, spec.kv_heads, spec.head_dim
            self.positions, self.causal, self.rotary = model.positions, causal, spec.rotary_dim
            self.both = model.bidirectional  # every query meets every key (within the window on both sides)
            self.gate, self.window, self.chunk, self.rope = spec.gate, spec.window, spec.chunk, spec.rope
            self.ahead = spec.ahead
            self.value_dim, self.own, self.v_norm = spec.value_dim, not spec.kv_shared, spec.v_norm
            self.o_norm = spec.o_norm
            self.q = Linear(d, (2 if spec.gate else 1) * self.heads * self.head_dim, bias=spec.qkv_bias)
            if self.own:
                self.k = Linear(d, self.kv_heads * self.head_dim, bias=spec.qkv_bias if spec.k_bias is None else spec.k_bias)
            if self.own and not spec.k_eq_v:
                self.v = Linear(d, self.kv_heads * self.value_dim, bias=spec.qkv_bias)
            self.qk_norm = spec.qk_norm
            qk = spec.qk_norm_kind(model.norm)
            if spec.qk_norm == "each_head":
                self.q_norm = HeadNorm(qk, self.heads, self.head_dim)
                if self.own:
                    self.k_norm = HeadNorm(qk, self.kv_heads, self.head_dim)
            elif spec.qk_norm != "none":
                per_head = spec.qk_norm == "head"
                self.q_norm = make_norm(qk, self.head_dim if per_head else self.heads * self.head_dim)
                if self.own:
                    self.k_norm = make_norm(qk, self.head_dim if per_head else self.kv_heads * self.head_dim)
            if spec.sinks:
                self.sinks = nn.Parameter(torch.zeros(self.heads))
            self.softplus_gate = spec.softplus_gate
            if spec.softplus_gate != "none":
                self.g = Linear(d, spec.gate_width, bias=spec.gate_proj_bias)
                if spec.gate_bias:
                    self.g_bias = nn.Parameter(torch.zeros(self.heads))
            self.gate_activation = spec.gate_activation
            self.scores = MatMul()
            self.values = MatMul()
            if spec.sub_norm:
                self.sub_norm = make_norm(model.norm, self.heads * self.value_dim)
            self.o = Linear(self.heads * self.value_dim, d, bias=spec.o_bias)

        def _split(self, x: torch.Tensor, heads: int, dim: int | None = None) -> torch.Tensor:
            b, s, _ = x.shape
            return x.view(b, s, heads, dim or self.head_dim).transpose(1, 2)  # (B, heads, s, head_dim)

        def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            """The heads' outputs (B, heads, s, value_dim) from their projected, normalised and rotated queries,
            keys and values; a kind that selects its keys (an indexer over ``x``) replaces this step alone."""
            return attend(self, q, k, v)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            q = self.q(x)
            if self.gate:  # each head's query, then its gate (Qwen3NextAttention: view (.., h, 2·hd), chunk in two)
                q, gate = q.view(b, s, self.heads, 2 * self.head_dim).chunk(2, dim=-1)
                q, gate = q.reshape(b, s, -1), gate.reshape(b, s, -1)
            if self.own:
                k = self.k(x)
                v = self.v(x) if hasattr(self, "v") else k  # k_eq_v: the values are the raw key projection
                if self.qk_norm == "full":
                    k = self.k_norm(k)
                k, v = self._split(k, self.kv_heads), self._split(v, self.kv_heads, self.value_dim)
                if self.qk_norm in ("head", "each_head"):
                    k = self.k_norm(k)
                if self.v_norm and fused():  # a fused weightless RMSNorm: its input and an fp32 statistic a head
                    v = _fused_norm(v, None, None, torch.finfo(torch.float32).eps, False)
                elif self.v_norm:
                    v = F.rms_norm(v, (self.value_dim,))
                if self.positions == "rotary" and self.rope:
                    k = rotate(k, self.rotary)
            else:  # an earlier layer's keys and values, which this module cannot see: a stand-in of their shape
                k = x.new_zeros(b, self.kv_heads, s, self.head_dim)
                v = x.new_zeros(b, self.kv_heads, s, self.value_dim)
            if self.qk_norm == "full":
                q = self.q_norm(q)
            q = self._split(q, self.heads)
            if self.qk_norm in ("head", "each_head"):
                q = self.q_norm(q)
            if self.positions == "rotary" and self.rope:
                q = rotate(q, self.rotary)
            own_heads = type(self).attend is MultiHeadAttention.attend or getattr(self, "fused_kv_heads", False)
            if self.kv_heads != self.heads and not (fused() and own_heads):
                group = self.heads // self.kv_heads  # grouped K/V heads serve several query heads each (a flash
                k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)  # kernel takes them as they are)
            out = self.attend(q, k, v, x).transpose(1, 2)  # (B, s, heads, value_dim)
            if self.o_norm:  # MUSE Spark: each head's output normalised, no weight, before the gates
                out = F.rms_norm(out, (self.value_dim,))
            if self.softplus_gate != "none":  # Laguna: one gate per head, broadcast over its features, or one each
                g = self.g(x).view(b, s, self.heads, -1)
                if hasattr(self, "g_bias"):  # Beam: a bias per head, the same for each of its gates
                    g = g + self.g_bias[:, None]
                out = out * (F.softplus(g) if self.gate_activation == "softplus" else torch.sigmoid(g))
            out = out.reshape(b, s, self.heads * self.value_dim)
            if self.gate:
                out = out * torch.sigmoid(gate)
            if hasattr(self, "sub_norm"):
                out = self.sub_norm(out)
            return self.o(out)

    return MultiHeadAttention
