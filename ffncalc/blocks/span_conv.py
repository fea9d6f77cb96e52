"""Mixed attention with span-based dynamic convolution (Jiang et al. 2020, "ConvBERT: Improving BERT with Span-based
Dynamic Convolution", §3), as transformers instantiates it (transformers 5.23.0, models/convbert/modeling_convbert.py,
``ConvBertSelfAttention``). With h heads (num_attention_heads / head_ratio) of d_h = d / h / 2, A = h · d_h, and a
kernel of k:

    q, k, v   = x W_q, x W_k, x W_v                                  d -> A each, with biases
    k_s       = pointwise(depthwise(x)) + b                         a separable convolution: depthwise over d
                                                                    channels, k taps (no bias), pointwise d -> A
    kernel    = softmax_k(conv_kernel(k_s ⊙ q))                     A -> h·k with a bias; each head's k weights
    conv      = unfold_k(conv_out(x)) · kernel                      conv_out d -> A with a bias; each head's k
                                                                    neighbours of d_h weighted: d_h × k per head
    out       = o([softmax(q kᵀ / √d_h) v ; conv])                  2A = d -> d with a bias

The products of activations (QKᵀ, AV and the dynamic convolution, k neighbours per head and token) are the core; the
depthwise convolution's k taps per channel are its weight's."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.terms import SOFTMAX_OPS
from . import register
from .attention import Attention

UNSUPPORTED = ("gate", "sinks", "window", "chunk", "kv_shared", "k_eq_v", "v_norm", "sub_norm")


@register
@dataclass(frozen=True)
class SpanConvAttention(Attention):
    """Self-attention beside a span-based dynamic convolution, their outputs concatenated (ConvBERT)."""

    kind = "span_conv"
    slot = "attention"
    summary = "attention and a span-based dynamic convolution side by side (Jiang et al. 2020, ConvBERT)"

    kernel: Positive = 9  # conv_kernel_size

    def check(self, d_model: int) -> None:
        super().check(d_model)
        for name in UNSUPPORTED:
            if getattr(self, name) not in (None, False, "none"):
                raise SpecError((name,), f"{name} is not an option of ConvBERT's mixed attention")
        if self.qk_norm != "none" or self.softplus_gate != "none" or self.kv_heads != self.n_heads:
            raise SpecError(("n_kv_heads",), "ConvBERT's mixed attention has as many key heads as query heads, and no norms")
        if self.kernel % 2 == 0:
            raise SpecError(("kernel",), "an even kernel's padded convolution is one position longer than the sequence")

    def describe(self) -> str:
        return f"{super().describe()}, and a dynamic convolution of {self.kernel} over as many heads"

    def kept_elements(self, model) -> int:
        """What ConvBERT's mixed attention keeps a token with its attention a flash kernel and its dynamic
        convolution fairseq's dynamicconv kernel (``ctx.save_for_backward(x, weights)``: the input and the taps,
        never the unfolded windows); A = heads × head_dim:

        - the input (d: q, k, v, conv_out and the depthwise convolution read it);
        - the flash kernel's Q, K, V (the projections' outputs, Q also the span product's operand) and output
          (4·A), and a log-sum-exp a query and head (``score_bytes``);
        - the depthwise output (d, the pointwise convolution's input), the key convolution's output k_s (A) and the
          product k_s ⊙ q (A, conv_kernel's input);
        - the taps' softmax (heads × kernel, the dynamic convolution's weights) and conv_out's output (A, its input);
        - o's input, the attention's and the convolution's outputs concatenated (2·A):

        2·d + 9·A + heads × kernel."""
        a = self.n_heads * self.head_dim
        return 2 * model.d_model + 9 * a + self.n_heads * self.kernel

    def terms(self, e, model, seq_len: int) -> None:
        d, h, hd, k, n = model.d_model, self.n_heads, self.head_dim, self.kernel, e.n
        a = h * hd
        for name in ("attn.q", "attn.k", "attn.v"):
            e.linear(name, d, a, True, n, heads=h)
        e.term("attn.key_conv.depthwise.weight", "weight", (d, 1, k), n, macs=n * d * k)  # k taps a channel
        e.term("attn.key_conv.pointwise.weight", "weight", (a, d, 1), n, macs=n * d * a)
        e.term("attn.key_conv.bias", "bias", (a,), n, elementwise=n * a)
        e.op("attn.conv_attn", n * a)  # k_s ⊙ q
        e.linear("attn.conv_kernel", a, h * k, True, n)
        e.op("attn.conv_kernel.softmax", n * h * k * SOFTMAX_OPS)
        e.linear("attn.conv_out", d, a, True, n)
        e.term("attn.dynamic_conv", "core", (h, k, hd), n, numel=0, macs=n * h * k * hd, select="pairs")
        e.term("attn.scores", "core", (h, seq_len, hd), n, numel=0, macs=n * h * seq_len * hd)
        e.op("attn.softmax", SOFTMAX_OPS * n * h * seq_len, scores=n * h * seq_len)
        e.term("attn.values", "core", (h, seq_len, hd), n, numel=0, macs=n * h * seq_len * hd)
        e.linear("attn.o", 2 * a, d, True, n)

    def tensor_parallel(self, module, rank: int, tp: int):
        raise NotImplementedError("ConvBERT's mixed attention: no tensor-parallel form here")

    def torch_module(self, model, causal: bool):
        return _module()(self, model)


@cache
def _module():
    import math

    import torch
    from torch import nn

    from ._torch import Conv1d, Linear, MatMul

    class KeyConv(nn.Module):
        """The separable convolution over (B, d, s): depthwise k taps, pointwise d -> A, then a bias."""

        def __init__(self, d: int, a: int, k: int):
            super().__init__()
            self.depthwise = Conv1d(d, d, kernel_size=k, groups=d, padding=k // 2, bias=False)
            self.pointwise = Conv1d(d, a, kernel_size=1, bias=False)
            self.bias = nn.Parameter(torch.zeros(a, 1))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.pointwise(self.depthwise(x)) + self.bias

    class Mixed(nn.Module):
        def __init__(self, spec: SpanConvAttention, model):
            super().__init__()
            d, h, hd, k = model.d_model, spec.n_heads, spec.head_dim, spec.kernel
            a = h * hd
            self.heads, self.head_dim, self.taps = h, hd, k
            self.q, self.k, self.v = Linear(d, a), Linear(d, a), Linear(d, a)
            self.key_conv = KeyConv(d, a, k)
            self.conv_kernel = Linear(a, h * k)
            self.conv_out = Linear(d, a)
            self.dynamic_conv, self.scores, self.values = MatMul(), MatMul(), MatMul()
            self.o = Linear(2 * a, d)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            h, hd, k = self.heads, self.head_dim, self.taps
            q, key, v = self.q(x), self.k(x), self.v(x)
            ks = self.key_conv(x.transpose(1, 2)).transpose(1, 2)
            kernel = self.conv_kernel(ks * q).view(b * s * h, k, 1).softmax(dim=1)
            from . import _fused

            if _fused.active():  # the dynamic convolution and the attention as kernels
                conv = _fused.dynamic_conv(self.conv_out(x), kernel, h)
                qh, kh, vh = (t.view(b, s, h, hd).transpose(1, 2) for t in (q, key, v))
                context = _fused.attention(qh, kh, vh, causal=False).transpose(1, 2).reshape(b, s, h * hd)
                return self.o(torch.cat([context, conv], dim=-1))
            out = self.conv_out(x).transpose(1, 2).unsqueeze(-1)  # (B, A, s, 1)
            windows = nn.functional.unfold(out, kernel_size=[k, 1], padding=[(k - 1) // 2, 0])  # (B, A·k, s)
            windows = windows.transpose(1, 2).reshape(b * s * h, hd, k)
            conv = self.dynamic_conv(windows, kernel).view(b, s, h * hd)

            def split(t):
                return t.view(b, s, h, hd).transpose(1, 2)

            scores = self.scores(split(q), split(key).transpose(-2, -1)) / math.sqrt(hd)
            context = self.values(scores.softmax(dim=-1), split(v)).transpose(1, 2).reshape(b, s, h * hd)
            return self.o(torch.cat([context, conv], dim=-1))

    return Mixed
