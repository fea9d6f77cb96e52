"""MUSE Glimmer's vision tower and projector (MuseGlimmerForConditionalGeneration, as transformers 5.23 builds it): a
linear patch embedding over each patch's two frames, an interpolated table of positions, LayerNorms before and after
pre-norm layers that attend within windows of the table's grid except in the layers layer_types calls full, then a
pixel shuffle, an adapter of two GELU linears and a linear to the language model's width."""

from __future__ import annotations

from ..config import Config
from . import sub_config, wrapper

MUSE_IMAGE_SIZE = 448  # pixels a side: 32 × 32 patches of 14 (one window), 256 tokens after its 2 × 2 shuffle (no fixed size)


@wrapper("muse_glimmer")
def muse_glimmer(c: Config) -> dict:
    """MuseGlimmerForConditionalGeneration: MuseGlimmerVisionModel, patch_embedder.patch_embedding a Linear(3 ×
    patch_temporal × patch_size², width) without a bias (an image repeated over its patch_temporal frames), its
    position_embedding_table of pos_emb_height × pos_emb_width rows interpolated bilinearly to the patches (no
    multiply-adds); ln_pre (a LayerNorm); pre-norm layers (norm1, norm2: LayerNorms), q_proj, k_proj, v_proj and proj
    with biases, 2-D rotary positions (no table), an MLP fc1 → hidden_act → fc2 with biases; "window_attention"
    layers attend within windows of pos_emb_height × patch_size pixels (get_vision_window_index at
    spatial_merge_size 1: 32 × 32 patches, the last of a row or column what remains), "full_attention" layers the
    whole image; ln_post; pixel_shuffle of merge_size × merge_size patches into one of merge_size² times the width;
    MuseGlimmerVisionAdapter Linear(out_hidden_size, projector_hidden_size) → GELU → Linear(projector_hidden_size,
    projector_hidden_size) → GELU, no biases; vision_projection Linear(projector_hidden_size, text width) without a
    bias; perception_emb_norm, an RMSNorm without a weight. Its images have no fixed size: an image's figures are at
    MUSE_IMAGE_SIZE pixels a side unless --image-size says otherwise."""
    v = sub_config(c, "vision_config")
    d, heads, depth = v.int("hidden_size"), v.int("num_attention_heads"), v.int("num_hidden_layers")
    if d % heads:
        raise v.fail("num_attention_heads", f"{heads} heads do not divide a width of {d}")
    kinds = v.data.get("layer_types")
    if kinds is None:  # MuseGlimmerVisionConfig: every fourth layer and the last full, the others windowed
        kinds = ["full_attention" if (i + 1) % 4 == 0 or i == depth - 1 else "window_attention" for i in range(depth)]
    if not isinstance(kinds, list) or len(kinds) != depth or not set(kinds) <= {"window_attention", "full_attention"}:
        raise v.fail("layer_types", f"expected {depth} layer kinds (num_hidden_layers), window_attention or full_attention")
    act = v.activation("hidden_act", "gelu")
    if c.activation("projector_hidden_act", "gelu") != "gelu":
        raise c.fail("projector_hidden_act", "its vision adapter is read with gelu, MuseGlimmerConfig's (not yet another)")
    merge, patch = v.int("merge_size", 2), v.int("patch_size")
    rows, cols = v.int("pos_emb_height", 32), v.int("pos_emb_width", 32)
    if rows % merge:
        raise v.fail("pos_emb_height", f"windows of {rows} patches a side are not whole {merge} × {merge} tokens")
    out, hidden = c.int("out_hidden_size", 6144), c.int("projector_hidden_size", 4096)
    projector = {
        "width": d,
        "bias": False,
        "shuffle": merge,
        "adapter": hidden,
        "adapter_in": out,  # fc1 reads out_hidden_size; the shuffle hands it width × merge² (``runs``)
        "post_norm": "rmsnorm",
        "norm_affine": False,
    }
    return {
        "vision": {
            "layers": {
                "d_model": d,
                "n_layers": depth,
                "attention": {"n_heads": heads, "qkv_bias": True, "o_bias": True},
                "ffn": {"kind": "dense", "d_ff": v.int("intermediate_size"), "bias": True, "activation": act},
                "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
            },
            "image_size": MUSE_IMAGE_SIZE,
            "patch_size": patch,
            "channels": 3,
            "frames": v.int("patch_temporal", 2),
            "patch_bias": False,
            "position_rows": rows * cols,
            "pre_norm": True,
            "post_norm": True,
            # get_vision_window_index: windows of pos_emb_height patches, in the projector's tokens of merge² patches
            "window": rows // merge,
            "full_layers": kinds.count("full_attention"),
            "projector": projector,
        }
    }
