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
