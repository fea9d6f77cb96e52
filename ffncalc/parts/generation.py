"""An image generator beside a tower: the parameters Janus builds for writing images (JanusVQVAE, Sun et al. 2024's
VQGAN tokenizer as Janus uses it, and the language model's image-token embeddings, aligner and head), which no image
read by the tower runs through. Not a part of its own: a tower (parts/vision.py) holds one; its tensors are counted
as transformers 5.23's JanusModel builds them, each group one component, with no work of an image's.

- the VQ-VAE encoder (JanusVQVAEEncoder): conv_in (3 × 3, in_channels → base); for each level i of the channel
  multipliers m, ``res_blocks`` ResNet blocks from base·(1, m…)[i] to base·m[i] channels (each two GroupNorms and two
  3 × 3 convolutions with biases, and a 1 × 1 nin_shortcut where the channels change), an attention block after each
  at the last level (a GroupNorm and four 1 × 1 convolutions, q, k, v, proj_out) and a 3 × 3 downsample convolution
  but at the last; the middle (two ResNet blocks and an attention block); norm_out and conv_out (3 × 3, to latent
  channels, twice them where double_latent);
- the decoder (JanusVQVAEDecoder): conv_in (latent → base·m[-1]), the middle, for each level from the last
  ``res_blocks`` + 1 ResNet blocks to base·m[i] (attention blocks after each at the last level) and a 3 × 3 upsample
  convolution but at the first; norm_out and conv_out (to out_channels);
- the codebook (quantize.embedding, codes × embed_dim), quant_conv and post_quant_conv (1 × 1, latent ↔ embed_dim);
- generation_embeddings (codes × embed_dim), generation_aligner (Linear(embed_dim, width), then depth − 1
  Linear(width, width), with biases) and generation_head (proj_out Linear(token_width, width), vision_head
  Linear(width, codes), with biases).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.schema import Positive
from ..model.terms import Emitter


def _norm(c: int) -> int:
    """A GroupNorm's weight and bias."""
    return 2 * c


def _conv(c_in: int, c_out: int, k: int) -> int:
    """A k × k convolution with a bias."""
    return c_in * c_out * k * k + c_out


def _resnet(c_in: int, c_out: int) -> int:
    """JanusVQVAEResnetBlock: norm1, conv1, norm2, conv2, and a 1 × 1 nin_shortcut where the channels change."""
    shortcut = _conv(c_in, c_out, 1) if c_in != c_out else 0
    return _norm(c_in) + _conv(c_in, c_out, 3) + _norm(c_out) + _conv(c_out, c_out, 3) + shortcut


def _attention(c: int) -> int:
    """JanusVQVAEAttnBlock: a GroupNorm and q, k, v, proj_out (1 × 1 convolutions)."""
    return _norm(c) + 4 * _conv(c, c, 1)


@dataclass(frozen=True)
class Generator:
    base: Positive  # base_channels
    multipliers: list[Positive]  # channel_multiplier: one a level
    res_blocks: Positive  # num_res_blocks
    latent: Positive  # latent_channels
    embed_dim: Positive  # the codebook's width
    codes: Positive  # num_embeddings
    width: Positive  # projection_dim of the aligner and head
    token_width: Positive  # image_token_embed_dim: what the head reads
    in_channels: Positive = 3
    out_channels: Positive = 3
    double_latent: bool = False
    aligner_depth: Positive = 2  # the aligner's linears (num_hidden_layers)

    def groups(self) -> dict[str, int]:
        """Its parameters by component."""
        b, m, r = self.base, self.multipliers, self.res_blocks
        last = len(m) - 1
        enc = _conv(self.in_channels, b, 3)
        c = b
        for i, mult in enumerate(m):
            for _ in range(r):
                enc += _resnet(c, b * mult) + (_attention(b * mult) if i == last else 0)
                c = b * mult
            enc += _conv(c, c, 3) if i != last else 0
        middle = 2 * _resnet(c, c) + _attention(c)
        enc += middle + _norm(c) + _conv(c, self.latent * (2 if self.double_latent else 1), 3)
        c = b * m[-1]
        dec = _conv(self.latent, c, 3) + middle
        for i in reversed(range(len(m))):
            for _ in range(r + 1):
                dec += _resnet(c, b * m[i]) + (_attention(b * m[i]) if i == last else 0)
                c = b * m[i]
            dec += _conv(c, c, 3) if i != 0 else 0
        dec += _norm(c) + _conv(c, self.out_channels, 3)
        w = self.width
        return {
            "encoder": enc,
            "decoder": dec,
            "codebook": self.codes * self.embed_dim,
            "quant_convs": _conv(self.latent, self.embed_dim, 1) + _conv(self.embed_dim, self.latent, 1),
            "embeddings": self.codes * self.embed_dim,
            "aligner": self.embed_dim * w + w + (self.aligner_depth - 1) * (w * w + w),
            "head": self.token_width * w + w + w * self.codes + self.codes,
        }

    def terms(self, prefix: str) -> list:
        """One tensor a component, no work: no image the tower reads runs through them."""
        e = Emitter("layers")
        for name, n in self.groups().items():
            e.term(f"{prefix}{name}", "weight", (n,))
        return e.out

    def module(self):
        """Its reference module: one parameter a component (imports torch when called)."""
        import torch
        from torch import nn

        module = nn.Module()
        for name, n in self.groups().items():
            setattr(module, name, nn.Parameter(torch.empty(n)))
        return module
