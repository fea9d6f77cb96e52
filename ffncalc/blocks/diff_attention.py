"""Differential attention (Ye et al. 2024, "Differential Transformer", arXiv:2410.05258, §2.1), as transformers
instantiates it in DiffLlama (transformers 5.23.0, models/diffllama/modeling_diffllama.py, ``DiffLlamaAttention``).

With h query heads of width d_h, kv key/value heads (kv even), and the query heads in pairs (i, i + h/2):

    q, k, v = q_proj(x), k_proj(x), v_proj(x)       h·d_h, kv·d_h, kv·d_h   (rotary on q and k)
    A_i     = softmax(q_i k_iᵀ / √d_h)               one map per query head: h maps
    V_i     = [v_a ; v_b]                           each head's values are two value heads side by side, 2·d_h wide:
                                                    a from the first half of the value heads, b from the second
    o_i     = A_i V_i − λ · A_{i+h/2} V_{i+h/2}      i < h/2: the difference of the pair's two maps
    λ       = exp(λ_q1·λ_k1) − exp(λ_q2·λ_k2) + λ_init (four learned vectors of d_h per layer, once per forward)
    out     = o_proj((1 − λ_init) · rmsnorm(o))     an RMSNorm without weights over each pair's 2·d_h

so that the products are those of h heads of attention with keys of d_h and values of 2·d_h (the paper's DiffAttn,
eq. 1: two maps per differential head, each times values twice as wide). transformers computes it as two attention
calls sharing q and k, one per half of the values: the same value products, and the scores computed twice (its
comment: the second call's weights are "mathematically identical"); the scores are counted once here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.spec import Norm
from ..model.terms import ROTARY_OPS, SOFTMAX_OPS
from . import Block, register
from .attention import softmax_score_bytes

GROUP_NORM = Norm("rmsnorm", affine=False)  # DiffLlamaAttention.groupnorm: nn.RMSNorm(2·head_dim, no weight)


@register
@dataclass(frozen=True)
class DiffAttention(Block):
    """Differential attention: h softmax maps in pairs, each pair's difference times values of 2·head_dim."""

    kind = "diff_attention"
    slot = "attention"
    summary = "differential attention: the difference of two softmax maps per head pair (Ye et al. 2024)"

    n_heads: Positive
    n_kv_heads: Positive | None = None  # default n_heads; must be even (the values are split in two halves)
    head_dim: Positive | None = None  # default d_model / n_heads
    qkv_bias: bool = False
    o_bias: bool = False

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads if self.n_kv_heads is not None else self.n_heads

    def head_count(self) -> int:
        return self.n_heads

    def kv_head_count(self) -> int:
        return self.kv_heads

    def resolve(self, d_model: int) -> DiffAttention:
        return replace(
            self, n_kv_heads=self.kv_heads, head_dim=self.head_dim if self.head_dim is not None else d_model // self.n_heads
        )

    def check(self, d_model: int) -> None:
        if self.head_dim is None and d_model % self.n_heads:
            raise SpecError(("n_heads",), f"{self.n_heads} heads do not divide d_model {d_model} (state head_dim to allow it)")
        if self.n_heads % 2:
            raise SpecError(("n_heads",), f"{self.n_heads} query heads do not pair up")
        if self.kv_heads % 2:
            raise SpecError(("n_kv_heads",), f"{self.kv_heads} KV heads do not split into two halves of values")
        if self.n_heads % self.kv_heads:
            raise SpecError(("n_kv_heads",), f"{self.kv_heads} KV heads do not divide {self.n_heads} query heads")

    def describe(self) -> str:
        return f"differential {self.n_heads} heads, {self.kv_heads} KV × {self.head_dim}"

    def facts(self) -> dict[str, object]:
        return {"heads": f"diff {self.n_heads}/{self.kv_heads}"}

    def terms(self, e, model, seq_len: int) -> None:
        d, h, kv, hd, n = model.d_model, self.n_heads, self.kv_heads, self.head_dim, e.n
        e.linear("attn.q", d, h * hd, self.qkv_bias, n, heads=h)
        e.linear("attn.k", d, kv * hd, self.qkv_bias, n, heads=kv)
        e.linear("attn.v", d, kv * hd, self.qkv_bias, n, heads=kv)
        # λ_q1, λ_k1, λ_q2, λ_k2: λ is computed once per forward from them, no work per token
        for name in ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2"):
            e.term(f"attn.{name}", "bias", (hd,), n, component="attn.lambda")
        if model.positions == "rotary":
            e.op("attn.rotary", n * ROTARY_OPS * (h + kv) * hd)
        # one map per query head over d_h, each times its values of 2·d_h
        e.term("attn.scores", "core", (h, seq_len, hd), n, numel=0, macs=n * h * seq_len * hd)
        scores = n * h * seq_len
        e.op("attn.softmax", SOFTMAX_OPS * scores, scores=scores)
        e.term("attn.values", "core", (h, seq_len, 2 * hd), n, numel=0, macs=n * h * seq_len * 2 * hd)
        # o_i = A_i V_i − λ·A_j V_j over the pair's 2·d_h: a multiply and a subtract; the weightless RMSNorm over
        # each pair's 2·d_h and the scale by 1 − λ_init: one multiply more; h/2 pairs of 2·d_h are h·d_h elements
        e.op("attn.difference", n * 2 * h * hd)
        e.op("attn.group_norm", n * (GROUP_NORM.ops(h * hd) + h * hd))
        e.linear("attn.o", h * hd, d, self.o_bias, n)

    def cache_elements(self, model) -> int:
        """K and V of every KV head."""
        return 2 * self.kv_heads * self.head_dim

    def kept_elements(self, model) -> int:
        """As one flash kernel runs it (``_fused._Flash``: keys of d_h, values of 2·d_h, K and V at their kv heads):
        the input (d); Q (h·d_h) and K (kv·d_h); the values each KV head reads, its half beside its partner's
        (kv · 2·d_h, as the kernel takes them); the kernel's output (h · 2·d_h: λ's gradient reads the second of
        each pair, the difference's the first); the difference, the RMSNorm's input (h/2 · 2·d_h) and its fp32
        inverse RMS a row (h/2 rows, 2 elements each: h); and the scaled norm, o's input (h·d_h):
        d + 5·h·d_h + 3·kv·d_h + h. λ, a scalar a layer, is no token's (the log-sum-exp is in ``score_bytes``)."""
        h, kv, hd = self.n_heads, self.kv_heads, self.head_dim
        return model.d_model + 5 * h * hd + 3 * kv * hd + h

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        return softmax_score_bytes(self.n_heads, seq_len, flash)

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import math

    import torch
    from torch import nn
    from torch.nn import functional as F

    from ._torch import Linear, MatMul, attend, rotate

    class DifferentialAttention(nn.Module):
        def __init__(self, spec: DiffAttention, model, causal: bool):
            super().__init__()
            d = model.d_model
            self.heads, self.kv_heads, self.head_dim = spec.n_heads, spec.kv_heads, spec.head_dim
            self.positions, self.causal = model.positions, causal
            self.q = Linear(d, self.heads * self.head_dim, bias=spec.qkv_bias)
            self.k = Linear(d, self.kv_heads * self.head_dim, bias=spec.qkv_bias)
            self.v = Linear(d, self.kv_heads * self.head_dim, bias=spec.qkv_bias)
            for name in ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2"):
                setattr(self, name, nn.Parameter(torch.zeros(self.head_dim)))
            self.lambda_init = 0.8 - 0.6 * math.exp(-0.3 * 0)
            self.scores = MatMul()
            self.values = MatMul()
            self.o = Linear(self.heads * self.head_dim, d, bias=spec.o_bias)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            from . import _fused

            b, s, _ = x.shape
            h, kv, hd = self.heads, self.kv_heads, self.head_dim
            q = self.q(x).view(b, s, h, hd).transpose(1, 2)
            k = self.k(x).view(b, s, kv, hd).transpose(1, 2)
            v = self.v(x).view(b, s, kv, hd).transpose(1, 2)
            if self.positions == "rotary":
                q, k = rotate(q), rotate(k)
            # KV head j's values: the j-th of the first half beside the j-th of the second (j mod kv/2)
            first, second = v.chunk(2, dim=1)
            v = torch.cat([first.repeat(1, 2, 1, 1), second.repeat(1, 2, 1, 1)], dim=-1)  # (B, kv, s, 2·hd)
            fused = _fused.active()
            if kv != h and not fused:  # a flash kernel reads K and V at their own heads
                k, v = k.repeat_interleave(h // kv, dim=1), v.repeat_interleave(h // kv, dim=1)
            out = attend(self, q, k, v)  # (B, h, s, 2·hd)
            lam = (
                torch.exp((self.lambda_q1 * self.lambda_k1).sum())
                - torch.exp((self.lambda_q2 * self.lambda_k2).sum())
                + self.lambda_init
            )
            pair, other = out.chunk(2, dim=1)  # heads i and i + h/2
            if fused:  # one fused RMSNorm kernel: its input and an fp32 inverse RMS a row
                normed = _fused.norm(pair - lam * other, None, None, torch.finfo(x.dtype).eps, False)
            else:
                normed = F.rms_norm(pair - lam * other, (2 * hd,))
            out = normed * (1 - self.lambda_init)  # (B, h/2, s, 2·hd)
            return self.o(out.transpose(1, 2).reshape(b, s, h * hd))

    return DifferentialAttention
