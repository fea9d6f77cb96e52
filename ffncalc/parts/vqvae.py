"""The VQ-VAE image tokenizer of Chameleon (ChameleonVQVAE, transformers 5.23's modeling_chameleon.py): parameters per
component, from its vq_config. In the order the class builds them:

- encoder.conv_in, a 3 × 3 Conv2d(in_channels, base) with a bias;
- encoder.down, one level per channel_multiplier entry m_i: num_res_blocks ResNet blocks from base·m_{i-1} (base at
  the first) to base·m_i, each a GroupNorm, 3 × 3 Conv2d, GroupNorm, 3 × 3 Conv2d (all with biases) and a 1 × 1
  nin_shortcut Conv2d where its channels change; an attention block (GroupNorm, 1 × 1 q, k, v, proj_out) after each
  block at a resolution named in attn_resolutions; a 3 × 3 stride-2 downsample Conv2d at every level but the last;
- encoder.mid, a ResNet block, an attention block (attn_type "vanilla") and a ResNet block at the last width;
- encoder.norm_out, a GroupNorm, and encoder.conv_out, a 3 × 3 Conv2d to latent_channels (twice that if
  double_latent);
- quantize.embedding, the codebook: num_embeddings × embed_dim;
- quant_conv, a 1 × 1 Conv2d(latent_channels, embed_dim), and post_quant_conv, its 1 × 1 inverse, both with biases
  (post_quant_conv is built and run by no image the model reads: parameters, no work).

Emu3's (Emu3VQVAE, modeling_emu3.py) is the same encoder with Linear attention of the config's hidden_size at the levels
named in attn_resolutions (by index) and in the middle, each after its own GroupNorm; temporal layers after conv_out
(log2 temporal_downsample_factor stride-2 4 × 3 × 3 Conv3d, num_res_blocks ResNet blocks of BatchNorm3d and 3 × 3 × 3
Conv3d); quant_conv and post_quant_conv 3 × 1 × 1 Conv3d; and a decoder, built and run by no image the model reads
(its parameters, no work): temporal ResNet blocks and 3 × 3 × 3 upsample Conv3d, conv_in, a middle and up levels of
num_res_blocks + 1 ResNet blocks whose norms are SpatialNorms (a GroupNorm and two 1 × 1 Conv2d from embed_dim), a
3 × 3 upsample Conv2d at every level but the first, norm_out and conv_out.

``VqVae`` is Chameleon's encoder path as a tower (parts/vision.py holds one in place of its patch embedding and layers,
patch_size its stride 2^(levels − 1)): one image through encoder, quant_conv and the quantizer, once an image; each
convolution's output position a matmul of its kernel's inputs, each attention block's q·kᵀ and attention·v over the
level's H·W positions, and the quantizer's distances, one matmul of the positions' embed_dim features against the
codebook (ChameleonVQVAEVectorQuantizer's einsum; its squared norms and argmin elementwise). Its codes are the language
model's tokens, embedded by its token table: no projector.

The analytic path imports no torch; ``modules`` and ``run``, the reference modules, import it when called."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.schema import NonNegative, Positive, SpecError
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS, Emitter
from ._stem import CodeStem

GROUPNORM = Norm(kind="layernorm")  # a GroupNorm's statistics and affine: a weight and a bias a channel
SILU = ACTIVATION_OPS["silu"]  # hidden *= sigmoid(hidden)


def _resnet(c_in: int, c_out: int) -> int:
    # ChameleonVQVAEEncoderResnetBlock: norm1 (2 c_in), conv1 3×3 (9 c_in c_out + c_out), norm2 (2 c_out),
    # conv2 3×3 (9 c_out² + c_out), nin_shortcut 1×1 (c_in c_out + c_out) only where c_in != c_out
    n = 2 * c_in + 9 * c_in * c_out + c_out + 2 * c_out + 9 * c_out * c_out + c_out
    return n + (c_in * c_out + c_out if c_in != c_out else 0)


def _attn(c: int) -> int:
    # ChameleonVQVAEEncoderAttnBlock: a GroupNorm (2c) and four 1×1 Conv2d(c, c) with biases (q, k, v, proj_out)
    return 2 * c + 4 * (c * c + c)


def chameleon_vqvae_params(vq: dict) -> dict[str, int]:
    """Parameters of ChameleonVQVAE per component, from its vq_config (a dict of the config's keys)."""
    base, mult = vq["base_channels"], list(vq["channel_multiplier"])
    blocks, latent, embed = vq["num_res_blocks"], vq["latent_channels"], vq["embed_dim"]
    attn_res = vq.get("attn_resolutions") or ()
    vanilla = vq.get("attn_type", "vanilla") == "vanilla"
    out = {"encoder.conv_in": 9 * vq["in_channels"] * base + base}
    down, res, c_in = 0, vq["resolution"], base
    for i, m in enumerate(mult):
        c_out = base * m
        for _ in range(blocks):
            down += _resnet(c_in, c_out)
            c_in = c_out
            if vanilla and res in attn_res:
                down += _attn(c_in)
        if i != len(mult) - 1:
            down += 9 * c_in * c_in + c_in  # downsample: 3×3 stride-2 Conv2d(c, c) with a bias
            res //= 2
    out["encoder.down"] = down
    out["encoder.mid"] = 2 * _resnet(c_in, c_in) + (_attn(c_in) if vanilla else 0)
    conv_out = 2 * latent if vq.get("double_latent") else latent
    out["encoder.norm_out"] = 2 * c_in
    out["encoder.conv_out"] = 9 * c_in * conv_out + conv_out
    out["quantize.embedding"] = vq["num_embeddings"] * embed
    out["quant_conv"] = latent * embed + embed
    out["post_quant_conv"] = embed * latent + latent
    return out


def _linear_attn(h: int) -> int:
    # Emu3VQVAEAttentionBlock: q, k, v, out_proj Linear(h, h) with biases (its norm beside it, a GroupNorm or SpatialNorm)
    return 4 * (h * h + h)


def _spatial_norm(q: int, c: int) -> int:
    # Emu3VQVAESpatialNorm: a GroupNorm of c (2c) and conv_y, conv_b 1×1 Conv2d(q, c) with biases
    return 2 * c + 2 * (q * c + c)


def _spatial_resnet(q: int, c_in: int, c_out: int) -> int:
    # Emu3VQVAEResnetBlock with quant_channels: SpatialNorms in place of both GroupNorms
    n = _resnet(c_in, c_out) - 2 * c_in - 2 * c_out
    return n + _spatial_norm(q, c_in) + _spatial_norm(q, c_out)


def _temporal_resnet(c: int) -> int:
    # Emu3VQVAETemporalResnetBlock(c, c): BatchNorm3d (2c), 3×3×3 Conv3d (27 c² + c), twice
    return 2 * (2 * c + 27 * c * c + c)


def emu3_vqvae_params(vq: dict) -> dict[str, int]:
    """Parameters of Emu3VQVAE per component, from its vq_config (a dict of the config's keys)."""
    base, mult = vq["base_channels"], list(vq["channel_multiplier"])
    blocks, latent, embed, h = vq["num_res_blocks"], vq["latent_channels"], vq["embed_dim"], vq["hidden_size"]
    attn_levels = vq.get("attn_resolutions") or ()
    temporal = vq["temporal_downsample_factor"].bit_length() - 1  # log2 of a power of two
    out = {"encoder.conv_in": 9 * vq["in_channels"] * base + base}
    down, c_in = 0, base
    for i, m in enumerate(mult):
        c_out = base * m
        for _ in range(blocks):
            down += _resnet(c_in, c_out) + (_linear_attn(h) + 2 * c_out if i in attn_levels else 0)
            c_in = c_out
        if i != len(mult) - 1:
            down += 9 * c_in * c_in + c_in  # Emu3VQVAEEncoderConvDownsample: 3×3 stride-2 Conv2d
    out["encoder.down_block"] = down
    out["encoder.middle_block"] = 2 * _resnet(c_in, c_in) + _linear_attn(h) + 2 * c_in
    z = 2 * latent if vq.get("double_latent") else latent
    out["encoder.norm_out"] = 2 * c_in
    out["encoder.conv_out"] = 9 * c_in * z + z
    out["encoder.time_conv"] = temporal * (36 * z * z + z)  # 4×3×3 Conv3d(z, z), stride 2 in time
    out["encoder.time_res_stack"] = blocks * _temporal_resnet(z)
    out["decoder.time_res_stack"] = blocks * _temporal_resnet(latent)
    out["decoder.time_conv"] = temporal * (27 * latent * latent + latent)  # 3×3×3 Conv3d after nearest ×2 in time
    top = base * mult[-1]
    out["decoder.conv_in"] = 9 * latent * top + top
    out["decoder.middle_block"] = 2 * _spatial_resnet(embed, top, top) + _linear_attn(h) + _spatial_norm(embed, top)
    up, c_in = 0, top
    for i in reversed(range(len(mult))):
        c_out = base * mult[i]
        for _ in range(blocks + 1):
            up += _spatial_resnet(embed, c_in, c_out)
            c_in = c_out
            if i in attn_levels:
                up += _linear_attn(h) + _spatial_norm(embed, c_in)
        if i != 0:
            up += 9 * c_in * c_in + c_in  # Emu3VQVAEEncoderConvUpsample: 3×3 Conv2d after nearest ×2
    out["decoder.up_block"] = up
    out["decoder.norm_out"] = _spatial_norm(embed, base * mult[0])
    out["decoder.conv_out"] = 9 * base * mult[0] * vq["out_channels"] + vq["out_channels"]
    out["quantize"] = vq["codebook_size"] * embed
    out["quant_conv"] = 3 * latent * embed + embed  # 3×1×1 Conv3d
    out["post_quant_conv"] = 3 * embed * latent + latent
    return out


@dataclass(frozen=True)
class VqVae(CodeStem):
    """Chameleon's VQ-VAE encoder path (ChameleonVQVAE.encode), from its vq_config."""

    channels: Positive = 3  # in_channels
    base: Positive = 128  # base_channels
    multipliers: tuple[Positive, ...] = (1, 1, 2, 2, 4)  # channel_multiplier: a level each
    res_blocks: Positive = 2  # num_res_blocks a level
    attn_levels: tuple[NonNegative, ...] = ()  # levels whose blocks each have an attention block (attn_resolutions)
    mid_attention: bool = True  # attn_type "vanilla": the middle's attention block
    latent: Positive = 256  # latent_channels: conv_out's channels
    embed_dim: Positive = 256  # the codebook's width (quant_conv's output)
    codebook: Positive = 8192  # num_embeddings

    def check(self) -> None:
        if any(level >= len(self.multipliers) for level in self.attn_levels):
            raise SpecError(("vision", "vqvae", "attn_levels"), f"a level past its {len(self.multipliers)} levels")
        widths = [self.base] + [self.base * m for m in self.multipliers]
        if any(w % 32 for w in widths):  # torch.nn.GroupNorm(num_groups=32, ...)
            raise SpecError(("vision", "vqvae", "base"), "every level's channels a multiple of its GroupNorms' 32 groups")

    @property
    def stride(self) -> int:
        """Pixels a side of one code: a stride-2 downsampling after every level but the last."""
        return 2 ** (len(self.multipliers) - 1)

    def terms(self, image_size: int) -> list[tuple[str, object]]:
        """Its tensors and one image's work of ``image_size`` pixels a side through encoder, quant_conv and the
        quantizer ("image": each term's macs and elementwise are the image's); post_quant_conv's parameters."""
        e = Emitter("layers")
        pre = "vision.vqvae."

        def conv(name: str, cin: int, cout: int, k: int, positions: int) -> None:
            # Conv2d(cin, cout, k) with a bias: cin·k² multiply-adds an output channel at each output position
            e.term(f"{pre}{name}.weight", "weight", (cout, cin, k, k), macs=positions * cout * cin * k * k)
            e.term(f"{pre}{name}.bias", "bias", (cout,), elementwise=positions * cout)

        def resnet(name: str, cin: int, cout: int, p: int) -> None:
            # ChameleonVQVAEEncoderResnetBlock: norm1, silu, conv1 3×3, norm2, silu, conv2 3×3, nin_shortcut 1×1 where
            # the channels change, the residual add
            e.norm(f"{pre}{name}.norm1", GROUPNORM, cin, 1, total=p * cin)
            e.op(f"{pre}{name}.act", SILU * p * (cin + cout), 1)
            conv(f"{name}.conv1", cin, cout, 3, p)
            e.norm(f"{pre}{name}.norm2", GROUPNORM, cout, 1, total=p * cout)
            conv(f"{name}.conv2", cout, cout, 3, p)
            if cin != cout:
                conv(f"{name}.nin_shortcut", cin, cout, 1, p)
            e.op(f"{pre}{name}.residual", p * cout, 1)

        def attn(name: str, c: int, p: int) -> None:
            # ChameleonVQVAEEncoderAttnBlock: a GroupNorm, q, k, v 1×1, one head of c over the p positions (bmm of
            # q·kᵀ, softmax, bmm with v), proj_out 1×1, the residual add
            e.norm(f"{pre}{name}.norm", GROUPNORM, c, 1, total=p * c)
            for part in ("q", "k", "v"):
                conv(f"{name}.{part}", c, c, 1, p)
            for part in ("scores", "values"):  # every position meets every position of the image
                e.term(f"{pre}{name}.{part}", "core", (1, p * p, c), numel=0, macs=0, select="pairs")
            e.op(f"{pre}{name}.softmax", p * p * SOFTMAX_OPS, 1, scores=p * p)
            conv(f"{name}.proj_out", c, c, 1, p)
            e.op(f"{pre}{name}.residual", p * c, 1)

        side = image_size
        conv("encoder.conv_in", self.channels, self.base, 3, side * side)
        cin = self.base
        for i, m in enumerate(self.multipliers):
            cout, p = self.base * m, side * side
            for _ in range(self.res_blocks):
                resnet("encoder.down.block", cin, cout, p)
                cin = cout
                if i in self.attn_levels:
                    attn("encoder.down.attn", cin, p)
            if i != len(self.multipliers) - 1:  # F.pad (0, 1, 0, 1), then 3×3 of stride 2: side / 2 a side
                side //= 2
                conv("encoder.down.downsample.conv", cin, cin, 3, side * side)
        p = side * side
        resnet("encoder.mid.block_1", cin, cin, p)
        if self.mid_attention:
            attn("encoder.mid.attn_1", cin, p)
        resnet("encoder.mid.block_2", cin, cin, p)
        e.norm(f"{pre}encoder.norm_out", GROUPNORM, cin, 1, total=p * cin)
        e.op(f"{pre}encoder.act", SILU * p * cin, 1)
        conv("encoder.conv_out", cin, self.latent, 3, p)
        conv("quant_conv", self.latent, self.embed_dim, 1, p)
        # the distances: ‖z‖² + ‖e‖² − 2 z·e, z·e one (positions × embed_dim) @ (embed_dim × codebook) matmul
        dist = p * self.embed_dim * self.codebook
        e.term(f"{pre}quantize.embedding.weight", "weight", (self.codebook, self.embed_dim), macs=dist)
        e.op(f"{pre}quantize.argmin", 2 * p * self.codebook + p * self.embed_dim, 1)
        e.term(f"{pre}post_quant_conv.weight", "weight", (self.latent, self.embed_dim, 1, 1))  # built, never run
        e.term(f"{pre}post_quant_conv.bias", "bias", (self.latent,))
        return [("image", t) for t in e.out]

    def modules(self):
        """Its reference module (imports torch when called), named as its terms: ``run`` takes pixels through it."""
        import torch
        from torch import nn

        from ..blocks._torch import MatMul

        def conv(cin: int, cout: int, k: int, stride: int = 1, padding: int | None = None) -> nn.Conv2d:
            c = nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2 if padding is None else padding)
            c.weight_flops = True  # verify: its FLOPs are its weight's
            return c

        class GroupNorm(nn.GroupNorm):
            is_norm = True  # verify: its weight and bias are one component

        def silu(x):
            return x * torch.sigmoid(x)

        class Resnet(nn.Module):
            def __init__(self, cin: int, cout: int):
                super().__init__()
                self.norm1, self.conv1 = GroupNorm(32, cin, eps=1e-6), conv(cin, cout, 3)
                self.norm2, self.conv2 = GroupNorm(32, cout, eps=1e-6), conv(cout, cout, 3)
                if cin != cout:
                    self.nin_shortcut = conv(cin, cout, 1)

            def forward(self, x):
                h = self.conv2(silu(self.norm2(self.conv1(silu(self.norm1(x))))))
                return (self.nin_shortcut(x) if hasattr(self, "nin_shortcut") else x) + h

        class Attn(nn.Module):
            def __init__(self, c: int):
                super().__init__()
                self.norm = GroupNorm(32, c, eps=1e-6)
                self.q, self.k, self.v, self.proj_out = (conv(c, c, 1) for _ in range(4))
                self.scores, self.values = MatMul(), MatMul()

            def forward(self, x):
                b, c, hh, ww = x.shape
                h = self.norm(x)
                q, k, v = (f(h).reshape(b, c, hh * ww) for f in (self.q, self.k, self.v))
                probs = (self.scores(q.transpose(1, 2), k) * c**-0.5).softmax(-1)
                out = self.values(v, probs.transpose(1, 2)).reshape(b, c, hh, ww)
                return x + self.proj_out(out)

        class Codebook(nn.Module):
            weight_flops = True  # verify: the distances' matmul is its weight's FLOPs

            def __init__(self, n: int, d: int):
                super().__init__()
                self.weight = nn.Parameter(torch.empty(n, d))

            def forward(self, z):  # the distances' ‖z‖² + ‖e‖² − 2 z·e, and each position's nearest code
                dist = (z**2).sum(1, keepdim=True) + (self.weight**2).sum(1) - 2 * (z @ self.weight.t())
                return dist.argmin(1)

        spec, vq = self, nn.Module()
        enc = nn.Module()
        enc.conv_in = conv(self.channels, self.base, 3)
        enc.down, cin = nn.ModuleList(), self.base
        for i, m in enumerate(self.multipliers):
            level, cout = nn.Module(), self.base * m
            level.block, level.attn = nn.ModuleList(), nn.ModuleList()
            for _ in range(self.res_blocks):
                level.block.append(Resnet(cin, cout))
                cin = cout
                if i in self.attn_levels:
                    level.attn.append(Attn(cin))
            if i != len(self.multipliers) - 1:
                level.downsample = nn.Module()
                level.downsample.conv = conv(cin, cin, 3, stride=2, padding=0)
            enc.down.append(level)
        enc.mid = nn.Module()
        enc.mid.block_1, enc.mid.block_2 = Resnet(cin, cin), Resnet(cin, cin)
        if spec.mid_attention:
            enc.mid.attn_1 = Attn(cin)
        enc.norm_out, enc.conv_out = GroupNorm(32, cin, eps=1e-6), conv(cin, self.latent, 3)
        vq.encoder, vq.quant_conv = enc, conv(self.latent, self.embed_dim, 1)
        vq.quantize = nn.Module()
        vq.quantize.embedding = Codebook(self.codebook, self.embed_dim)
        vq.post_quant_conv = conv(self.embed_dim, self.latent, 1)
        return vq

    def run(self, vq, pixels):
        """(images, channels, size, size) through encoder, quant_conv and the quantizer: each position's code."""
        from torch import nn

        enc = vq.encoder
        h = enc.conv_in(pixels)
        for level in enc.down:
            for k, block in enumerate(level.block):
                h = block(h)
                if len(level.attn):
                    h = level.attn[k](h)
            if hasattr(level, "downsample"):
                h = level.downsample.conv(nn.functional.pad(h, (0, 1, 0, 1)))
        h = enc.mid.block_1(h)
        h = enc.mid.attn_1(h) if self.mid_attention else h
        h = enc.mid.block_2(h)
        h = enc.norm_out(h)
        h = enc.conv_out(h * h.sigmoid())
        z = vq.quant_conv(h).permute(0, 2, 3, 1).reshape(-1, self.embed_dim)
        return vq.quantize.embedding(z)
