"""Qwen's vision towers (Qwen2-VL, Qwen2.5-VL, Qwen3-VL and Qwen3-VL-MoE, and the models built on them): patches of
two frames (an image repeated to fill them) embedded by a 3-D convolution, pre-norm layers of bidirectional attention
with a fused qkv and 2-D rotary positions (no table, no multiply-adds), and a merger of 2 × 2 patches into one token of
the language model. As transformers 5.23 builds them:

- Qwen2-VL (Qwen2VisionTransformerPretrainedModel): LayerNorms, qkv and proj with biases, an MLP of mlp_ratio × the
  width (fc1, fc2, quick_gelu); the merger's ln_q (a LayerNorm of the width) before the shuffle, then Linear(4w, 4w) →
  GELU → Linear(4w, hidden_size).
- Qwen2.5-VL: RMSNorms, a gated MLP with biases (silu); attention within windows of window_size pixels (4 × 4 merged
  tokens at 112) except in the layers of fullatt_block_indexes; the merger's ln_q an RMSNorm, to out_hidden_size.
- Qwen3-VL: a bias on the patch convolution, a learned table of num_position_embeddings rows interpolated to the
  patches, LayerNorms, an MLP (linear_fc1, linear_fc2, gelu_pytorch_tanh); the merger's norm before the shuffle; and a
  deepstack merger for each layer of deepstack_visual_indexes, its LayerNorm over the shuffled features.

Their images have no fixed size (the processor resizes each to multiples of 28 or 32 pixels between its minimum and
maximum): an image's figures are at IMAGE_SIZE pixels a side unless --image-size says otherwise."""

from __future__ import annotations

from ..config import Config

QWEN_VISION = (
    "qwen2_vl_vision",
    "qwen2_5_vl_vision",
    "qwen3_vl_vision",
    "qwen3_vl_moe_vision",
    "qwen3_5_vision",  # Qwen3.5's: Qwen3-VL's tower without deepstack mergers
    "qwen3_5_moe_vision",
)
IMAGE_SIZE = 448  # pixels a side: 16 × 16 tokens at Qwen2-VL's 28-pixel tiles, 14 × 14 at Qwen3-VL's 32


def qwen_vision(v: Config) -> dict:
    """The ``vision`` part of a Qwen vision_config."""
    kind = v.model_type or "qwen2_vl_vision"
    if kind not in QWEN_VISION:
        raise v.fail("model_type", f"a Qwen vision tower of {kind!r} is not read yet (read: {', '.join(QWEN_VISION)})")
    v2 = kind == "qwen2_vl_vision"
    v3 = kind.startswith("qwen3")  # Qwen3-VL's and Qwen3.5's
    d = v.int("embed_dim" if v2 else "hidden_size")
    heads = v.int("num_heads")
    act = v.activation("hidden_act", "quick_gelu" if v2 else "silu")
    if v2:
        ffn = {"kind": "dense", "d_ff": d * v.int("mlp_ratio", 4), "bias": True, "activation": act}
    elif v3:
        ffn = {"kind": "dense", "d_ff": v.int("intermediate_size"), "bias": True, "activation": act}
    else:
        ffn = {"kind": "gated", "d_ff": v.int("intermediate_size"), "bias": True, "activation": act}
    merge = v.int("spatial_merge_size", 2)
    norm = "rmsnorm" if kind == "qwen2_5_vl_vision" else "layernorm"
    projector = {
        "width": d,
        "hidden": d * merge * merge,
        "bias": True,
        "norm": norm,
        "prenorm": True,
        "shuffle": merge,
        "out": v.int("hidden_size" if v2 else "out_hidden_size"),
    }
    spec = {
        "layers": {
            "d_model": d,
            "n_layers": v.int("depth"),
            "attention": {"n_heads": heads, "qkv_bias": True, "o_bias": True},
            "ffn": ffn,
            "norm": {"kind": norm, "per_layer": 2, "final": False},
        },
        "image_size": IMAGE_SIZE,
        "patch_size": v.int("patch_size"),
        "channels": v.int("in_channels", 3),
        "frames": v.int("temporal_patch_size", 2),
        "patch_bias": v3,
        "position_table": v3,
        "pre_norm": False,
        "post_norm": False,
        "projector": projector,
    }
    if v3:
        spec["position_rows"] = v.int("num_position_embeddings")
        spec["deepstack"] = len(v.int_list("deepstack_visual_indexes")) if v.has("deepstack_visual_indexes") else 0
    if kind == "qwen2_5_vl_vision":
        spec["window"] = v.int("window_size") // merge // v.int("patch_size")  # Qwen2_5_VisionTransformer's
        spec["full_layers"] = len(v.int_list("fullatt_block_indexes"))
    return spec
