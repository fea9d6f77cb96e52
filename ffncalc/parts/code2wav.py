"""A codec-to-waveform decoder held beside the model's layers: Qwen3-Omni's code2wav (Qwen Team 2025, "Qwen3-Omni
Technical Report", §2.4: a causal ConvNet in place of block-wise diffusion, as transformers' Qwen3OmniMoeCode2Wav builds
it), a sliding-window transformer over the codec frames' averaged code embeddings, then upsampling and a convolutional
decoder with SnakeBeta activations writing the waveform. Its parameters are counted by component; a forward over the
thinker's tokens does not run it, and its work is not charged in the FLOPs, as the count's note says.

Qwen3OmniMoeCode2Wav at a Qwen3OmniMoeCode2WavConfig (hidden_size H, num_hidden_layers L, num_attention_heads a,
num_key_value_heads k, head_dim d (H // a where unstated), intermediate_size f, attention_bias, codebook_size C,
num_quantizers Q, upsampling_ratios, upsample_rates r_i, decoder_dim D):

- ``code_embedding``: one table of C·Q rows of H (each quantizer's codes offset by C);
- ``pre_transformer`` (Qwen3OmniMoeCode2WavTransformerModel): L layers of q_proj H → a·d, k_proj and v_proj H → k·d,
  o_proj a·d → H (biases as attention_bias says), gate_proj, up_proj H → f and down_proj f → H without biases, two
  RMSNorms of H and two layer scales (Qwen3OmniMoeCode2WavLayerScale, Touvron et al. 2021) of H; the final RMSNorm of H;
- ``upsample``: for each ratio ρ, a ConvTranspose1d H → H of kernel ρ with a bias, then a ConvNeXt block (Liu et al.
  2022: a depthwise Conv1d of kernel 7 with a bias, a LayerNorm, Linear(H, 4H) and Linear(4H, H) with biases, gamma
  of H);
- ``decoder``: a Conv1d H → D of kernel 7 with a bias; for each rate r_i at w_i = D / 2^i, a block
  (Qwen3OmniMoeCode2WavDecoderBlock) of a SnakeBeta of w_i (alpha and beta), a ConvTranspose1d w_i → w_{i+1} of kernel
  2·r_i with a bias and three residual units at w_{i+1} (dilations 1, 3, 9: two SnakeBetas, a Conv1d of kernel 7 and
  one of kernel 1, with biases); a SnakeBeta of D / 2^n and a Conv1d D / 2^n → 1 of kernel 7 with a bias.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.schema import NonNegative, Positive
from . import register
from ._held import HeldPart

CONVNEXT_KERNEL = 7  # Qwen3OmniMoeConvNeXtBlock's depthwise convolution
KERNEL = 7  # the decoder's first and last convolutions and each residual unit's first
UNITS = 3  # residual units a decoder block (dilations 1, 3, 9)


@register
@dataclass(frozen=True)
class Code2Wav(HeldPart):
    key = "code2wav"
    beside = True
    order = 47
    summary = "a codec-to-waveform decoder held beside the layers: a sliding-window transformer and a ConvNet (Qwen3-Omni)"
    count_note = (
        "code2wav: its transformer's and convolutional decoder's parameters counted, their work not charged in the "
        "FLOPs (a forward over the thinker's tokens does not run them; generation runs them over the codec frames)"
    )

    width: Positive = 1024
    layers: NonNegative = 8
    heads: Positive = 16
    kv_heads: Positive = 16
    head_dim: Positive = 64
    intermediate: Positive = 3072
    bias: bool = False  # attention_bias
    codebook: Positive = 2048
    quantizers: Positive = 16
    upsampling_ratios: tuple[Positive, ...] = (2, 2)
    upsample_rates: tuple[Positive, ...] = (8, 5, 4, 3)
    decoder_dim: Positive = 1536

    def numels(self) -> dict[str, int]:
        """Each component's parameters (the module docstring's shapes)."""
        h, q, kv = self.width, self.heads * self.head_dim, self.kv_heads * self.head_dim
        attention = h * q + 2 * h * kv + q * h + (q + 2 * kv + h if self.bias else 0)
        convnext = h * CONVNEXT_KERNEL + h + 2 * h + h * 4 * h + 4 * h + 4 * h * h + h + h
        widths = [self.decoder_dim // 2**i for i in range(len(self.upsample_rates) + 1)]
        blocks = 0
        for i, rate in enumerate(self.upsample_rates):
            w, out = widths[i], widths[i + 1]
            unit = 2 * 2 * out + out * out * KERNEL + out + out * out + out
            blocks += 2 * w + w * out * 2 * rate + out + UNITS * unit
        last = widths[-1]
        out = {
            "code2wav.code_embedding": self.codebook * self.quantizers * h,
            "code2wav.transformer.self_attn": self.layers * attention,
            "code2wav.transformer.mlp": self.layers * 3 * h * self.intermediate,
            "code2wav.transformer.norms": self.layers * 2 * h,
            "code2wav.transformer.layer_scale": self.layers * 2 * h,
            "code2wav.transformer.norm": h,
            "code2wav.upsample.convs": sum(h * h * ratio + h for ratio in self.upsampling_ratios),
            "code2wav.upsample.convnext": len(self.upsampling_ratios) * convnext,
            "code2wav.decoder.convs": h * self.decoder_dim * KERNEL + self.decoder_dim + last * KERNEL + 1,
            "code2wav.decoder.blocks": blocks,
            "code2wav.decoder.activation_post": 2 * last,
        }
        return {name: n for name, n in out.items() if n}
