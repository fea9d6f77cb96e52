"""A codec-to-waveform model held beside the model's layers: Qwen2.5-Omni's token2wav (Xu et al. 2025, "Qwen2.5-Omni
Technical Report", §2.4, as transformers' Qwen2_5OmniToken2WavModel builds it), a DiT that writes a mel spectrogram from
the talker's codec tokens and BigVGAN (Lee et al. 2023) that writes the waveform from it. Its parameters are counted by
component; a forward over the thinker's tokens does not run it, and its work (an ODE solver's steps through the DiT,
then BigVGAN over the mel frames) is not charged in the FLOPs, as the count's note says.

Qwen2_5OmniToken2WavDiTModel at a Qwen2_5OmniDiTConfig (hidden_size D, num_hidden_layers L, num_attention_heads a,
head_dim d, ff_mult m, emb_dim E, num_embeds N, mel_dim M, enc_dim c, enc_emb_dim s, enc_channels C, enc_kernel_sizes K,
enc_dilations, enc_res2net_scale r, enc_se_channels q, enc_attention_channels t); every Linear and Conv1d with a bias:

- ``time_embed``: time_mlp, Linear(256, D) → SiLU → Linear(D, D) over the sinusoidal embedding of the step's time;
- ``text_embed``: codec_embed, a table of N + 1 rows of E;
- ``input_embed.proj``: Linear(M + c + s + E, D) over the noisy mel, the speaker vector, the codec embedding and the
  speaker embedding side by side;
- ``input_embed.spk_encoder`` (ECAPA_TimeDelayNet, Desplanques et al. 2020): a TDNN Conv1d M → C₀ of kernel K₀; for
  each i of 1 … n − 2 an SE-Res2Net block C_{i−1} → C_i: tdnn1 (kernel 1), r − 1 Conv1d of C_i / r channels and kernel
  K_i, tdnn2 C_i → C_i (kernel 1), the squeeze-excitation's Conv1d C_i → q and q → C_i; mfa, Conv1d C_{n−1} → C_{n−1}
  of kernel K_{n−1}; attentive statistics pooling, Conv1d 3·C_{n−1} → t and t → C_{n−1}; fc, Conv1d 2·C_{n−1} → c;
- ``transformer_blocks``: L layers of an AdaLayerNormZero (Linear(D, 6D) over the time embedding), to_q, to_k, to_v
  (D → a·d), to_out (a·d → D), the MLP Linear(D, m·D) → GELU → Linear(m·D, D); weightless LayerNorms;
- ``norm_out``: Linear(D, 2D), the final modulation; ``proj_out``: Linear(D, M).

Qwen2_5OmniToken2WavBigVGANModel at a Qwen2_5OmniBigVGANConfig (mel_dim M, upsample_initial_channel U,
upsample_rates, upsample_kernel_sizes k_i, resblock_kernel_sizes, resblock_dilation_sizes):

- ``conv_pre``: Conv1d M → U of kernel 7 with a bias;
- ``ups``: for each rate i, ConvTranspose1d U / 2^i → U / 2^(i+1) of kernel k_i with a bias;
- ``resblocks``: after each, one AMPBlock a resblock kernel κ at w = U / 2^(i+1): convs1 and convs2, three Conv1d
  w → w of kernel κ each, with biases, and six anti-aliased SnakeBeta activations, alpha and beta of w each;
- ``activation_post``: a SnakeBeta of U / 2^n (alpha and beta); ``conv_post``: Conv1d U / 2^n → 1 of kernel 7, no bias.
The anti-aliasing filters are buffers, not parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.schema import NonNegative, Positive
from . import register
from ._held import HeldPart

FREQUENCIES = 256  # DiTTimestepEmbedding's freq_embed_dim: the sinusoidal embedding of the step's time


@register
@dataclass(frozen=True)
class Token2Wav(HeldPart):
    key = "token2wav"
    beside = True
    order = 47
    summary = "a codec-to-waveform model held beside the layers: a DiT and BigVGAN (Qwen2.5-Omni's token2wav)"
    count_note = (
        "token2wav: its DiT's and BigVGAN's parameters counted, their work not charged in the FLOPs (a forward over the "
        "thinker's tokens does not run them; generation runs the DiT once an ODE step over the codec tokens' mel frames, "
        "then BigVGAN over the mel)"
    )

    width: Positive = 1024
    layers: NonNegative = 22
    heads: Positive = 16
    head_dim: Positive = 64
    ff_mult: Positive = 2
    codec_width: Positive = 512  # emb_dim
    codecs: Positive = 8193  # num_embeds (the table has one row more)
    mel: Positive = 80
    speaker: Positive = 128  # enc_dim: the speaker encoder's output
    speaker_embedding: Positive = 192  # enc_emb_dim
    channels: tuple[Positive, ...] = (256, 256, 256, 256, 768)
    kernels: tuple[Positive, ...] = (5, 3, 3, 3, 1)
    scale: Positive = 2  # enc_res2net_scale
    squeeze: Positive = 64  # enc_se_channels
    attention_channels: Positive = 64
    upsample_channels: Positive = 1536
    upsample_kernels: tuple[Positive, ...] = (11, 7, 4, 4, 4, 4)
    resblock_kernels: tuple[Positive, ...] = (3, 7, 11)

    def speaker_encoder(self) -> int:
        """ECAPA_TimeDelayNet's parameters: the first TDNN, the SE-Res2Net blocks, mfa, the pooling and fc."""
        ch, k = self.channels, self.kernels
        n = self.mel * ch[0] * k[0] + ch[0]
        for i in range(1, len(ch) - 1):
            w, part = ch[i], ch[i] // self.scale
            n += ch[i - 1] * w + w  # tdnn1
            n += (self.scale - 1) * (part * part * k[i] + part)  # the Res2Net's convolutions
            n += w * w + w  # tdnn2
            n += w * self.squeeze + self.squeeze + self.squeeze * w + w  # squeeze-excitation
        last = ch[-1]
        n += last * last * k[-1] + last  # mfa
        n += 3 * last * self.attention_channels + self.attention_channels + self.attention_channels * last + last
        return n + 2 * last * self.speaker + self.speaker  # fc

    def numels(self) -> dict[str, int]:
        """Each component's parameters (the module docstring's shapes)."""
        d, inner, ff = self.width, self.heads * self.head_dim, self.ff_mult * self.width
        block = d * 6 * d + 6 * d + 3 * (d * inner + inner) + inner * d + d + d * ff + ff + ff * d + d
        u, n = self.upsample_channels, len(self.upsample_kernels)
        ups = sum((u // 2**i) * (u // 2 ** (i + 1)) * k + u // 2 ** (i + 1) for i, k in enumerate(self.upsample_kernels))
        amp = sum(6 * (w * w * k + w) + 6 * 2 * w for w in (u // 2 ** (i + 1) for i in range(n)) for k in self.resblock_kernels)
        out = {
            "token2wav.dit.time_embed": FREQUENCIES * d + d + d * d + d,
            "token2wav.dit.text_embed": (self.codecs + 1) * self.codec_width,
            "token2wav.dit.input_embed.proj": (self.mel + self.speaker + self.speaker_embedding + self.codec_width) * d + d,
            "token2wav.dit.input_embed.spk_encoder": self.speaker_encoder(),
            "token2wav.dit.transformer_blocks": self.layers * block,
            "token2wav.dit.norm_out": d * 2 * d + 2 * d,
            "token2wav.dit.proj_out": d * self.mel + self.mel,
            "token2wav.bigvgan.conv_pre": self.mel * u * 7 + u,
            "token2wav.bigvgan.ups": ups,
            "token2wav.bigvgan.resblocks": amp,
            "token2wav.bigvgan.activation_post": 2 * (u // 2**n),
            "token2wav.bigvgan.conv_post": (u // 2**n) * 7,
        }
        return {name: n for name, n in out.items() if n}
