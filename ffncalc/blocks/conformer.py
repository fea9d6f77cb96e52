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

Granite Speech's GraniteSpeechConformerBlock (``shaw``: its max_pos_emb) is the same layer with Shaw et al.'s (2018)
relative positions: no bias_u, bias_v or relative_k_proj; a table rel_pos_emb of 2 × max_pos_emb + 1 rows of the head
width, each query's scores against the rows of its block's context_size positions (an einsum: heads × context × head
width a position) added to QKᵀ; attention within blocks of context_size positions (the audio part's ``chunk``);
to_q and to_kv without biases, to_out with one; its convolution module ``conv_expand`` × the width inside
(up_conv d → 2 × inner, depth_conv of inner channels without a bias, BatchNorm1d of inner, down_conv inner → d);
ff1.pre_norm, conv.norm and post_norm its three norms, attn.pre_norm and ff2.pre_norm the layer's.

Every product is the sequence's: an encoder (bidirectional)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

from ..model.schema import NonNegative, Positive, SpecError
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

    d_ff: Positive = 4096  # feed_forward1's width (intermediate_size)
    activation: Activation = "silu"  # hidden_act, of feed_forward1 and the convolution module
    kernel: Positive = 9  # conv_kernel_size
    conv_bias: bool = True  # convolution_bias
    shaw: NonNegative = 0  # Granite Speech's max_pos_emb: Shaw's table of 2 × shaw + 1 rows (0: Parakeet's projection)
    conv_expand: Positive = 1  # the convolution module's inner width, × the layer's (Granite Speech's conv_expansion_factor)
    ff_bias: bool | None = None  # feed_forward1's biases (None: attention_bias's, qkv_bias; Granite Speech's: its own)
    depthwise_bias: bool = True  # depthwise_conv's bias, with conv_bias (Granite Speech's depth_conv has none)

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
        ff_bias = bias if self.ff_bias is None else self.ff_bias
        e.linear("attn.ff1.up", d, self.d_ff, ff_bias, n)
        e.op("attn.ff1.act", n * self.d_ff * act + n * d)  # the activation; the half step's scale
        e.linear("attn.ff1.down", self.d_ff, d, ff_bias, n)
        super().terms(e, model, seq_len)
        if self.shaw:  # Shaw's table, each query against its block's seq_len rows (GraniteSpeechConformerAttention's einsum)
            e.term("attn.rel_pos", "weight", (2 * self.shaw + 1, hd), n, component="attn.rel_pos")
            e.term("attn.rel_scores", "core", (h, seq_len, hd), n, numel=0, macs=n * h * seq_len * hd, select="pairs", grows=False)
            e.op("attn.rel_scores.add", n * h * seq_len)
        else:
            e.term("attn.pos_bias.u", "bias", (h * hd,), n, elementwise=n * h * hd, component="attn.pos_bias")
            e.term("attn.pos_bias.v", "bias", (h * hd,), n, elementwise=n * h * hd, component="attn.pos_bias")
            rows = 2 * seq_len - 1  # the relative positions' embeddings: S − 1 down to −(S − 1)
            start = len(e.out)
            e.linear("attn.rel", d, h * hd, False, n)
            e.out[start:] = [replace(t, positions=Fraction(rows, seq_len)) for t in e.out[start:]]
            # each query against every relative position's projection (then shifted and cut to S): a product in every view
            e.term("attn.rel_scores", "core", (h, rows, hd), n, numel=0, macs=n * h * rows * hd, select="pairs", grows=False)
            e.op("attn.rel_scores.add", n * h * seq_len)
        inner = self.conv_expand * d
        e.linear("attn.conv.up", d, 2 * inner, self.conv_bias, n)
        e.op("attn.conv.glu", n * inner * (ACTIVATION_OPS["sigmoid"] + 1))
        e.term("attn.conv.depthwise.weight", "weight", (inner, 1, self.kernel), n, macs=n * inner * self.kernel)
        if self.conv_bias and self.depthwise_bias:
            e.term("attn.conv.depthwise.bias", "bias", (inner,), n, elementwise=n * inner)
        # BatchNorm1d in eval: a scale and a shift a channel from its running statistics (buffers)
        e.term("attn.conv.norm", "norm", (inner,), n, numel=2 * inner, elementwise=n * 4 * inner)
        e.op("attn.conv.act", n * inner * act)
        e.linear("attn.conv.down", inner, d, self.conv_bias, n)

    def kept_elements(self, model) -> int:
        """As the layer's eager modules save them a token (no fused kernel takes a relative-position term beside QKᵀ),
        its three norms as fused kernels keep them:

        - each norm its input and an fp32 statistic a row (LayerNorm's mean and inverse deviation: 4 16-bit elements,
          RMSNorm's 2): 3·(d + stat);
        - the half-step FFN: linear1's input (the norm's output, d), its output and the activation's (2·d_ff);
        - the attention: its input (d); Parakeet's queries plus bias_u and plus bias_v (QKᵀ's and the relative
          product's operands), Granite Speech's queries reshaped for the relative einsum and scaled for QKᵀ: 2·h·hd;
          K, V and the heads' output (3·h·hd);
        - the convolution module: pointwise_conv1's input (the norm's output, d), the GLU's input (2 × inner, inner =
          conv_expand × d), depthwise_conv's, BatchNorm's (its running statistics: the terms' form), the
          activation's and pointwise_conv2's inputs (4 × inner)."""
        d, inner, h, hd = model.d_model, self.conv_expand * model.d_model, self.n_heads, self.head_dim
        stat = 4 if model.norm.layer.kind.startswith("layernorm") else 2
        return 3 * (d + stat) + d + 2 * self.d_ff + d + 5 * h * hd + d + 6 * inner

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        """One form, flash or not, a sequence of S positions (Granite Speech's: one block of them, as its audio part
        runs each), 16-bit unless said: Parakeet's relative_k_proj output over the 2S − 1 positions (the relative
        product's operand; the sines and cosines are the encoder's, built once for its layers) and the softmax's fp32
        output and its bf16 cast (eager_attention_forward), 2·(2S − 1)·h·hd + 6·h·S²; Granite Speech's softmax output
        (2·h·S²), its table's gathered rows (S² × hd) and their int64 indices (8 bytes a pair)."""
        h, hd, s = self.n_heads, self.head_dim, seq_len
        if self.shaw:
            return 2 * h * s * s + 2 * s * s * hd + 8 * s * s
        return 2 * (2 * s - 1) * h * hd + 6 * h * s * s

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import torch
    from torch import nn
    from torch.nn import functional as F

    from . import _fused
    from ._torch import ACTIVATIONS, Linear, MatMul, make_norm
    from .attention import _module as attention_module

    class Conformer(attention_module()):
        """A Conformer layer as the attention slot: ff1 halved into the residual, multi-head attention with relative
        positions, the convolution module; its three norms in ``norms``. Every query meets every key of what it is
        handed (Granite Speech's: a block of positions, the audio part runs each alone).

        Parakeet's (ParakeetEncoderBlock): the queries plus bias_u against the keys and the queries plus bias_v against
        relative_k_proj of the 2S − 1 relative positions' sines and cosines (ParakeetEncoderRelPositionalEncoding,
        built once by the encoder for all its layers: a table here), rel-shifted and cut to S, both scaled by hd^−½,
        added; softmax in fp32, cast back (eager_attention_forward). Granite Speech's (GraniteSpeechConformerBlock):
        each query's scores against its Shaw table rows (clamped distances) added to QKᵀ, softmax, AV.

        The convolution module: pointwise up, a GLU over the channels, depthwise, BatchNorm1d from its running
        statistics (the terms' eval form), the activation, pointwise down."""

        def __init__(self, spec: ConformerAttention, model, causal: bool):
            super().__init__(spec, model, causal)
            d, inner = model.d_model, spec.conv_expand * model.d_model
            ff_bias = spec.qkv_bias if spec.ff_bias is None else spec.ff_bias
            self.act, self.shaw, self.inner = ACTIVATIONS[spec.activation], spec.shaw, inner
            self.norms = nn.ModuleList(make_norm(model.norm.layer, d) for _ in range(3))
            self.ff1 = nn.Module()
            self.ff1.up, self.ff1.down = Linear(d, spec.d_ff, bias=ff_bias), Linear(spec.d_ff, d, bias=ff_bias)
            if spec.shaw:
                self.rel_pos = nn.Parameter(torch.empty(2 * spec.shaw + 1, spec.head_dim))
            else:
                self.pos_bias = nn.Module()
                self.pos_bias.u = nn.Parameter(torch.zeros(spec.n_heads * spec.head_dim))
                self.pos_bias.v = nn.Parameter(torch.zeros(spec.n_heads * spec.head_dim))
                self.rel = Linear(d, spec.n_heads * spec.head_dim, bias=False)  # relative_k_proj
            self.rel_scores = MatMul()
            self.conv = nn.Module()
            self.conv.up = Linear(d, 2 * inner, bias=spec.conv_bias)  # pointwise: a linear a position
            bias = spec.conv_bias and spec.depthwise_bias
            depthwise = nn.Conv1d(inner, inner, spec.kernel, padding=spec.kernel // 2, groups=inner, bias=bias)
            depthwise.weight_flops = True  # verify: its FLOPs are its weight's
            self.conv.depthwise = depthwise
            self.conv.norm = nn.BatchNorm1d(inner)
            self.conv.norm.is_norm = True  # verify: its weight and bias one component
            self.conv.down = Linear(inner, d, bias=spec.conv_bias)
            self.conv.norm.eval()

        def train(self, mode: bool = True):
            """BatchNorm1d stays on its running statistics (the terms' form): a batch's own are per micro-batch."""
            super().train(mode)
            self.conv.norm.eval()
            return self

        def positions_table(self, x: torch.Tensor) -> torch.Tensor:
            """ParakeetEncoderRelPositionalEncoding over S positions: (B, 2S − 1, d), position S − 1 down to −(S − 1),
            each frequency's sine and cosine interleaved; computed without gradient, once for the encoder's layers."""
            b, s, d = x.shape
            key = ("parakeet", b, s, d, x.dtype)
            if key not in _fused._MASKS:
                with torch.no_grad():
                    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.float, device=x.device) / d))
                    freqs = torch.arange(s - 1, -s, -1, device=x.device)[:, None].float() * inv_freq
                    table = torch.stack([freqs.sin(), freqs.cos()], dim=-1).reshape(2 * s - 1, d)
                    _fused._MASKS[key] = table.expand(b, -1, -1).to(x.dtype)
            return _fused._MASKS[key]

        def attend(self, q, k, v, x):
            b, h, s, hd = q.shape
            if self.shaw:  # QKᵀ plus each query's scores against its table rows (GraniteSpeechCTCEncoder's attention_dists)
                i = torch.arange(s, device=q.device)
                rows = self.rel_pos[(i[:, None] - i[None, :]).clamp(-self.shaw, self.shaw) + self.shaw]  # (s, s, hd)
                pos = self.rel_scores(q.permute(2, 0, 1, 3).reshape(s, b * h, hd), rows.transpose(1, 2))  # (s, b·h, s)
                pos = pos.reshape(s, b, h, s).permute(1, 2, 0, 3)
                q = q * hd**-0.5
                scores = self.scores(q, k.transpose(-2, -1)) + pos * hd**-0.5
                return self.values(scores.softmax(-1), v)
            # ParakeetEncoderAttention: terms (b) and (d) against the relative positions, rel-shifted (Transformer-XL)
            rel = self.rel(self.positions_table(x)).view(b, 2 * s - 1, h, hd)
            with_u = q + self.pos_bias.u.view(1, h, 1, hd)
            with_v = q + self.pos_bias.v.view(1, h, 1, hd)
            bd = self.rel_scores(with_v, rel.permute(0, 2, 3, 1))  # (b, h, s, 2s − 1)
            bd = F.pad(bd, (1, 0)).view(b, h, -1, s)[:, :, 1:].view(b, h, s, 2 * s - 1)[..., :s] * hd**-0.5
            scores = self.scores(with_u, k.transpose(-2, -1)) * hd**-0.5 + bd
            probs = scores.softmax(-1, dtype=torch.float32).to(q.dtype)
            return self.values(probs, v)

        def forward(self, x):
            h = x + 0.5 * self.ff1.down(self.act(self.ff1.up(self.norms[0](x))))
            h = h + super().forward(h)
            c = F.glu(self.conv.up(self.norms[1](h)).transpose(1, 2), dim=1)  # GLU over the channels
            c = self.conv.down(self.act(self.conv.norm(self.conv.depthwise(c))).transpose(1, 2))
            return self.norms[2](h + c) - x  # the layer adds its input back

    return Conformer
