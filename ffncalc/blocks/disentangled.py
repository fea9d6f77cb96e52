"""Disentangled attention (He et al. 2021, "DeBERTa: Decoding-enhanced BERT with Disentangled Attention", §3.1;
DeBERTa-v3, He et al. 2023), as transformers instantiates it (transformers 5.23.0,
models/deberta_v2/modeling_deberta_v2.py, ``DisentangledSelfAttention``).

Each query meets each key through three scores: content to content (q·kᵀ), content to position (c2p: the query
against the key's relative position's embedding projected to a key) and position to content (p2c: the key against
the query's relative position's embedding projected to a query). With h heads of d_h, a span of P relative positions
each way (position_buckets, else max_relative_positions) and the stack's table of 2P relative embeddings R (the
encoder's rel_embeddings, ``parts/relative_embeddings.py``):

    q, k, v = x W_q + b_q, x W_k + b_k, x W_v + b_v
    K_r = R W_k + b_k, Q_r = R W_q + b_q         share_att_key: the layer's own key and query projections (both,
                                                 whatever pos_att_type); else pos_key_proj (c2p) and pos_query_proj
                                                 (p2c), d -> h·d_h with biases
    c2p = q K_rᵀ  (s × 2P per head),  p2c = k Q_rᵀ  (s × 2P per head),  each gathered at the clamped relative
    position of every (query, key) pair (no arithmetic)
    A = softmax((q kᵀ + c2p + p2cᵀ) / √(d_h · (1 + |pos_att_type|)));  out = o(A v)

The projections of R are done once a forward, whatever its length (R has no batch dimension): per sequence, their
work is 1/s of a token's; c2p and p2c are 2P keys per query and head, in every view. A span beyond the sequence is
computed whole, as transformers computes it. DeBERTa (v1, models/deberta/modeling_deberta.py) projects only the
2 · min(s, P) rows around the table's middle that a sequence of s reaches, with pos_proj (no bias) and pos_q_proj
(``span_to_length``, ``pos_k_bias``), and never shares the layer's projections.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

from ..model.schema import Positive, SpecError
from . import register
from .attention import Attention

UNSUPPORTED = ("gate", "sinks", "window", "chunk", "kv_shared", "k_eq_v", "v_norm", "sub_norm")


@register
@dataclass(frozen=True)
class DisentangledAttention(Attention):
    """Softmax attention with content-to-position and position-to-content scores over relative positions (DeBERTa)."""

    kind = "disentangled"
    slot = "attention"
    summary = "disentangled attention: content and relative-position scores, c2p and p2c (He et al. 2021, DeBERTa)"

    span: Positive = 256  # relative positions each way: position_buckets, else max_relative_positions
    c2p: bool = True  # content to position (pos_att_type "c2p")
    p2c: bool = True  # position to content (pos_att_type "p2c")
    share_key: bool = True  # the layer's q and k projections project the relative embeddings (share_att_key)
    pos_k_bias: bool = True  # pos_key_proj's bias (DeBERTa's pos_proj has none)
    pos_q_bias: bool = True
    # DeBERTa (v1): the span is min(s, span), the rows of the table around its middle that a sequence of s reaches
    # (compute_attention_span)
    span_to_length: bool = False

    def rows(self, seq_len: int) -> int:
        """The relative embeddings a forward over ``seq_len`` tokens projects: 2 × its span."""
        return 2 * (min(seq_len, self.span) if self.span_to_length else self.span)

    def check(self, d_model: int) -> None:
        super().check(d_model)
        for name in UNSUPPORTED:
            if getattr(self, name) not in (None, False, "none"):
                raise SpecError((name,), f"{name} is not an option of disentangled attention")
        if self.softplus_gate != "none" or self.qk_norm != "none":
            raise SpecError(("qk_norm",), "query and key norms and gates are not options of disentangled attention")
        if self.kv_heads != self.n_heads:
            raise SpecError(("n_kv_heads",), "disentangled attention projects as many key heads as query heads")

    def describe(self) -> str:
        scores = "+".join(k for k in ("c2p", "p2c") if getattr(self, k)) or "no position scores"
        shared = ", shared q/k projections" if self.share_key else ""
        return f"{self.n_heads} heads × {self.head_dim}, disentangled ({scores}) over 2×{self.span:,} relative positions{shared}"

    def terms(self, e, model, seq_len: int) -> None:
        super().terms(e, model, seq_len)
        d, h, hd, n, rows = model.d_model, self.n_heads, self.head_dim, e.n, self.rows(seq_len)
        start = len(e.out)
        # the relative embeddings' projections, once a forward: shared, the q and k projections' weights again
        # (stored there: no parameters here); else pos_key_proj and pos_query_proj, d -> h·d_h with biases
        for proj, used, own, bias in (("k", self.c2p, "pos_k", self.pos_k_bias), ("q", self.p2c, "pos_q", self.pos_q_bias)):
            if self.share_key:
                e.term(
                    f"attn.{proj}_pos",
                    "weight",
                    (h * hd, d),
                    n,
                    numel=h * hd * d,
                    stored=0,
                    macs=n * rows * d * h * hd,
                    component=f"attn.{proj}",
                )
                e.op(f"attn.{proj}_pos.bias", n * rows * h * hd)
            elif used:
                e.term(f"attn.{own}.weight", "weight", (h * hd, d), n, active=0, macs=n * rows * d * h * hd)
                if bias:
                    e.term(f"attn.{own}.bias", "bias", (h * hd,), n, active=0, elementwise=n * rows * h * hd)
        once = Fraction(1, seq_len)
        e.out[start:] = [replace(t, positions=once, per_sequence=True) for t in e.out[start:]]
        # each query's 2P relative positions' keys (c2p), each key's 2P positions' queries (p2c), in every view
        for name, used in (("attn.c2p", self.c2p), ("attn.p2c", self.p2c)):
            if used:
                e.term(name, "core", (h, rows, hd), n, numel=0, macs=n * h * rows * hd, select="pairs")
        scores = (int(self.c2p) + int(self.p2c)) * n * h * seq_len
        if scores:
            e.op("attn.position_scores", 2 * scores)  # each gathered score scaled and added

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        """Flash: what FlashDeBERTa's kernel keeps a sequence beside Q, K, V and the output (``kept_elements``):
        the fp32 log-sum-exp a query and head, and each query's content-to-position and each key's
        position-to-content scores over the 2P relative positions (16-bit, h × 2P a token each, computed before the
        kernel: 2P grows with the sequence where the span follows it); and once a sequence the relative embeddings
        the position projections read (2P × d) and their projections the scores' products read (2P × h·d_h each).
        Eager: the softmax's scores, as multi-head attention's."""
        if not flash:
            return super().score_bytes(model, seq_len, flash)
        rows, used = self.rows(seq_len), int(self.c2p) + int(self.p2c)
        a = self.n_heads * self.head_dim
        per_sequence = rows * (model.d_model if used else 0) + used * rows * a
        return 4 * self.n_heads * seq_len + 2 * used * seq_len * self.n_heads * rows + 2 * per_sequence

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import math

    import torch
    from torch import nn

    from ._torch import Linear, MatMul, softmax
    from .attention import _module as attention_module

    class Project(MatMul):
        """The relative embeddings through another module's linear layer (share_att_key): its FLOPs its own."""

        def forward(self, rel: torch.Tensor, linear: nn.Linear) -> torch.Tensor:  # type: ignore[override]
            return nn.functional.linear(rel, linear.weight, linear.bias)

    class Disentangled(attention_module()):
        """Multi-head attention's projections and output (blocks/attention.py) with DeBERTa's scores. The relative
        embeddings are a stand-in of their shape (2P × d, the stack's table lives beside the layers); the relative
        position of query i and key j is i − j, clamped to the span (DeBERTa's log buckets change no shape)."""

        def __init__(self, spec: DisentangledAttention, model, causal: bool):
            super().__init__(spec, model, causal)
            d, inner = model.d_model, spec.n_heads * spec.head_dim
            self.span, self.use_c2p, self.use_p2c, self.share = spec.span, spec.c2p, spec.p2c, spec.share_key
            self.d = d
            if spec.share_key:
                self.k_pos, self.q_pos = Project(), Project()
            else:
                if spec.c2p:
                    self.pos_k = Linear(d, inner, bias=spec.pos_k_bias)
                if spec.p2c:
                    self.pos_q = Linear(d, inner, bias=spec.pos_q_bias)
            self.rows = spec.rows
            if spec.c2p:
                self.c2p = MatMul()
            if spec.p2c:
                self.p2c = MatMul()

        def _heads(self, t: torch.Tensor) -> torch.Tensor:
            return t.view(t.shape[0], self.heads, self.head_dim).transpose(0, 1)  # (heads, 2P, d_h)

        def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            s = q.shape[2]
            rows = self.rows(s)
            span = rows // 2
            rel = x.new_zeros(rows, self.d)
            if self.share:
                pos_k, pos_q = self.k_pos(rel, self.k), self.q_pos(rel, self.q)
            else:
                pos_k = self.pos_k(rel) if self.use_c2p else None
                pos_q = self.pos_q(rel) if self.use_p2c else None
            factor = 1 + int(self.use_c2p) + int(self.use_p2c)
            scale = 1.0 / math.sqrt(self.head_dim * factor)
            from . import _fused

            if _fused.active():  # the position scores computed before the kernel, which keeps them (FlashDeBERTa)
                c2p = self.c2p(q, self._heads(pos_k).transpose(-2, -1)) if self.use_c2p else None
                p2c = self.p2c(k, self._heads(pos_q).transpose(-2, -1)) if self.use_p2c else None
                return _fused.disentangled(q, k, v, c2p, p2c, scale, span)
            scores = self.scores(q, k.transpose(-2, -1)) * scale
            i = torch.arange(s, device=q.device)
            relative = i[:, None] - i[None, :]  # query i, key j
            shape = (q.shape[0], self.heads, s, s)
            if self.use_c2p:
                c2p = self.c2p(q, self._heads(pos_k).transpose(-2, -1))  # (B, heads, s, 2P)
                index = (relative + span).clamp(0, rows - 1).expand(shape)
                scores = scores + torch.gather(c2p, -1, index) * scale
            if self.use_p2c:
                p2c = self.p2c(k, self._heads(pos_q).transpose(-2, -1))  # (B, heads, s keys, 2P)
                index = (-relative + span).clamp(0, rows - 1).expand(shape)
                scores = scores + torch.gather(p2c, -1, index).transpose(-2, -1) * scale
            return self.values(softmax(scores, None), v)

    return Disentangled
