"""An audio codec a model holds beside its layers, whose forward over the model's tokens never runs it (Kyutai's
speech-to-text: the Mimi codec, Défossez et al. 2024, "Moshi", §3.3, as transformers' MimiModel builds it, the model's
``codec_model``; generation runs its encoder over the audio to make the tokens the model reads). Its parameters are
counted by component; a forward over tokens does no work in it.

MimiModel at a MimiConfig (hidden_size h, num_filters f, upsampling_ratios r, kernel_size k, last_kernel_size l,
residual_kernel_size k_r, num_residual_layers n, compress c, audio_channels a):

- ``encoder_seanet`` (MimiEncoder): a convolution a → f of kernel k; then for each ratio of r reversed, at width w (f,
  doubling): n residual blocks (a convolution w → w / c of kernel k_r and one w / c → w of kernel 1, biases), then a
  convolution w → 2w of kernel 2·ratio; last a convolution of the final width → h of kernel l; every one with a bias;
- ``encoder_transformer`` and ``decoder_transformer`` (MimiTransformerModel): num_hidden_layers layers of q, k, v, o
  (h → heads·head_dim, kv heads for k and v; attention_bias), fc1 (h → intermediate_size) and fc2 back without biases, two
  LayerNorms (weight and bias), two layer scales (h each);
- ``downsample``: a convolution h → h of kernel 2·latent_stride without a bias (MimiConv1d; latent_stride the
  encoder's frame rate over the codec's: the default 25 Hz to 12.5 Hz, 2; none where they agree); ``upsample``: its
  transposed counterpart of upsample_groups groups (h / groups channels a group), no bias;
- ``decoder_seanet`` (MimiDecoder): a convolution h → 2^len(r)·f of kernel k; for each ratio of r, a transposed
  convolution w → w / 2 of kernel 2·ratio and the residual blocks at w / 2; last a convolution f → a of kernel l; biases;
- ``quantizer``: the semantic and the acoustic residual quantizers' input_proj (h → vector_quantization_hidden_dimension)
  and output_proj back, kernel 1, no biases (their codebooks are buffers, not parameters).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.schema import NonNegative, Positive
from . import register
from ._held import HeldPart


@register
@dataclass(frozen=True)
class Codec(HeldPart):
    key = "codec"
    beside = True
    order = 45
    summary = "an audio codec held beside the layers, which a forward over tokens does not run (Kyutai's Mimi)"

    hidden: Positive = 512
    filters: Positive = 64
    ratios: tuple[Positive, ...] = (8, 6, 5, 4)
    kernel: Positive = 7
    last_kernel: Positive = 3
    residual_kernel: Positive = 3
    residual_layers: NonNegative = 1
    compress: Positive = 2
    channels: Positive = 1
    layers: NonNegative = 8
    heads: Positive = 8
    kv_heads: Positive = 8
    head_dim: Positive = 64
    intermediate: Positive = 2048
    attention_bias: bool = False
    # MimiConfig.latent_stride, encodec_frame_rate / frame_rate (25 Hz to 12.5 Hz: 2): the downsample's and the
    # upsample's stride, their kernel twice it (0: the rates agree, neither built)
    stride: NonNegative = 2
    upsample_groups: Positive = 512
    quantizer_width: Positive = 256

    def _residual(self, w: int) -> int:
        inner = w // self.compress
        return self.residual_layers * (w * inner * self.residual_kernel + inner + inner * w + w)

    def numels(self) -> dict[str, int]:
        """Each component's parameters."""
        f, h, k, a = self.filters, self.hidden, self.kernel, self.channels
        encoder, w = a * f * k + f, f
        for r in reversed(self.ratios):
            encoder += self._residual(w) + w * 2 * w * 2 * r + 2 * w
            w *= 2
        encoder += w * h * self.last_kernel + h
        decoder = h * w * k + w
        for r in self.ratios:
            decoder += w * (w // 2) * 2 * r + w // 2 + self._residual(w // 2)
            w //= 2
        decoder += f * a * self.last_kernel + a
        bias = self.attention_bias
        attention = 2 * h * self.heads * self.head_dim + 2 * h * self.kv_heads * self.head_dim
        attention += (2 * self.heads * self.head_dim + 2 * self.kv_heads * self.head_dim) if bias else 0
        transformer = self.layers * (attention + 2 * h * self.intermediate + 2 * 2 * h + 2 * h)
        out = {
            "codec.encoder_seanet": encoder,
            "codec.encoder_transformer": transformer,
            "codec.downsample": h * h * 2 * self.stride,
            "codec.upsample": h * (h // self.upsample_groups) * 2 * self.stride,
            "codec.decoder_transformer": transformer,
            "codec.decoder_seanet": decoder,
            "codec.quantizer": 2 * 2 * h * self.quantizer_width,
        }
        return {name: n for name, n in out.items() if n}
