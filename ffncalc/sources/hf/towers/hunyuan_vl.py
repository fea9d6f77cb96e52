"""HunyuanOCR's vision tower and patch merger (HunYuanVLForConditionalGeneration, as transformers 5.23 builds it):
SigLIP-form layers over an image's patches at its own resolution, a learned table of positions interpolated to them,
and a convolutional patch merger with a newline column and begin and end rows (parts/conv_merger.py).

Its images have no fixed size: the processor (HunYuanVLImageProcessor's smart_resize) resizes each to multiples of
patch_size × spatial_merge_size (32) pixels a side, between 512² and 2,048² pixels in all. An image of S × S pixels is
g = S / patch_size patches a side, and (g / 2) × (g / 2 + 1) + 2 tokens of the language model (2 × 2 patches a cell,
a newline after each row of cells, the begin and end rows): HUNYUAN_IMAGE_SIZE pixels a side unless --image-size says
otherwise."""

from __future__ import annotations

from ..config import Config
from . import sub_config, wrapper

HUNYUAN_IMAGE_SIZE = 768  # pixels a side: 48 × 48 patches of 16, 24 rows of 24 cells and a newline, 602 tokens


@wrapper("hunyuan_vl")
def hunyuan_vl(c: Config) -> dict:
    """HunYuanVLForConditionalGeneration (Tencent 2025, HunyuanOCR) whole: HunYuanVLVisionTransformer's
    HunYuanVLVisionPatchEmbed (a Conv2d of patch_size with a bias over num_channels; position_embedding, a table of
    (max_image_size / patch_size)² + 1 rows whose first is never read and whose grid is interpolated to the image's,
    no multiply-adds), num_hidden_layers HunYuanVLVisionBlocks (layer_norm1 and layer_norm2 LayerNorms; q_proj, k_proj,
    v_proj and o_proj with biases, num_attention_heads heads, every patch of an image meeting every other; an MLP fc1 →
    hidden_act → fc2 with biases), no norm after them; then HunYuanVLVisionPatchMerger (parts/conv_merger.py) to the
    language model's width, which HunYuanVLConfig sets as its text_hidden_size."""
    v = sub_config(c, "vision_config")
    d, heads = v.int("hidden_size"), v.int("num_attention_heads")
    if d % heads:
        raise v.fail("num_attention_heads", f"{heads} heads do not divide a width of {d}")
    patch, merge = v.int("patch_size"), v.int("spatial_merge_size", 2)
    side = v.int("max_image_size") // patch  # HunYuanVLVisionPatchEmbed.position_edge
    if side < 1:
        raise v.fail("max_image_size", f"{v.int('max_image_size')} pixels hold no {patch}-pixel patch: its table has no grid")
    act = v.activation("hidden_act", "gelu")
    return {
        "vision": {
            "layers": {
                "d_model": d,
                "n_layers": v.int("num_hidden_layers"),
                "attention": {"n_heads": heads, "qkv_bias": True, "o_bias": True},
                "ffn": {"kind": "dense", "d_ff": v.int("intermediate_size"), "bias": True, "activation": act},
                "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
            },
            "image_size": HUNYUAN_IMAGE_SIZE,
            "patch_size": patch,
            "channels": v.int("num_channels", 3),
            "patch_bias": True,
            "position_rows": side * side + 1,  # num_positions: the grid's rows and a first, class token's row
            "pre_norm": False,
            "post_norm": False,
            "projector": {"width": d, "conv_merger": {"merge": merge}},
        }
    }
