"""Phi-4-multimodal's Conformer layer (Microsoft 2025, "Phi-4-Mini Technical Report", §2.2: the audio encoder's
conformer blocks), as transformers' Phi4MultimodalAudioConformerEncoderLayer runs it: the attention slot holds
feed_forward_in, the attention and the convolution module; feed_forward_out is the layer's FFN slot (a gated MLP with
biases, halved into the residual), layer_norm_att and feed_forward_out.layer_norm the layer's two norms.

- feed_forward_in (Phi4MultimodalAudioMLP): its own LayerNorm, gate_up_proj d → 2 × d_ff and down_proj back, with
  biases; the first half times the activation of the second; its output halved into the residual;
- self_attn: q, k, v and o with biases; the relative-position bias (one table of the tower's, the audio part's) added
  to the scores with the streaming mask: no multiply-adds;
- conv (Phi4MultimodalAudioConvModule): its LayerNorm; glu, ext_pw_conv_1d d → 2 × d (a pointwise convolution, a
  linear a position, with a bias) and b1, b2 (a bias a channel, each half's), the first half times the conv_glu_type
  activation of the second; dw_sep_conv_1d: dw_conv (depthwise, kernel ``kernel``, ``depthwise_multiplier`` × d
  channels, a bias) padded kernel − 1 on both sides and pw_conv (multiplier × d → d, a bias), both over S + kernel − 1
  positions before the last kernel − 1 are cut; the activation; ext_pw_conv_1d d → d with a bias;
- layer_norm after the layer's FFN: a third norm beside the module's two (counted here).

Every product is the sequence's: an encoder (bidirectional; its streaming mask masks scores, it removes none)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

from ..model.schema import Positive
from ..model.terms import ACTIVATION_OPS, Activation
from . import register
from .attention import Attention
from .conformer import ConformerAttention


@register
@dataclass(frozen=True)
class Phi4ConformerAttention(ConformerAttention):
    """Phi-4-multimodal's conformer layer's feed_forward_in, attention and convolution module."""

    kind = "phi4_conformer"
    slot = "attention"
    summary = "Phi-4-multimodal's Conformer layer: a gated half-step FFN, attention, a GLU depthwise-separable convolution"
    verify_note = "phi4_conformer: its reference module runs feed_forward_in, the attention and the convolution module"

    conv_activation: Activation = "silu"  # conv_activation, after the depthwise-separable convolution
    glu_activation: Activation = "silu"  # conv_glu_type
    multiplier: Positive = 1  # depthwise_multiplier

    def describe(self) -> str:
        return f"{self.n_heads} heads × {self.head_dim}, gated FFN {self.d_ff:,}, conv kernel {self.kernel}"

    def terms(self, e, model, seq_len: int) -> None:
        """Per position of the S: feed_forward_in, the attention, the convolution module (its depthwise and pointwise
        convolutions over S + kernel − 1 positions a sequence) and three norms."""
        d, n, h, k = model.d_model, e.n, self.n_heads, self.kernel
        act = ACTIVATION_OPS[self.activation]
        inner = self.multiplier * d
        e.norm("attn.norms", model.norm.layer, d, 3 * n)  # feed_forward_in's, conv's, and the layer's layer_norm
        e.out[-1] = replace(e.out[-1], component="norms")
        e.linear("attn.ff1.up", d, 2 * self.d_ff, True, n)  # gate_up_proj
        e.op("attn.ff1.act", n * self.d_ff * (act + 1) + n * d)  # the gate's activation and product; the half step
        e.linear("attn.ff1.down", self.d_ff, d, True, n)
        Attention.terms(self, e, model, seq_len)
        e.op("attn.bias_add", n * h * seq_len)  # the relative-position bias and the mask, added to the scores
        e.linear("attn.conv.up", d, 2 * d, True, n)  # glu.ext_pw_conv_1d
        e.term("attn.conv.glu_bias", "bias", (2, d), n, elementwise=n * 2 * d)  # glu.b1, glu.b2
        e.op("attn.conv.glu", n * d * (ACTIVATION_OPS[self.glu_activation] + 1))
        start = len(e.out)  # dw_sep_conv_1d's outputs: S + kernel − 1 a sequence, cut to S after pw_conv
        e.term("attn.conv.depthwise.weight", "weight", (inner, 1, k), n, macs=n * inner * k)
        e.term("attn.conv.depthwise.bias", "bias", (inner,), n, elementwise=n * inner)
        e.linear("attn.conv.pointwise", inner, d, True, n)  # dw_sep_conv_1d.pw_conv
        e.out[start:] = [replace(t, positions=Fraction(seq_len + k - 1, seq_len)) for t in e.out[start:]]
        e.op("attn.conv.act", n * d * ACTIVATION_OPS[self.conv_activation])
        e.linear("attn.conv.down", d, d, True, n)  # ext_pw_conv_1d

    def kept_elements(self, model) -> int:
        """Multi-head attention's; as their eager modules save them for backward: feed_forward_in's input, its gate
        and up halves, the activation's output and the product (d + 4·d_ff); the convolution module's GLU input (d),
        both halves with their biases and the activation's output (3d), the depthwise convolution's input (d) and its
        output, pw_conv's input (inner), the activation's and ext_pw_conv_1d's inputs (2d); the three norms' inputs
        (3d) and each one's fp32 statistics (a LayerNorm's mean and inverse deviation: 4 16-bit elements a row). The
        kernel − 1 positions the depthwise-separable convolution adds are a sequence's (``score_bytes``)."""
        d, inner = model.d_model, self.multiplier * model.d_model
        stat = 4 if model.norm.layer.kind.startswith("layernorm") else 2
        return Attention.kept_elements(self, model) + d + 4 * self.d_ff + 3 * d + 3 * stat + 7 * d + inner

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        """The attention's, and the kernel − 1 positions past the sequence that pw_conv's input holds and the cut
        activation input still spans (its view keeps the uncut output): (kernel − 1) × (inner + d) 16-bit elements."""
        extra = (self.kernel - 1) * (self.multiplier * model.d_model + model.d_model)
        return Attention.score_bytes(self, model, seq_len, flash) + 2 * extra

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import torch
    from torch import nn

    from ._torch import ACTIVATIONS, Linear, make_norm
    from .attention import _module as attention_module

    class Phi4Conformer(attention_module()):
        """feed_forward_in halved into the residual, the attention, the convolution module (a GLU with its two biases,
        the depthwise and pointwise convolutions over the input padded kernel − 1 on both sides, cut back, the
        activation and ext_pw_conv_1d); the three norms in ``norms``. The relative-position bias is added to the scores outside
        (the audio part holds its table; it has no multiply-adds)."""

        def __init__(self, spec: Phi4ConformerAttention, model, causal: bool):
            super().__init__(spec, model, causal)
            d, inner, k = model.d_model, spec.multiplier * model.d_model, spec.kernel
            self.width, self.kernel = d, k
            self.act, self.glu_act = ACTIVATIONS[spec.activation], ACTIVATIONS[spec.glu_activation]
            self.conv_act = ACTIVATIONS[spec.conv_activation]
            self.norms = nn.ModuleList(make_norm(model.norm.layer, d) for _ in range(3))
            self.ff1 = nn.Module()
            self.ff1.up, self.ff1.down = Linear(d, 2 * spec.d_ff), Linear(spec.d_ff, d)
            self.conv = nn.Module()
            self.conv.up = Linear(d, 2 * d)
            self.conv.glu_bias = nn.Parameter(torch.zeros(2, d))
            depthwise = nn.Conv1d(d, inner, k, padding=k - 1, groups=d)
            depthwise.weight_flops = True  # verify: its FLOPs are its weight's
            self.conv.depthwise = depthwise
            self.conv.pointwise = Linear(inner, d)
            self.conv.down = Linear(d, d)

        def forward(self, x):
            up, gate = self.ff1.up(self.norms[0](x)).chunk(2, dim=-1)
            h = x + 0.5 * self.ff1.down(up * self.act(gate))
            h = h + super().forward(h)
            a, b = self.conv.up(self.norms[1](h)).chunk(2, dim=-1)
            c = (a + self.conv.glu_bias[0]) * self.glu_act(b + self.conv.glu_bias[1])
            c = self.conv.pointwise(self.conv.depthwise(c.transpose(1, 2)).transpose(1, 2))  # over S + kernel − 1
            c = self.conv.down(self.conv_act(c[:, : -(self.kernel - 1) or None]))
            return self.norms[2](h + c) - x  # the layer adds its input back

    return Phi4Conformer
