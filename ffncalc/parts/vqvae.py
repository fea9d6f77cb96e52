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

The analytic path: no torch."""

from __future__ import annotations


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
