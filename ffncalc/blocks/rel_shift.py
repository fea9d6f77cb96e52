"""Relative-shift attention (Dai et al. 2020, "Funnel-Transformer: Filtering out Sequential Redundancy for Efficient
Language Processing", Appendix A.2.1; Transformer-XL's relative positions), as transformers instantiates it
(transformers 5.23.0, models/funnel/modeling_funnel.py, ``FunnelRelMultiheadAttention`` with attention_type
"relative_shift").

With h heads of d_h, q without a bias, k and v with biases, and per layer the learned r_w_bias, r_r_bias, r_s_bias
(h × d_h each), r_kernel (d × h × d_h) and seg_embed (2 × h × d_h), over m queries and n keys:

    q, k, v = x_q W_q, x_kv W_k + b_k, x_kv W_v + b_v,  q scaled by 1/√d_h
    content   = (q + r_w_bias) kᵀ                       m × n per head
    r_head    = R r_kernel                              R: the sinusoid embeddings of the layer's relative positions,
                                                        rows × d, once a forward (no batch dimension)
    position  = (q + r_r_bias) r_headᵀ                  m × rows per head, then shifted (a reshape: no arithmetic)
                                                        to m × n
    segments  = (q + r_s_bias) seg_embedᵀ               m × 2 per head, each pair's "same" or "different" score
    out = o(softmax(content + position + segments) v)

The relative positions a layer reads (``FunnelAttentionStructure.relative_pos``): 2n where its queries are its keys,
n + 2m in the first layer of a pooled block (``pooled``), whose queries are its keys mean-pooled by 2, the first
apart (separate_cls, truncate_seq: m = ⌈n / 2⌉). r_head is computed once a forward, whatever the batch: counted once
a sequence (Term.per_sequence), a forward of one sequence as FlopCounterMode measures it (a batch of b shares one).
A pooled layer is given its keys' length: its queries' work is m / n of a key's (Term.positions). Its reference
module pools its input for the queries (``pool``); the layer's residual add and norm are at the queries' length (the
encoder that runs it: parts/funnel.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import Literal

from ..model.schema import SpecError
from ..model.terms import SOFTMAX_OPS
from . import register
from .attention import Attention

UNSUPPORTED = ("gate", "sinks", "window", "chunk", "kv_shared", "k_eq_v", "v_norm", "sub_norm", "qkv_bias", "k_bias")
SEGMENTS = 2  # seg_embed's rows: a pair of tokens of the same segment, or of different ones


def pooled_length(n: int) -> int:
    """Queries pooled from n positions by 2, the first apart (FunnelAttentionStructure.pool_tensor with separate_cls
    and truncate_seq: the first position, then every pair of the n − 1 before the last, a lone one kept): ⌈n / 2⌉;
    transformers pools only a sequence longer than 2."""
    return -(-n // 2) if n > 2 else n


@register
@dataclass(frozen=True)
class RelShiftAttention(Attention):
    """Softmax attention with Transformer-XL relative positions and segment scores (Funnel Transformer)."""

    kind = "rel_shift"
    slot = "attention"
    summary = "relative-shift attention: content, relative-position and segment scores (Dai et al. 2020, Funnel Transformer)"

    o_bias: bool = True  # post_proj
    # queries pooled by 2 from the keys (the first layer of a pooled block, pool_q_only): set by the Funnel encoder
    # (parts/funnel.py) on the layers it runs; a spec cannot state it, as a layer of the model's own stack keeps its length
    pooled: Literal[False] = False

    def lengths(self, seq_len: int) -> tuple[int, int]:
        """(queries, relative positions) of a layer over ``seq_len`` keys."""
        m = pooled_length(seq_len) if self.pooled else seq_len
        shift = 2 if m != seq_len else 1  # FunnelRelMultiheadAttention: shift 2 where the queries are pooled
        return m, seq_len + shift * m

    def check(self, d_model: int) -> None:
        super().check(d_model)
        for name in UNSUPPORTED:
            if getattr(self, name) not in (None, False, "none"):
                raise SpecError((name,), f"{name} is not an option of relative-shift attention")
        if self.qk_norm != "none" or self.softplus_gate != "none" or self.kv_heads != self.n_heads:
            raise SpecError(("n_kv_heads",), "relative-shift attention has as many key heads as query heads, and no norms")
        if self.v_head_dim is not None and self.head_dim is not None and self.v_head_dim != self.head_dim:
            raise SpecError(("v_head_dim",), "relative-shift attention's value heads are as wide as its query heads")

    def describe(self) -> str:
        pooled = ", queries pooled by 2" if self.pooled else ""
        return f"{self.n_heads} heads × {self.head_dim}, relative shift with segment scores{pooled}"

    def terms(self, e, model, seq_len: int) -> None:
        """q on the queries, k and v on the keys (``seq_len`` of them); the relative-position projection once a
        forward; the content, position and segment products and o on the queries."""
        d, h, hd, n = model.d_model, self.n_heads, self.head_dim, e.n
        inner = h * hd
        m, rows = self.lengths(seq_len)
        queries = Fraction(m, seq_len)
        e.linear("attn.q", d, inner, False, n, heads=h, positions=queries)
        e.linear("attn.k", d, inner, True, n, heads=h)
        e.linear("attn.v", d, inner, True, n, heads=h)
        for bias in ("r_w_bias", "r_r_bias", "r_s_bias"):  # each scaled and added to every query
            e.term(f"attn.rel.{bias}", "bias", (h, hd), n, component="attn.rel", elementwise=2 * n * inner, positions=queries)
        # r_head = R r_kernel over the layer's relative positions, once a forward (einsum "td,dnh->tnh")
        e.term(
            "attn.rel.r_kernel.weight",
            "weight",
            (d, h, hd),
            n,
            component="attn.rel",
            macs=n * rows * d * inner,
            positions=Fraction(1, seq_len),
            per_sequence=True,
        )
        # each query's score for a same- and a different-segment key (einsum "bind,snd->bnis")
        e.term(
            "attn.rel.seg_embed.weight",
            "weight",
            (SEGMENTS, h, hd),
            n,
            component="attn.rel",
            macs=n * SEGMENTS * inner,
            positions=queries,
        )
        e.term("attn.scores", "core", (h, seq_len, hd), n, numel=0, macs=n * h * seq_len * hd, positions=queries)
        e.term("attn.positions", "core", (h, rows, hd), n, numel=0, macs=n * h * rows * hd, positions=queries, select="pairs")
        scores = n * h * seq_len
        # the three scores summed and the first position's position and segment scores masked (cls_mask), then softmax
        e.op("attn.softmax", (SOFTMAX_OPS + 4) * scores, scores=scores, positions=queries)
        e.term("attn.values", "core", (h, seq_len, hd), n, numel=0, macs=n * h * seq_len * hd, positions=queries)
        e.linear("attn.o", inner, d, self.o_bias, n, positions=queries)

    def cached_tokens(self, tokens: int) -> int:
        return tokens

    def kept_elements(self, model) -> int:
        """Per token, as its reference module saves it (transformers' order of operations): the input (q's, k's and
        v's), K, V, the query plus each of r_w_bias, r_r_bias and r_s_bias (the content, position and segment
        products' operands) and the heads' output (o's): d + 6·h·d_h. Pooled, per key position: the input, the mean
        pool's input (its copy with the first position repeated), K and V, and at half as many positions (exact for an
        even length) the pooled queries' input (q's) and the four query-side tensors: 2·d + 2·h·d_h + (d + 4·h·d_h) / 2."""
        d, a = model.d_model, self.n_heads * self.head_dim
        return 2 * d + 2 * a + (d + 4 * a) // 2 if self.pooled else d + 6 * a

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        """Bytes a sequence keeps beside ``kept_elements`` (no fused kernel computes these scores: what the module
        saves), 16-bit: the softmax's probabilities (h × m × n), the relative-position embeddings and their
        projection (rows × d and rows × h·d_h, r_head's and the position product's operands) and cls_mask (m × n,
        the position and segment scores' mask), and the segment comparison, one byte a pair (torch.where's
        condition). Eager adds the softmax's dropout (Korthikanti et al.: 5 bytes a score in all)."""
        m, rows = self.lengths(seq_len)
        pairs = m * seq_len
        probabilities = (2 if flash else 5) * self.n_heads * pairs
        return probabilities + 2 * (rows * model.d_model + rows * self.n_heads * self.head_dim + pairs) + pairs

    def tensor_parallel(self, module, rank: int, tp: int):
        raise NotImplementedError("relative-shift attention: no tensor-parallel form here")

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import math

    import torch
    from torch import nn

    from ._torch import Linear, MatMul

    class Weighted(nn.Module):
        """A parameter whose products verify attributes to it: ``weight`` multiplied by what forward is given."""

        weight_flops = True

        def __init__(self, *shape: int):
            super().__init__()
            self.weight = nn.Parameter(torch.zeros(*shape))

        def forward(self, pattern: str, a: torch.Tensor) -> torch.Tensor:
            return torch.einsum(pattern, a, self.weight)

    class Relative(nn.Module):
        """r_w_bias, r_r_bias, r_s_bias, r_kernel and seg_embed: one component (FunnelRelMultiheadAttention's own)."""

        def __init__(self, d: int, h: int, hd: int):
            super().__init__()
            self.r_w_bias = nn.Parameter(torch.zeros(h, hd))
            self.r_r_bias = nn.Parameter(torch.zeros(h, hd))
            self.r_s_bias = nn.Parameter(torch.zeros(h, hd))
            self.r_kernel = Weighted(d, h, hd)
            self.seg_embed = Weighted(SEGMENTS, h, hd)

    def sinusoid(rows: int, d: int, like: torch.Tensor) -> torch.Tensor:
        """The sinusoid embeddings of ``rows`` relative positions (get_position_embeds: sin and cos of each
        position times 10000^(−2i/d))."""
        freq = torch.arange(d // 2, device=like.device, dtype=like.dtype)
        inv = 1 / (10000 ** (freq / (d // 2)))
        pos = torch.arange(rows, 0, -1, device=like.device, dtype=like.dtype) - rows // 2
        angle = pos[:, None] * inv[None]
        return torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1)

    class RelShift(nn.Module):
        def __init__(self, spec: RelShiftAttention, model, causal: bool):
            super().__init__()
            d = model.d_model
            self.spec, self.d = spec, d
            self.heads, self.head_dim = spec.n_heads, spec.head_dim
            inner = spec.n_heads * spec.head_dim
            self.q = Linear(d, inner, bias=False)
            self.k = Linear(d, inner, bias=True)
            self.v = Linear(d, inner, bias=True)
            self.rel = Relative(d, spec.n_heads, spec.head_dim)
            self.scores, self.positions, self.values = MatMul(), MatMul(), MatMul()
            self.o = Linear(inner, d, bias=spec.o_bias)

        def pool(self, x: torch.Tensor, pooled: bool | None = None) -> torch.Tensor:
            """The queries' input: the first position, then the mean of each pair of the rest but the last
            (pool_tensor, mean, separate_cls and truncate_seq); the input itself where the layer is not pooled
            (``pooled``: whether this run pools, default the spec's: a repeated layer's later runs do not)."""
            if not (self.spec.pooled if pooled is None else pooled) or x.shape[1] <= 2:
                return x
            t = torch.cat([x[:, :1], x[:, :-1]], dim=1)
            return nn.functional.avg_pool2d(t[:, None], (2, 1), stride=(2, 1), ceil_mode=True)[:, 0]

        def forward(self, x: torch.Tensor, pooled: bool | None = None) -> torch.Tensor:
            query = self.pool(x, pooled)
            b, m, _ = query.shape
            n = x.shape[1]
            h, hd = self.heads, self.head_dim
            shift = 2 if m != n else 1
            rows = n + shift * m  # as RelShiftAttention.lengths
            scale = 1.0 / math.sqrt(hd)
            q = self.q(query).view(b, m, h, hd) * scale
            k = self.k(x).view(b, n, h, hd).permute(0, 2, 3, 1)  # (b, h, hd, n)
            v = self.v(x).view(b, n, h, hd).transpose(1, 2)  # (b, h, n, hd)
            rel = self.rel
            content = self.scores((q + rel.r_w_bias * scale).transpose(1, 2), k)  # (b, h, m, n)
            r_head = rel.r_kernel("td,dnh->tnh", sinusoid(rows, self.d, x))  # (rows, h, hd)
            position = self.positions((q + rel.r_r_bias * scale).transpose(1, 2), r_head.permute(1, 2, 0))  # (b, h, m, rows)
            # _relative_shift_gather: each query's n keys from its rows, by a reshape
            position = position.reshape(b, h, rows, m)[:, :, shift:, :].reshape(b, h, m, rows - shift)[..., :n]
            cls_mask = nn.functional.pad(x.new_ones(m - 1, n - 1), (1, 0, 1, 0))
            position = position * cls_mask
            segment = rel.seg_embed("bind,snd->bnis", q + rel.r_s_bias * scale)  # (b, h, m, 2)
            same = x.new_ones(b, 1, m, n, dtype=torch.bool)  # every token of one segment (token_type_ids zeros)
            different, alike = torch.split(segment, 1, dim=-1)
            segment = torch.where(same.expand(b, h, m, n), alike.expand(b, h, m, n), different.expand(b, h, m, n)) * cls_mask
            probs = torch.softmax((content + position + segment).float(), dim=-1, dtype=x.dtype)
            out = self.values(probs, v).transpose(1, 2).reshape(b, m, h * hd)
            return self.o(out)

    return RelShift
