"""SAM ViT towers (Kirillov et al. 2023) as transformers 5.23 builds them beside a language model
(GotOcr2VisionEncoder): a patch convolution with a bias, an absolute position table of grid × grid rows, windowed
and global layers with decomposed relative positions and a convolutional neck (parts/sam.py), and the wrappers that
read one whole."""

from __future__ import annotations

from ..config import Config
from . import sub_config, wrapper


def sam_tower(v: Config, projector: dict) -> dict:
    """The ``vision`` part of a SAM vision_config (hidden_size, num_hidden_layers, num_attention_heads, mlp_dim,
    output_channels, image_size, patch_size, num_channels, window_size, global_attn_indexes, qkv_bias, use_abs_pos,
    use_rel_pos, hidden_act), with ``projector`` reading its neck's output_channels."""
    d, heads, depth = v.int("hidden_size"), v.int("num_attention_heads"), v.int("num_hidden_layers")
    if d % heads:
        raise v.fail("num_attention_heads", f"{heads} heads do not divide hidden_size {d}")
    size, patch = v.int("image_size"), v.int("patch_size")
    if size < patch:
        raise v.fail("image_size", f"an image of {size} pixels holds no {patch}-pixel patch")
    full = v.int_list("global_attn_indexes")
    if any(not 0 <= k < depth for k in full) or len(set(full)) != len(full):
        raise v.fail("global_attn_indexes", f"{full}: expected distinct layer indices below num_hidden_layers {depth}")
    window = v.int("window_size", 14, positive=False)
    if window < 0:
        raise v.fail("window_size", f"expected a non-negative integer, got {window}")
    grid = size // patch
    absolute = v.bool("use_abs_pos", True)
    sam = {
        "width": d,
        "depth": depth,
        "heads": heads,
        "mlp": v.int("mlp_dim"),
        "out": v.int("output_channels"),
        "grid": grid,
        "window": window,
        "full": len(full) if window else depth,  # window 0: every layer attends the whole grid
        "qkv_bias": v.bool("qkv_bias", True),
        "rel_pos": v.bool("use_rel_pos", True),
        "activation": v.activation("hidden_act", "gelu"),
    }
    return {
        "image_size": size,
        "patch_size": patch,
        "channels": v.int("num_channels", 3),
        "position_table": absolute,
        "position_rows": grid * grid if absolute else 0,  # the checkpoint's table, interpolated to another size
        "post_norm": False,
        "sam": sam,
        "projector": projector,
    }


@wrapper("got_ocr2", "pp_chart2table")
def got_ocr2(c: Config) -> dict:
    """GotOcr2ForConditionalGeneration (Wei et al. 2024, GOT-OCR 2.0; PP-Chart2Table builds the same class): a SAM
    ViT tower (GotOcr2VisionEncoder) and GotOcr2MultiModalProjector: conv_upsampler1 (3 × 3, stride 2, padding 1,
    output_channels → 2 × output_channels) and conv_upsampler2 (the same to the text width), no biases, then
    multimodal_projector, Linear(text width, text width) with a bias: 4 × 4 patches a token (1,024 pixels: 256)."""
    v = sub_config(c, "vision_config")
    text = sub_config(c, "text_config").int("hidden_size")
    projector = {
        "width": v.int("output_channels"),
        "downsample": True,
        "downsample_bias": False,
        "downsample_out": text,
        "bias": True,
    }
    return {"vision": sam_tower(v, projector)}
