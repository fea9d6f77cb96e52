"""The VQ-VAE image tokenizers whose codes are their language model's tokens: Chameleon's (ChameleonForConditionalGeneration,
as transformers 5.23 builds it; parts/vqvae.py), beside its language model (families/chameleon.py), and Emu3's
(Emu3ForConditionalGeneration; parts/emu3_vqvae.py), beside its text_config's (emu3_text_model, Llama's layers).

An image of S × S pixels (the processor's crop: vq_config's resolution, 512) runs once through the VQ-VAE's encoder,
quant_conv and quantizer; each of its (S / 2^(levels − 1))² codes becomes one token of the language model, which
ChameleonImageVocabularyMapping maps to a row of the model's own embed_tokens (no projector)."""

from __future__ import annotations

from ..config import Config
from . import sub_config, wrapper


def _encoder(c: Config) -> dict:
    """ChameleonVQVAEConfig's encoder path as parts/vqvae.py reads it."""
    vq = sub_config(c, "vq_config")
    mult = vq.data.get("channel_multiplier")
    if not isinstance(mult, list) or not mult or not all(isinstance(m, int) and m > 0 for m in mult):
        raise vq.fail("channel_multiplier", f"{mult!r}: expected a list of positive integers")
    if vq.bool("double_latent", False):  # conv_out writes 2 × latent_channels, quant_conv reads latent_channels
        raise vq.fail("double_latent", "true: its conv_out writes twice the channels quant_conv reads, which no image runs")
    vanilla = vq.data.get("attn_type", "vanilla") == "vanilla"
    attn_res = vq.data.get("attn_resolutions") or []
    if not isinstance(attn_res, list):
        raise vq.fail("attn_resolutions", f"{attn_res!r}: expected a list of resolutions")
    res, levels = vq.int("resolution"), []
    for i in range(len(mult)):  # ChameleonVQVAEEncoder: curr_res halves after every level but the last
        if vanilla and res in attn_res:
            levels.append(i)
        res //= 2
    return {
        "channels": vq.int("in_channels", 3),
        "base": vq.int("base_channels"),
        "multipliers": tuple(mult),
        "res_blocks": vq.int("num_res_blocks"),
        "attn_levels": tuple(levels),
        "mid_attention": vanilla,
        "latent": vq.int("latent_channels"),
        "embed_dim": vq.int("embed_dim"),
        "codebook": vq.int("num_embeddings"),
    }


@wrapper("chameleon")
def chameleon(c: Config) -> dict:
    """ChameleonForConditionalGeneration whole: ChameleonModel's vqmodel (ChameleonVQVAE: its encoder, quantize's
    codebook, quant_conv and post_quant_conv, built and run by no image it reads) beside its language model; an image of
    vq_config's resolution a side unless --image-size says otherwise."""
    vqvae = _encoder(c)
    stride = 2 ** (len(vqvae["multipliers"]) - 1)
    size = sub_config(c, "vq_config").int("resolution")
    return {
        "vision": {
            "vqvae": vqvae,
            "image_size": size,
            "patch_size": stride,
            "channels": vqvae["channels"],
            "position_table": False,
            "post_norm": False,
            "projector": {"width": c.int("hidden_size"), "linear": False},
        }
    }


EMU3_IMAGE_SIZE = 512  # pixels a side: Emu3ImageProcessor's min_pixels, 512²; 64 codes a side


@wrapper("emu3")
def emu3(c: Config) -> dict:
    """Emu3ForConditionalGeneration whole: Emu3Model's vqmodel (Emu3VQVAE: its encoder, quantize's codebook, quant_conv;
    post_quant_conv and the decoder, built and run by no image it reads) beside its text_model; an image of
    EMU3_IMAGE_SIZE pixels a side unless --image-size says otherwise, its (S / 8) × (S / 8 + 1) tokens its codes and a
    row-end token after each row (Emu3Processor)."""
    vq = sub_config(c, "vq_config")
    mult = vq.data.get("channel_multiplier")
    if not isinstance(mult, list) or not mult or not all(isinstance(m, int) and m > 0 for m in mult):
        raise vq.fail("channel_multiplier", f"{mult!r}: expected a list of positive integers")
    if vq.bool("double_latent", False):  # conv_out writes 2 × latent_channels, quant_conv reads latent_channels
        raise vq.fail("double_latent", "true: its conv_out writes twice the channels quant_conv reads, which no image runs")
    levels = vq.data.get("attn_resolutions")  # Emu3VQVAEDownBlock: the level indices with attention blocks
    if not isinstance(levels, list) or not all(isinstance(i, int) and 0 <= i < len(mult) for i in levels):
        raise vq.fail("attn_resolutions", f"{levels!r}: expected a list of level indices below {len(mult)}")
    frames = vq.int("temporal_downsample_factor")
    if frames & (frames - 1):
        raise vq.fail("temporal_downsample_factor", f"{frames}: its temporal downsamplings halve a power of two")
    base, width = vq.int("base_channels"), vq.int("hidden_size")
    if {base * mult[i] for i in (*levels, len(mult) - 1)} != {width}:
        raise vq.fail("hidden_size", f"{width}: its attention blocks' Linear layers read each position's channels")
    tokenizer = {
        "channels": vq.int("in_channels", 3),
        "base": base,
        "multipliers": tuple(mult),
        "res_blocks": vq.int("num_res_blocks"),
        "attn_levels": tuple(levels),
        "width": width,
        "heads": vq.int("num_attention_heads"),
        "latent": vq.int("latent_channels"),
        "embed_dim": vq.int("embed_dim"),
        "codebook": vq.int("codebook_size"),
        "frames": frames,
        "out_channels": vq.int("out_channels", 3),
    }
    stride = 2 ** (len(mult) - 1)
    return {
        "vision": {
            "emu3_vqvae": tokenizer,
            "image_size": EMU3_IMAGE_SIZE,
            "patch_size": stride,
            "channels": tokenizer["channels"],
            "position_table": False,
            "post_norm": False,
            "row_breaks": True,
            "projector": {"width": sub_config(c, "text_config").int("hidden_size"), "linear": False},
        }
    }


def vqvae_component(path: str) -> str | None:
    """A parameter of a VQ-VAE image tokenizer (``model.vqmodel.…``) -> its component (vision.vqvae.…, its indices
    dropped), or None."""
    import re

    head, sep, rest = path.partition("vqmodel.")
    if not sep or head not in ("", "model."):
        return None
    name = re.sub(r"\.\d+(?=\.|$)", "", rest).removesuffix(".weight").removesuffix(".bias")
    return f"vision.vqvae.{name}"
