"""PP-FormulaNet (PaddlePaddle's formula recogniser) read whole, as transformers 5.23 builds
PPFormulaNetForConditionalGeneration: a SAM ViT encoder (PPFormulaNetVisionModel: SLANeXt's, GOT-OCR 2.0's form;
parts/sam.py) and its projector, whose tokens every layer of an mBART decoder (families/pp_formulanet.py)
cross-attends; the image is no token of the decoder's sequence. One image a sequence: the encoder runs it once, at
the prefill; each decode step reads the cross-attention's K and V of its tokens from the cache."""

from __future__ import annotations

from ..config import Config
from ..families.blip_text import memory
from . import sub_config, wrapper
from .sam import sam_tower


@wrapper("pp_formulanet")
def pp_formulanet(c: Config) -> dict:
    """PPFormulaNetForConditionalGeneration (PaddlePaddle, PP-FormulaNet): PPFormulaNetVisionModel, the SAM encoder
    (patch_embed with a bias, pos_embed of grid × grid rows, its windowed and global layers, the neck to
    output_channels), and PPFormulaNetMultiModalProjector: conv1 (3 × 3, stride 2, padding 1, post_conv_in_channels →
    post_conv_mid_channels) and conv2 (the same to post_conv_out_channels), no biases, flattened; linear_1
    (post_conv_out_channels square) and linear_2 (to decoder_hidden_size), with biases and nothing between them: 4 × 4
    patches a token (512 pixels: 8 × 8 = 64). Its output (pooler_output) is the memory every decoder layer's
    encoder_attn reads."""
    v = sub_config(c, "vision_config")
    t = sub_config(c, "text_config")
    out, mid = v.int("output_channels"), v.int("post_conv_mid_channels")
    if v.int("post_conv_in_channels") != out:
        raise v.fail("post_conv_in_channels", f"{v.int('post_conv_in_channels')} where the neck writes output_channels {out}")
    if mid != 2 * out:  # the projector's first convolution doubles the neck's channels (parts/projector.py: downsample)
        raise v.fail("post_conv_mid_channels", f"{mid}: a first convolution other than 2 × output_channels ({2 * out}) is not read")
    width = v.int("decoder_hidden_size")
    if width != t.int("d_model"):  # MBartAttention's k_proj and v_proj read d_model features of the encoder's output
        raise v.fail("decoder_hidden_size", f"{width} features where the decoder's encoder_attn reads d_model {t.int('d_model')}")
    wide = v.int("post_conv_out_channels")
    projector = {
        "width": out,
        "downsample": True,
        "downsample_bias": False,
        "downsample_out": wide,
        "hidden": wide,
        "activation": "identity",  # linear_1 straight into linear_2
        "bias": True,
    }
    vision = {**sam_tower(v, projector), "cross": True, "images": 1}
    side, patch = vision["image_size"], vision["patch_size"]
    tokens = (side // (4 * patch)) ** 2
    image = {"image_patch": 4 * patch, "image_side": side, "source_length": tokens}
    return {"vision": vision, "encoder": {**memory(width), **image}}
