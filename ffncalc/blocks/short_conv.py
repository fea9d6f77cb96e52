"""The gated short convolution of Liquid AI's LFM2 (Liquid AI 2025, "LFM2 Technical Report", arXiv:2511.23404,
§2: a double-gated short-range convolution, "LIV convolution"), as transformers instantiates it
(transformers 5.23.0, models/lfm2/modeling_lfm2.py, ``Lfm2ShortConv``; Lfm2MoeShortConv and Lfm3ShortConv are the
same module).

Per token, with d = d_model and K = conv_kernel (Lfm2Config.conv_L_cache):

    B, C, x = in_proj(u)                   widths d, d, d    (one Linear: d -> 3·d, bias when conv_bias)
    y       = conv(B ⊙ x)                  a causal depthwise Conv1d over d channels, kernel K (bias when conv_bias)
    out     = out_proj(C ⊙ y)              (d -> d, bias when conv_bias)

No activation, no norm inside the block: the two gates B and C are plain products. The convolution reads the K-1
inputs before each token, so decoding keeps those (``state_elements``) and nothing that grows with the context.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive
from . import Block, register


@register
@dataclass(frozen=True)
class ShortConv(Block):
    """LFM2's gated short convolution: out_proj(C ⊙ conv(B ⊙ x)) with B, C, x from one projection."""

    kind = "short_conv"
    slot = "attention"
    prefix = "conv"  # transformers' Lfm2DecoderLayer.conv; terms are conv.in_proj, conv.conv, conv.out_proj
    summary = "gated short convolution, out_proj(C ⊙ conv(B ⊙ x)) (LFM2, Liquid AI 2025)"

    conv_kernel: Positive = 3  # Lfm2Config.conv_L_cache
    bias: bool = False  # Lfm2Config.conv_bias: on in_proj, the convolution and out_proj alike

    def describe(self) -> str:
        return f"short conv, kernel {self.conv_kernel}"

    def facts(self) -> dict[str, object]:
        return {"heads": f"conv {self.conv_kernel}"}

    def terms(self, e, model, seq_len: int) -> None:
        d, n, k = model.d_model, e.n, self.conv_kernel
        e.linear("conv.in_proj", d, 3 * d, self.bias, n)
        e.op("conv.gates", n * 2 * d)  # B ⊙ x before the convolution, C ⊙ y after it: a multiply each
        # Depthwise Conv1d(d, d, K, groups=d): weight (d, 1, K), K multiply-adds per channel and token
        # (transformers pads K-1 on the left and keeps T outputs)
        e.term("conv.conv.weight", "weight", (d, 1, k), n, macs=n * d * k)
        if self.bias:
            e.term("conv.conv.bias", "bias", (d,), n, elementwise=n * d)
        e.linear("conv.out_proj", d, d, self.bias, n)

    def state_elements(self, model) -> int:
        """The convolution's last K-1 inputs (B ⊙ x), d of each, which the next token's convolution reads
        (transformers' conv cache holds K columns, the newest input among them)."""
        return model.d_model * (self.conv_kernel - 1)

    def kept_elements(self, model) -> int:
        """in_proj's input (d, for its weight gradient), its output B, C, x (3·d, for the two products'
        gradients), the convolution's input B ⊙ x (d, for its weight gradient), its output y (d, for C ⊙ y's) and
        out_proj's input C ⊙ y (d): 7·d. The convolution as causal-conv1d's kernel runs it keeps its input alone
        (``_fused._Conv``; no padded copy)."""
        return 7 * model.d_model

    def torch_module(self, model, causal: bool):
        return _module()(self, model)


@cache
def _module():
    from torch import nn

    from ._torch import CausalConv1d, Linear

    class ShortConvModule(nn.Module):
        """in_proj -> B ⊙ x -> causal depthwise conv -> C ⊙ y -> out_proj."""

        def __init__(self, spec: ShortConv, model):
            super().__init__()
            d = model.d_model
            self.in_proj = Linear(d, 3 * d, bias=spec.bias)
            self.conv = CausalConv1d(d, spec.conv_kernel, spec.bias)
            self.out_proj = Linear(d, d, bias=spec.bias)

        def forward(self, u):
            b, c, x = self.in_proj(u).chunk(3, dim=-1)  # Lfm2ShortConv: B, C, x in that order
            return self.out_proj(c * self.conv(b * x))

    return ShortConvModule
