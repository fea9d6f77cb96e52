"""A Conformer layer's first three sublayers (Gulati et al. 2020, "Conformer: Convolution-augmented Transformer for
Speech Recognition", §2: a half-step FFN, multi-head self-attention with relative positions, a convolution module),
as transformers' ParakeetEncoderBlock runs them (Canary's and Cohere ASR's encoders): its second half-step FFN is the
layer's FFN slot, its norm_self_att and norm_feed_forward2 the layer's two norms.

- feed_forward1: norm_feed_forward1, linear1 d → d_ff and the activation, linear2 back (biases with attention_bias),
  its output halved into the residual;
- self_attn (ParakeetEncoderAttention, Dai et al. 2019 §3.3): q, k, v, o (biases with attention_bias), per-head biases
  bias_u and bias_v added to the queries; relative_k_proj (d → d, no bias) over the 2S − 1 relative positions' sines
  and cosines; the position scores (queries against the 2S − 1 projected positions, then shifted: Transformer-XL's
  rel_shift) added to QKᵀ as its mask; AV;
- conv (ParakeetEncoderConvolutionModule): norm_conv, pointwise_conv1 d → 2d and a GLU, depthwise_conv (kernel
  conv_kernel_size, one filter a channel, padded to the sequence's length), BatchNorm1d (a weight and a bias; its
  running statistics buffers), the activation, pointwise_conv2 d → d (biases with convolution_bias);
- norm_out after the layer's second FFN: a third norm beside the layer's own (counted here).

Every product is the sequence's: an encoder (bidirectional)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from ..model.schema import Positive, SpecError
from ..model.terms import ACTIVATION_OPS, Activation
from . import register
from .attention import Attention

UNSUPPORTED = ("gate", "sinks", "window", "chunk", "kv_shared", "k_eq_v", "v_norm", "sub_norm")


@register
@dataclass(frozen=True)
class ConformerAttention(Attention):
    """A Conformer layer's half-step FFN, relative-position self-attention and convolution module (Parakeet's)."""

    kind = "conformer"
    slot = "attention"
    summary = "a Conformer layer's half-step FFN, relative-position attention and convolution module (Canary, Cohere ASR)"
    verify_note = "conformer: no reference module (counted as ParakeetEncoderBlock runs)"

    d_ff: Positive = 4096  # feed_forward1's width (intermediate_size)
    activation: Activation = "silu"  # hidden_act, of feed_forward1 and the convolution module
    kernel: Positive = 9  # conv_kernel_size
    conv_bias: bool = True  # convolution_bias

    def check(self, d_model: int) -> None:
        super().check(d_model)
        for name in UNSUPPORTED:
            if getattr(self, name) not in (None, False):
                raise SpecError((name,), f"{name} is not an option of a Conformer layer")
        if self.n_kv_heads not in (None, self.n_heads) or self.qk_norm != "none":
            raise SpecError(("n_kv_heads",), "a Conformer layer has one key and value head a query head, without q/k norms")

    def describe(self) -> str:
        return f"{self.n_heads} heads × {self.head_dim}, FFN {self.d_ff:,}, conv kernel {self.kernel}"

    def terms(self, e, model, seq_len: int) -> None:
        """Per position of the S: the half-step FFN, the attention (its relative positions' projection over 2S − 1
        rows, their scores a query against all 2S − 1), the convolution module, and three norms."""
        d, n, h, hd, bias = model.d_model, e.n, self.n_heads, self.head_dim, self.qkv_bias
        act = ACTIVATION_OPS[self.activation]
        e.norm("attn.norms", model.norm.layer, d, 3 * n)  # norm_feed_forward1, norm_conv, norm_out
        e.out[-1] = replace(e.out[-1], component="norms")  # among the layer's norms, as a checkpoint names them
        e.linear("attn.ff1.up", d, self.d_ff, bias, n)
        e.op("attn.ff1.act", n * self.d_ff * act + n * d)  # the activation; the half step's scale
        e.linear("attn.ff1.down", self.d_ff, d, bias, n)
        super().terms(e, model, seq_len)
        e.term("attn.pos_bias.u", "bias", (h * hd,), n, elementwise=n * h * hd, component="attn.pos_bias")
        e.term("attn.pos_bias.v", "bias", (h * hd,), n, elementwise=n * h * hd, component="attn.pos_bias")
        rows = 2 * seq_len - 1  # the relative positions' embeddings: S − 1 down to −(S − 1)
        start = len(e.out)
        e.linear("attn.rel", d, h * hd, False, n)
        e.out[start:] = [replace(t, positions=Fraction(rows, seq_len)) for t in e.out[start:]]
        # each query against every relative position's projection (then shifted and cut to S): a product in every view
        e.term("attn.rel_scores", "core", (h, rows, hd), n, numel=0, macs=n * h * rows * hd, select="pairs", grows=False)
        e.op("attn.rel_scores.add", n * h * seq_len)
        e.linear("attn.conv.up", d, 2 * d, self.conv_bias, n)
        e.op("attn.conv.glu", n * d * (ACTIVATION_OPS["sigmoid"] + 1))
        e.term("attn.conv.depthwise.weight", "weight", (d, 1, self.kernel), n, macs=n * d * self.kernel)
        if self.conv_bias:
            e.term("attn.conv.depthwise.bias", "bias", (d,), n, elementwise=n * d)
        # BatchNorm1d in eval: a scale and a shift a channel from its running statistics (buffers)
        e.term("attn.conv.norm", "norm", (d,), n, numel=2 * d, elementwise=n * 4 * d)
        e.op("attn.conv.act", n * d * act)
        e.linear("attn.conv.down", d, d, self.conv_bias, n)

    def kept_elements(self, model) -> int:
        """Multi-head attention's (d + 4·h·hd) and, as their eager modules save them for backward: the half-step FFN's
        input, linear1's output and the activation's (d + 2·d_ff); the relative positions' projection and scores are
        per sequence; the convolution module's input, pointwise_conv1's output (2d), the GLU's, depthwise_conv's,
        BatchNorm's and the activation's outputs (5d more); the three norms' inputs (3d)."""
        d = model.d_model
        return super().kept_elements(model) + d + 2 * self.d_ff + 7 * d + 3 * d
