"""Compressed convolutional attention (Figliolia et al. 2025, "Compressed Convolutional Attention",
arXiv:2510.04476; ZAYA1: ZayaAttention and ZayaCCAProjection in transformers 5.23.0), softmax attention over
GQA heads whose queries and keys are mixed across neighbouring tokens by two short convolutions.

Per token, with h query heads and g key-value heads of width w (C = (h + g)·w channels):

    q, k    = q_proj x (h·w), k_proj x (g·w)                      biases where attention_bias
    conv    = grouped(depthwise([q; k]))                           two causal Conv1d over the C channels, both with biases:
                                                                   depthwise (kernel t0, groups C), then grouped (kernel t1,
                                                                   groups h + g: each head's w channels mixed, w·t1 each)
    q_res   = (q + k of the head's group) / 2,   k_res = the mean of q_res over each group's h / g heads
    q', k'  = conv's q part + q_res,   conv's k part + k_res
    v       = [v_proj_current x ; v_proj_delayed x of the token before]   g·w/2 each (zero before the first token)
    q', k'  ← √w · q' / ‖q'‖, √w · k' / ‖k'‖ per head, k' × a learned scale per key-value head (ZayaQKNorm.temp)

then rotary positions on the first rotary_dim features, attention as GQA and o_proj. Decoding keeps, beside the
keys and values, the t0 + t1 − 2 latest [q; k] columns the convolutions read and the last token's delayed value.

Counted per token, as the architecture computes it. transformers' torch path (no cache) does more matmul work for
the same outputs: the depthwise convolution over s + t1 − 1 positions (the t1 − 1 before the first token are of
zeros: its bias), and v_proj_delayed once more per sequence on a zero vector (the delayed value before the first
token); the reference module here computes those as the biases they are.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.terms import ROTARY_OPS
from . import Block, register
from .attention import attention_core, softmax_score_bytes

L2_NORM_OPS = 3  # per element: square, sum, and the product by √w / ‖·‖ (its root and division once per head)


@register
@dataclass(frozen=True)
class ConvolutionalAttention(Block):
    """Compressed convolutional attention (CCA, ZAYA1): convolved queries and keys, a delayed half of the values."""

    kind = "cca"
    slot = "attention"
    summary = "compressed convolutional attention: queries and keys through two short convolutions (ZAYA1, 2025)"

    n_heads: Positive
    n_kv_heads: Positive
    head_dim: Positive | None = None  # default: d_model / n_heads
    time0: Positive = 2  # the depthwise convolution's kernel (ZayaConfig.cca_time0)
    time1: Positive = 2  # the grouped convolution's kernel (cca_time1)
    bias: bool = False  # on q, k, both halves of v and o (attention_bias); the convolutions always have one
    rotary_dim: Positive | None = None  # features of each head that rotary positions turn; default: all
    window: Positive | None = None  # sliding window: each query meets the last `window` keys, its own included

    def resolve(self, d_model: int) -> ConvolutionalAttention:
        return self if self.head_dim is not None else replace(self, head_dim=d_model // self.n_heads)

    def check(self, d_model: int) -> None:
        if self.n_heads % self.n_kv_heads:
            raise SpecError(("n_kv_heads",), f"{self.n_heads} query heads do not group evenly into {self.n_kv_heads}")
        if self.head_dim is None and d_model % self.n_heads:
            raise SpecError(("head_dim",), f"d_model {d_model} is not a multiple of {self.n_heads} heads: state head_dim")
        if (self.n_kv_heads * (self.head_dim or d_model // self.n_heads)) % 2:
            raise SpecError(("head_dim",), "the values are two halves of n_kv_heads × head_dim: it must be even")

    @property
    def channels(self) -> int:
        return (self.n_heads + self.n_kv_heads) * self.head_dim

    def head_count(self) -> int:
        return self.n_heads

    def describe(self) -> str:
        text = f"CCA {self.n_heads} heads, {self.n_kv_heads} KV × {self.head_dim}, conv {self.time0}·{self.time1}"
        return text + (f", window {self.window:,}" if self.window else "")

    def facts(self) -> dict[str, object]:
        return {"heads": f"{self.n_heads}/{self.n_kv_heads}"}

    def terms(self, e, model, seq_len: int) -> None:
        d, n, h, g, w = model.d_model, e.n, self.n_heads, self.n_kv_heads, self.head_dim
        c = self.channels
        e.linear("attn.q", d, h * w, self.bias, n, heads=h)
        e.linear("attn.k", d, g * w, self.bias, n, heads=g)
        # Conv1d(C, C, t0, groups=C): weight (C, 1, t0); Conv1d(C, C, t1, groups=h + g): weight (C, w, t1);
        # per token t0 and w·t1 multiply-adds per channel (the causal outputs, one per token)
        e.term("attn.conv_depthwise.weight", "weight", (c, 1, self.time0), n, macs=n * c * self.time0)
        e.term("attn.conv_depthwise.bias", "bias", (c,), n, elementwise=n * c)
        e.term("attn.conv_grouped.weight", "weight", (c, w, self.time1), n, macs=n * c * w * self.time1)
        e.term("attn.conv_grouped.bias", "bias", (c,), n, elementwise=n * c)
        # q_res: + and × ½ per query feature; k_res: the mean of g-sized groups (one op per query feature);
        # the residuals added to the convolved q and k
        e.op("attn.residuals", n * (3 * h * w + c))
        e.linear("attn.v_current", d, g * w // 2, self.bias, n)
        e.linear("attn.v_delayed", d, g * w // 2, self.bias, n)
        e.op("attn.l2_norm", n * (L2_NORM_OPS * c + 3 * (h + g)))  # per vector: root, clamp, √w / ‖·‖
        e.term("attn.key_scale", "norm", (g,), n, elementwise=n * g * w)
        if model.positions == "rotary":
            e.op("attn.rotary", n * ROTARY_OPS * (h + g) * min(self.rotary_dim or w, w))
        attention_core(e, model, h, w, w, seq_len, self.bias, window=self.window)

    def cached_tokens(self, tokens: int) -> int:
        return tokens if self.window is None else min(tokens, self.window)

    def cache_elements(self, model) -> int:
        """The keys and values of every KV head."""
        return 2 * self.n_kv_heads * self.head_dim

    def state_elements(self, model) -> int:
        """The t0 + t1 − 2 latest [q; k] columns the convolutions read, and the last token's delayed value."""
        return (self.time0 + self.time1 - 2) * self.channels + self.n_kv_heads * self.head_dim // 2

    def kept_elements(self, model) -> int:
        """What ZAYA1's attention keeps a token in training with each convolution a kernel that keeps its input as
        given (causal-conv1d's CausalConv1dFn: ``x, weight, bias``) and flash attention over the KV heads; the
        residuals, the L2 norms and the key scale as ZayaAttention computes them (no fused kernel of theirs):

        - the input (d);
        - the convolutions' inputs: [q; k] and the depthwise output (C each);
        - each L2 norm its input (q' h·w, k' g·w), the norm, the reciprocal and the scaled reciprocal a head
          (3 a head, the clamp reading the norm); the key scale's operand, the normed k' (g·w);
        - the flash kernel's Q (h·w), K and V at the KV heads (g·w each) and its output (h·w, o's input), and a
          log-sum-exp a query and head (``score_bytes``):

        d + 2·C + 3·h·w + 4·g·w + 3·(h + g)."""
        h, g, w = self.n_heads, self.n_kv_heads, self.head_dim
        return model.d_model + 2 * self.channels + 3 * h * w + 4 * g * w + 3 * (h + g)

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

    class Conv(nn.Module):
        """nn.Conv1d's parameters (weight (C, C / groups, K), bias (C,)) run without padding on (B, C, T): T − K + 1
        outputs. verify attributes its FLOPs to its weight."""

        weight_flops = True

        def __init__(self, channels: int, kernel: int, groups: int):
            super().__init__()
            self.groups = groups
            self.weight = nn.Parameter(torch.empty(channels, channels // groups, kernel))
            self.bias = nn.Parameter(torch.zeros(channels))
            if self.weight.device.type != "meta":
                nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return F.conv1d(x, self.weight, self.bias, groups=self.groups)

    class CCAModule(nn.Module):
        def __init__(self, spec: ConvolutionalAttention, model, causal: bool):
            super().__init__()
            d, h, g, w = model.d_model, spec.n_heads, spec.n_kv_heads, spec.head_dim
            self.heads, self.kv_heads, self.head_dim, self.t0, self.t1 = h, g, w, spec.time0, spec.time1
            self.positions, self.causal, self.rotary, self.window = model.positions, causal, spec.rotary_dim, spec.window
            self.q = Linear(d, h * w, bias=spec.bias)
            self.k = Linear(d, g * w, bias=spec.bias)
            self.conv_depthwise = Conv(spec.channels, spec.time0, spec.channels)
            self.conv_grouped = Conv(spec.channels, spec.time1, h + g)
            self.v_current = Linear(d, g * w // 2, bias=spec.bias)
            self.v_delayed = Linear(d, g * w // 2, bias=spec.bias)
            self.key_scale = nn.Parameter(torch.ones(g))
            self.scores = MatMul()
            self.values = MatMul()
            self.o = Linear(h * w, d, bias=spec.bias)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            h, g, w = self.heads, self.kv_heads, self.head_dim
            q, k = self.q(x), self.k(x)
            # the depthwise convolution over the tokens (zeros before the first), then the grouped one, which reads
            # t1 - 1 depthwise outputs before the first token: of zeros, its bias alone
            from . import _fused

            if _fused.active():  # each convolution a kernel keeping its input as given, no padded copy
                dw, gr = self.conv_depthwise, self.conv_grouped
                qk = _fused.causal_conv(torch.cat([q, k], dim=-1), dw.weight, dw.bias, dw.groups)
                qk = _fused.causal_conv(qk, gr.weight, gr.bias, gr.groups, dw.bias)
            else:
                qk = self.conv_depthwise(F.pad(torch.cat([q, k], dim=-1).transpose(1, 2), (self.t0 - 1, 0)))
                before = self.conv_depthwise.bias[None, :, None].expand(b, -1, self.t1 - 1)
                qk = self.conv_grouped(torch.cat([before, qk], dim=-1)).transpose(1, 2)  # (B, s, C)
            q, k = q.view(b, s, h, w), k.view(b, s, g, w)
            q_res = (q + k.repeat_interleave(h // g, dim=2)) * 0.5
            k_res = q_res.view(b, s, g, h // g, w).mean(dim=-2)
            q = qk[..., : h * w].reshape(b, s, h, w) + q_res
            k = qk[..., h * w :].reshape(b, s, g, w) + k_res
            delayed = self.v_delayed(x)  # each token's for the next; zeros (the projection's bias) before the first
            first = self.v_delayed.bias if self.v_delayed.bias is not None else delayed.new_zeros(delayed.shape[-1])
            delayed = torch.cat([first.expand(b, 1, -1), delayed[:, :-1]], dim=1)
            v = torch.cat([self.v_current(x), delayed], dim=-1).view(b, s, g, w)
            q = q * (w**0.5 / q.norm(dim=-1, keepdim=True).clamp_min(1e-6))
            k = k * (w**0.5 / k.norm(dim=-1, keepdim=True).clamp_min(1e-6)) * self.key_scale[:, None]
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # (B, heads, s, w)
            if self.positions == "rotary":
                q, k = rotate(q, self.rotary), rotate(k, self.rotary)
            if not _fused.active():  # the flash kernel reads K and V at their own heads
                k, v = k.repeat_interleave(h // g, dim=1), v.repeat_interleave(h // g, dim=1)
            out = attend(self, q, k, v).transpose(1, 2).reshape(b, s, h * w)
            return self.o(out)

    return CCAModule
