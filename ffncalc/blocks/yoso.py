"""YOSO attention in its expectation form (Zeng et al. 2021, "You Only Sample (Almost) Once: Linear Cost
Self-Attention Via Bernoulli Sampling", §3: the expectation of the LSH collision), as transformers instantiates it
(transformers 5.23.0, models/yoso/modeling_yoso.py, ``YosoSelfAttention`` with use_expectation, ``YosoCumulation``).

Queries and keys are l2-normalised per head; each query-key pair's weight is the probability that τ-bit random
hyperplane hashes collide, (1 − arccos(q·k) / π)^τ (τ = hash_code_len), with no softmax; the heads' output is the
weighted sum of the values, l2-normalised again. QKᵀ and AV are products over the whole square, as softmax attention's;
the weights are elementwise (arccos, a scale, a power and the padding mask's two products: 5 a score). With
conv_window, a depthwise convolution of that many taps over each head's values along the sequence (nn.Conv2d,
groups = heads, no bias) is added to the output. The sampled form (use_expectation false) runs only in transformers'
CUDA kernels: not read."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from ..model.schema import NonNegative, Positive, SpecError
from . import register
from .attention import Attention

UNSUPPORTED = ("gate", "sinks", "window", "chunk", "kv_shared", "k_eq_v", "v_norm", "sub_norm")
WEIGHT_OPS = 5  # arccos, the 1 − · / π, the power, and the two mask products (YosoCumulation.forward)
NORM_OPS = 3  # an l2 normalisation: square, sum, divide, an element


@register
@dataclass(frozen=True)
class YosoAttention(Attention):
    """Attention weighted by the expected LSH collision of each query-key pair (YOSO), no softmax."""

    kind = "yoso"
    slot = "attention"
    summary = "attention weighted by expected LSH collisions, (1 − arccos(q·k)/π)^τ, no softmax (Zeng et al. 2021, YOSO)"

    hash_code_len: Positive = 9  # τ
    conv_kernel: NonNegative = 0  # conv_window; 0: no convolution

    def check(self, d_model: int) -> None:
        super().check(d_model)
        for name in UNSUPPORTED:
            if getattr(self, name) not in (None, False, "none"):
                raise SpecError((name,), f"{name} is not an option of YOSO attention")
        if self.qk_norm != "none" or self.softplus_gate != "none" or self.kv_heads != self.n_heads:
            raise SpecError(("n_kv_heads",), "YOSO attention has as many key heads as query heads, and no norms")
        if self.conv_kernel and self.conv_kernel % 2 == 0:
            raise SpecError(("conv_kernel",), "an even kernel's padded convolution is one position longer than the sequence")

    def describe(self) -> str:
        conv = f", value convolution of {self.conv_kernel}" if self.conv_kernel else ""
        return f"{super().describe()}, YOSO expectation of {self.hash_code_len}-bit hashes{conv}"

    def terms(self, e, model, seq_len: int) -> None:
        """Multi-head attention's, the softmax's work replaced by the collision weights' (WEIGHT_OPS a score); the
        l2 normalisations of Q, K and the output; the depthwise convolution's taps."""
        start = len(e.out)
        super().terms(e, model, seq_len)
        h, hd, n = self.n_heads, self.head_dim, e.n
        for i in range(start, len(e.out)):
            t = e.out[i]
            if t.name == "attn.softmax":
                e.out[i] = replace(t, name="attn.weights", component="attn.weights", elementwise=WEIGHT_OPS * t.scores)
        e.op("attn.l2_norms", n * NORM_OPS * 3 * h * hd)
        if self.conv_kernel:
            e.term("attn.conv.weight", "weight", (h, 1, self.conv_kernel, 1), n, macs=n * h * self.conv_kernel * hd)

    def cached_tokens(self, tokens: int) -> int:
        return tokens

    def kept_elements(self, model) -> int:
        """As autograd saves them in the reference module, a token: the input (for q, k and v); Q, K and the output
        before their l2 normalisation and Q and K after it, Kᵀ's copy, V and o's input (7·h·head_dim); each of the
        three normalisations' norm and its clamped divisor, a row a head (6·h)."""
        h, hd = self.n_heads, self.head_dim
        return model.d_model + 7 * h * hd + 6 * h

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        """The scores, clamped, their arccos and the collision weights, 16-bit, a pair a head: 4·h·s² elements (one form:
        no flash kernel computes them)."""
        return 2 * 4 * self.n_heads * seq_len * seq_len

    def tensor_parallel(self, module, rank: int, tp: int):
        raise NotImplementedError("YOSO attention: no tensor-parallel form here")

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import math

    import torch
    from torch.nn import functional as F

    from ._torch import Conv2d
    from .attention import _module as attention_module

    class Yoso(attention_module()):
        """Multi-head attention whose ``attend`` weights each pair by its expected hash collision, and adds the depthwise
        convolution over the values."""

        def __init__(self, spec: YosoAttention, model, causal: bool):
            super().__init__(spec, model, causal)
            self.tau = spec.hash_code_len
            h, k = spec.n_heads, spec.conv_kernel
            if k:
                self.conv = Conv2d(h, h, kernel_size=(k, 1), padding=(k // 2, 0), bias=False, groups=h)

        def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
            scores = self.scores(q, k.transpose(-2, -1)).clamp(-1, 1)
            weights = (1 - torch.acos(scores) / math.pi) ** self.tau
            out = F.normalize(self.values(weights, v), dim=-1)
            if hasattr(self, "conv"):
                out = out + self.conv(v)
            return out

    return Yoso
