"""Dynamic mask attention (Shi et al. 2025, "Trainable Dynamic Mask Sparse Attention", arXiv:2508.02124, §3), as
transformers instantiates it in Doge (transformers 5.23.0, models/doge/modeling_doge.py, ``DogeAttention`` and the
residual scales of ``DogeDecoderLayer``).

Softmax attention whose mask is computed from the values: with h query heads and kv key/value heads of d_h,

    q, k, v = q_norm(q_proj(x)), k_norm(k_proj(x)), v_proj(x)       RMSNorms over d_h (one weight each), rotary
    δ       = exp(A ⊙ softplus(dt_proj(v)))                        dt_proj: kv·d_h -> kv; A: one scalar per KV head
    mask    = δ of each key, added to every query's scores; past keep_window_size keys, only each query's top
              keep_window_size keys stay unmasked
    out     = o_proj(softmax(q kᵀ/√d_h + mask) v)

Eager attention computes the whole square (the exact convention); a kernel that skips masked keys computes, for
query i, min(i + 1, keep_window_size) of them, which is what a sliding window of that size costs (the causal
convention: the window of the core terms). The cache keeps every key: which ones a later query keeps depends on it.
DogeDecoderLayer also holds two learned scales of d_model, on the residual around each sublayer (input_residual,
post_attention_residual); they are counted here, with the mixer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.terms import ROTARY_OPS, SOFTMAX_OPS
from . import Block, register
from .attention import softmax_score_bytes

SOFTPLUS_OPS = 3  # log(1 + exp(x)): exp, add, log


@register
@dataclass(frozen=True)
class DynamicMaskAttention(Block):
    """Softmax attention with a dynamic mask from the values (Doge), and the layer's two residual scales."""

    kind = "dynamic_mask"
    slot = "attention"
    summary = "dynamic mask attention: a per-key mask from the values, top keep_window keys (Shi et al. 2025, Doge)"

    n_heads: Positive
    n_kv_heads: Positive | None = None  # default n_heads
    head_dim: Positive | None = None  # default d_model / n_heads
    bias: bool = False  # on q, k, v, o and dt_proj (DogeConfig.attention_bias)
    keep_window: Positive = 2048  # keys each query keeps past this many (DogeConfig.keep_window_size)
    residual_scales: bool = True  # DogeDecoderLayer.input_residual and post_attention_residual

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads if self.n_kv_heads is not None else self.n_heads

    def head_count(self) -> int:
        return self.n_heads

    def kv_head_count(self) -> int:
        return self.kv_heads

    def resolve(self, d_model: int) -> DynamicMaskAttention:
        return replace(
            self, n_kv_heads=self.kv_heads, head_dim=self.head_dim if self.head_dim is not None else d_model // self.n_heads
        )

    def check(self, d_model: int) -> None:
        if self.head_dim is None and d_model % self.n_heads:
            raise SpecError(("n_heads",), f"{self.n_heads} heads do not divide d_model {d_model} (state head_dim to allow it)")
        if self.n_heads % self.kv_heads:
            raise SpecError(("n_kv_heads",), f"{self.kv_heads} KV heads do not divide {self.n_heads} query heads")

    def describe(self) -> str:
        return f"dynamic mask {self.n_heads} heads, {self.kv_heads} KV × {self.head_dim}, keeps {self.keep_window:,}"

    def facts(self) -> dict[str, object]:
        return {"heads": f"{self.n_heads}/{self.kv_heads}"}

    def terms(self, e, model, seq_len: int) -> None:
        d, h, kv, hd, n, w = model.d_model, self.n_heads, self.kv_heads, self.head_dim, e.n, self.keep_window
        e.linear("attn.q", d, h * hd, self.bias, n, heads=h)
        e.linear("attn.k", d, kv * hd, self.bias, n, heads=kv)
        e.linear("attn.v", d, kv * hd, self.bias, n, heads=kv)
        e.norm("attn.q_norm", model.norm, hd, n, total=h * hd)
        e.norm("attn.k_norm", model.norm, hd, n, total=kv * hd)
        if model.positions == "rotary":
            e.op("attn.rotary", n * ROTARY_OPS * (h + kv) * hd)
        e.linear("attn.dt_proj", kv * hd, kv, self.bias, n)
        # δ = exp(A ⊙ softplus(dt)): a softplus, a multiply and an exp per KV head; then δ added to each query's
        # scores (one add per score)
        e.term("attn.A", "bias", (kv,), n, elementwise=n * kv * (SOFTPLUS_OPS + 2))
        e.term("attn.scores", "core", (h, seq_len, hd), n, numel=0, macs=n * h * seq_len * hd, window=w)
        scores = n * h * seq_len
        e.op("attn.softmax", (SOFTMAX_OPS + 1) * scores, scores=scores)
        e.term("attn.values", "core", (h, seq_len, hd), n, numel=0, macs=n * h * seq_len * hd, window=w)
        e.linear("attn.o", h * hd, d, self.bias, n)
        if self.residual_scales:  # a multiply per element on each sublayer's residual
            for name in ("input_residual", "post_attention_residual"):
                e.term(f"attn.{name}", "bias", (d,), n, elementwise=n * d, component="attn.residual_scales")

    def cache_elements(self, model) -> int:
        """K and V of every KV head, for every position: which keys a later query keeps depends on them."""
        return 2 * self.kv_heads * self.head_dim

    def kept_elements(self, model) -> int:
        """What Doge's training keeps a token with flash-dmattn (FlashDMAttnFunc keeps Q, K, V, the bias, the output
        and the log-sum-exp; the bias δ a key and KV head, broadcast over the queries), the q/k norms fused:

        - the input (d);
        - q's and k's projections, the norms' inputs (h·d_h + kv·d_h), and their fp32 statistics a head (2 16-bit
          elements each, a LayerNorm's mean too: 4);
        - v (kv·d_h: dt_proj's input and the kernel's V, one tensor); dt_proj's output, softplus's input (kv); the
          softplus's output, A's product's operand (kv); δ, exp's output and the kernel's bias (kv);
        - the kernel's Q and K (rotated) and its output, o's input (h·d_h + kv·d_h + h·d_h), and a log-sum-exp a
          query and head (``score_bytes``)."""
        h, kv, hd = self.n_heads, self.kv_heads, self.head_dim
        stat = 4 if model.norm.kind.startswith("layernorm") else 2
        return model.d_model + 3 * h * hd + 3 * kv * hd + stat * (h + kv) + 3 * kv

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        return softmax_score_bytes(self.n_heads, seq_len, flash)

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import torch
    from torch import nn
    from torch.nn import functional as F

    from ._torch import Linear, MatMul, attend, make_norm, rotate

    class DynamicMask(nn.Module):
        """Attention with the dynamic mask; the window stands for the top keep_window keys each query keeps (the
        causal view computes those only; the exact view computes the square, as eager attention does)."""

        def __init__(self, spec: DynamicMaskAttention, model, causal: bool):
            super().__init__()
            d, h, kv, hd = model.d_model, spec.n_heads, spec.kv_heads, spec.head_dim
            self.heads, self.kv_heads, self.head_dim = h, kv, hd
            self.positions, self.causal, self.window = model.positions, causal, spec.keep_window
            self.q = Linear(d, h * hd, bias=spec.bias)
            self.k = Linear(d, kv * hd, bias=spec.bias)
            self.v = Linear(d, kv * hd, bias=spec.bias)
            self.q_norm = make_norm(model.norm, hd)
            self.k_norm = make_norm(model.norm, hd)
            self.dt_proj = Linear(kv * hd, kv, bias=spec.bias)
            self.A = nn.Parameter(torch.zeros(kv))
            self.scores = MatMul()
            self.values = MatMul()
            self.o = Linear(h * hd, d, bias=spec.bias)
            if spec.residual_scales:
                self.input_residual = nn.Parameter(torch.ones(d))
                self.post_attention_residual = nn.Parameter(torch.ones(d))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            from . import _fused

            if _fused.active():
                return self.flash(x)
            b, s, _ = x.shape
            h, kv, hd = self.heads, self.kv_heads, self.head_dim
            q = self.q_norm(self.q(x).view(b, s, h, hd)).transpose(1, 2)
            k = self.k_norm(self.k(x).view(b, s, kv, hd)).transpose(1, 2)
            v = self.v(x)
            delta = torch.exp(self.A * F.softplus(self.dt_proj(v)))  # (B, s, kv): one mask value per key
            v = v.view(b, s, kv, hd).transpose(1, 2)
            if self.positions == "rotary":
                q, k = rotate(q), rotate(k)
            if kv != h:
                k, v = k.repeat_interleave(h // kv, dim=1), v.repeat_interleave(h // kv, dim=1)
            # the mask's values change no product: the reference attends within the window it stands for
            out = attend(self, q, k, v * delta.transpose(1, 2).repeat_interleave(h // kv, dim=1)[..., None])
            return self.o(out.transpose(1, 2).reshape(b, s, h * hd))

        def flash(self, x: torch.Tensor) -> torch.Tensor:
            """As Doge trains with flash-dmattn: DogeAttention's δ = exp(A ⊙ softplus(dt_proj(v))) a key and KV head,
            added to every query's scores inside the kernel (FlashDMAttnFunc's bias, broadcast over the queries), K
            and V at their own heads; keep_window keys a query, as the eager form's window stands for them."""
            from . import _fused

            b, s, _ = x.shape
            h, kv, hd = self.heads, self.kv_heads, self.head_dim
            q = self.q_norm(self.q(x).view(b, s, h, hd)).transpose(1, 2)
            k = self.k_norm(self.k(x).view(b, s, kv, hd)).transpose(1, 2)
            v = self.v(x)
            delta = torch.exp(self.A * F.softplus(self.dt_proj(v)))  # (B, s, kv)
            v = v.view(b, s, kv, hd).transpose(1, 2)
            if self.positions == "rotary":
                q, k = rotate(q), rotate(k)
            window = self.window if self.window < s else None
            out = _fused.bias_attention(q, k, v, delta.transpose(1, 2)[:, :, None, :], causal=self.causal, window=window)
            return self.o(out.transpose(1, 2).reshape(b, s, h * hd))

    return DynamicMask
