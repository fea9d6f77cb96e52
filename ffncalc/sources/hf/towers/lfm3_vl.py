"""LFM3-VL's vision tower and projector (Lfm3VlForConditionalGeneration, as transformers 5.23 builds it): a linear
patch embedding over each patch's frames, an RMSNorm, then layers of gated depthwise convolutions and of attention
(parts/conv_attention.py), and a projector merging 2 × 2 patches."""

from __future__ import annotations

from ..config import Config
from . import sub_config, wrapper

LFM3_IMAGE_SIZE = 512  # pixels a side: 32 × 32 patches of 16, 256 tokens after its 2 × 2 merge (no fixed size)


@wrapper("lfm3_vl")
def lfm3_vl(c: Config) -> dict:
    """Lfm3VlForConditionalGeneration (Liquid AI, LFM3-VL): Lfm3VlVisionModel, patch_embed a Linear(in_channels ×
    temporal_patch_size × patch_size², width) without a bias (an image repeated over its temporal_patch_size frames),
    embedding_norm (an RMSNorm), its layers as layer_types name them ("conv" or attention), no norm after them;
    Lfm3VlMultiModalProjector: a LayerNorm over each patch, spatial_merge_size² patches side by side,
    Linear(width · merge², projector_hidden_size) → projector_hidden_act → Linear(…, text width), biases as
    projector_bias. Its images have no fixed size: an image's figures are at LFM3_IMAGE_SIZE pixels a side unless
    --image-size says otherwise."""
    v = sub_config(c, "vision_config")
    d, heads, depth = v.int("hidden_size"), v.int("num_attention_heads"), v.int("num_hidden_layers")
    kv = v.int("num_key_value_heads", heads)
    if d % heads or heads % kv:
        raise v.fail("num_attention_heads", f"{heads} heads of a width of {d} in groups of {kv} key-value heads do not divide")
    kinds = v.data.get("layer_types") or ["full_attention"] * depth
    if not isinstance(kinds, list) or len(kinds) != depth or not all(isinstance(k, str) for k in kinds):
        raise v.fail("layer_types", f"expected {depth} layer kinds (num_hidden_layers), got {kinds!r}")
    rope = v.data.get("rope_parameters") or {}
    if isinstance(rope, dict) and rope.get("rope_type", "axial") != "axial":
        raise v.fail("rope_parameters", f"rope_type {rope.get('rope_type')!r}: its tower takes axial rotary positions only")
    merge = v.int("spatial_merge_size", 2)
    mixed = {
        "width": d,
        "depth": depth,
        "attention": sum(k != "conv" for k in kinds),
        "heads": heads,
        "kv_heads": kv,
        "ffn": v.int("intermediate_size"),
        "kernel": v.int("conv_kernel_size", 3),
    }
    projector = {
        "width": d,
        "hidden": c.int("projector_hidden_size", 4096),
        "bias": c.bool("projector_bias", True),
        "activation": c.activation("projector_hidden_act", "gelu"),
        "norm": "layernorm",
        "prenorm": True,
        "shuffle": merge,
    }
    return {
        "vision": {
            "image_size": LFM3_IMAGE_SIZE,
            "patch_size": v.int("patch_size"),
            "channels": v.int("in_channels", 3),
            "frames": v.int("temporal_patch_size", 2),
            "patch_bias": False,
            "patch_norm": True,
            "position_table": False,
            "post_norm": False,
            "mixed": mixed,
            "projector": projector,
        }
    }
