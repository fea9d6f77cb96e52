"""Qwen's vision towers (Qwen2-VL, Qwen2.5-VL, Qwen3-VL and Qwen3-VL-MoE, and the models built on them): patches of
two frames (an image repeated to fill them) embedded by a 3-D convolution, pre-norm layers of bidirectional attention
with a fused qkv and 2-D rotary positions (no table, no multiply-adds), and a merger of 2 × 2 patches into one token of
the language model. As transformers 5.23 builds them:

- Qwen2-VL (Qwen2VisionTransformerPretrainedModel): LayerNorms, qkv and proj with biases, an MLP of mlp_ratio × the
  width (fc1, fc2, quick_gelu); the merger's ln_q (a LayerNorm of the width) before the shuffle, then Linear(4w, 4w) →
  GELU → Linear(4w, hidden_size).
- Qwen2.5-VL: RMSNorms, a gated MLP with biases (silu); attention within windows of window_size pixels (4 × 4 merged
  tokens at 112) except in the layers of fullatt_block_indexes; the merger's ln_q an RMSNorm, to out_hidden_size.
- EXAONE 4.5 (Exaone4_5_VisionModel): Qwen2.5-VL's, its fused qkv writing num_heads query heads and
  num_key_value_heads key and value heads each (Exaone4_5_VisionAttention).
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
    "qwen4_exp_vision",  # Qwen4-Exp's: Qwen3.5-MoE's (Qwen4ExpVisionModel)
    "qwen2_5_omni_vision_encoder",  # Qwen2.5-Omni's: Qwen2.5-VL's, its q, k and v apart
    "qwen3_omni_moe_vision_encoder",  # Qwen3-Omni's: Qwen3-VL's
    "exaone4_5_vision",  # EXAONE 4.5's: Qwen2.5-VL's with num_key_value_heads key-value heads
    "cohere_compass_vision",  # Cohere Compass's: Qwen3-VL's (CohereCompassVisionModel subclasses Qwen3VLVisionModel)
)
IMAGE_SIZE = 448  # pixels a side: 16 × 16 tokens at Qwen2-VL's 28-pixel tiles, 14 × 14 at Qwen3-VL's 32


def qwen_vision(v: Config) -> dict:
    """The ``vision`` part of a Qwen vision_config."""
    kind = v.model_type or "qwen2_vl_vision"
    if kind not in QWEN_VISION:
        raise v.fail("model_type", f"a Qwen vision tower of {kind!r} is not read yet (read: {', '.join(QWEN_VISION)})")
    v2 = kind == "qwen2_vl_vision"
    # Qwen3-VL's, Qwen3.5's, Qwen4-Exp's and Cohere Compass's
    v3 = kind.startswith(("qwen3", "qwen4")) or kind == "cohere_compass_vision"
    v25 = kind in ("qwen2_5_vl_vision", "qwen2_5_omni_vision_encoder", "exaone4_5_vision")  # windows, RMSNorms
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
    norm = "rmsnorm" if v25 else "layernorm"
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
    if kind == "exaone4_5_vision":
        spec["layers"]["attention"]["n_kv_heads"] = v.int("num_key_value_heads")
    if v25:
        spec["window"] = v.int("window_size") // merge // v.int("patch_size")  # Qwen2_5_VisionTransformer's
        spec["full_layers"] = len(v.int_list("fullatt_block_indexes"))
    return spec


# GLM-4V's (GLM-4.1V, GLM-4.5V, GLM-4.6V: Glm4vVisionModel and Glm4vMoeVisionModel, built the same), GLM-OCR's and GLM-5
# Next's
GLM_VISION = ("glm4v_vision", "glm4v_moe_vision", "glm_ocr_vision", "glm5_next_vision")


def glm_vision(v: Config) -> dict:
    """The ``vision`` part of a GLM-4V vision_config (Glm4vVisionModel; Hong et al. 2025, GLM-4.1V-Thinking): Qwen2-VL's
    patches of temporal_patch_size frames embedded by a 3-D convolution with a bias, then post_conv_layernorm (an
    RMSNorm) and a learned table of (image_size / patch_size)² positions interpolated to the patches (bicubic, no
    multiply-adds); pre-norm layers of RMSNorms, a fused qkv with attention_bias and proj without one, a gated MLP of
    out_hidden_size without biases, 2-D rotary positions; post_layernorm (an RMSNorm); the downsample convolution of
    spatial_merge_size² patches into one token of out_hidden_size, with a bias, and the merger: proj (no bias),
    post_projection_norm (a LayerNorm), GELU, then a SwiGLU MLP of intermediate_size (gate_proj, up_proj, down_proj, no
    biases, hidden_act). GLM-OCR's (GlmOcrVisionModel): no post_conv_layernorm and no table (its positions the rotary
    ones alone); q, k, v and proj with attention_bias, q_norm and k_norm (RMSNorms of a head, shared by the heads), a
    gated MLP of intermediate_size with attention_bias; the merger's SwiGLU of out_hidden_size × in_channels. GLM-5
    Next's (Glm5NextVisionModel): GLM-OCR's with q, k and v fused in one qkv (the same weights) and its merger's SwiGLU of
    projection_intermediate_size; swiglu_limit's clamps are comparisons."""
    kind = v.model_type or "glm4v_vision"
    if kind not in GLM_VISION:
        raise v.fail("model_type", f"a GLM-4V vision tower of {kind!r} is not read yet (read: {', '.join(GLM_VISION)})")
    d, out = v.int("hidden_size"), v.int("out_hidden_size")
    act = v.activation("hidden_act", "silu")
    bias = v.bool("attention_bias", False)
    merge, patch = v.int("spatial_merge_size", 2), v.int("patch_size")
    ocr = kind in ("glm_ocr_vision", "glm5_next_vision")
    # the merger's context_dim: GlmOcrVisionModel's out_hidden_size × in_channels, Glm5NextVisionModel's
    # projection_intermediate_size, Glm4vVisionModel's intermediate_size
    context = out * v.int("in_channels", 3) if ocr else v.int("intermediate_size")
    if kind == "glm5_next_vision":
        context = v.int("projection_intermediate_size")
    projector = {
        "width": d,
        "hidden": 2 * context,  # gate_proj and up_proj, side by side
        "gated": True,
        "bias": False,
        "norm": "layernorm",
        "merge": merge,
        "merge_out": out,
        "merge_bias": True,
        "lead": True,
        "out": out,
    }
    if act != "silu":
        raise v.fail("hidden_act", f"{act}: the merger's MLP is read with silu, Glm4vVisionConfig's (not yet another)")
    if ocr:
        attention = {"n_heads": v.int("num_heads"), "qkv_bias": bias, "o_bias": bias, "qk_norm": "head"}
        ffn = {"kind": "gated", "d_ff": v.int("intermediate_size"), "bias": bias, "activation": act}
    else:
        attention = {"n_heads": v.int("num_heads"), "qkv_bias": bias, "o_bias": False}
        ffn = {"kind": "gated", "d_ff": out, "activation": act}
    return {
        "layers": {
            "d_model": d,
            "n_layers": v.int("depth"),
            "attention": attention,
            "ffn": ffn,
            "norm": {"kind": "rmsnorm", "per_layer": 2, "final": False},
        },
        "image_size": IMAGE_SIZE,
        "patch_size": patch,
        "channels": v.int("in_channels", 3),
        "frames": v.int("temporal_patch_size", 2),
        "patch_bias": True,
        **({"position_table": False} if ocr else {"position_rows": (v.int("image_size") // patch) ** 2}),
        "pre_norm": not ocr,
        "post_norm": True,
        "projector": projector,
    }


ERNIE_VISION = ("ernie4_5_vl_moe_vision",)  # ERNIE 4.5-VL's (Ernie4_5_VLMoeVisionConfig)


def ernie_vision(v: Config, temporal: int) -> dict:
    """The ``vision`` part of an ERNIE 4.5-VL vision_config (Ernie4_5_VLMoeVisionTransformerPretrainedModel): Qwen2-VL's
    tower with each patch of one frame (an image's temporal patch is 1: Ernie4_5_VLMoeImageProcessor) embedded by one
    Linear(in_channels · patch², hidden_size) without a bias; pre-norm layers of LayerNorms, a fused qkv and proj with
    biases, an MLP of intermediate_size (fc1, fc2 with biases, hidden_act), 2-D rotary positions; a final LayerNorm
    (ln); then the variable-resolution resampler (parts/variable_resampler.py) of spatial_merge_size² patches a token,
    its temporal MLP reading ``temporal`` (temporal_merge_size) copies of an image's one frame, to the text width."""
    kind = v.model_type or ERNIE_VISION[0]
    if kind not in ERNIE_VISION:
        raise v.fail("model_type", f"an ERNIE 4.5-VL vision tower of {kind!r} is not read yet (read: {', '.join(ERNIE_VISION)})")
    d = v.int("hidden_size")
    act = v.activation("hidden_act", "quick_gelu")
    merge = v.int("spatial_merge_size", 2)
    if temporal != 2:  # Ernie4_5_VLMoeVariableResolutionResamplerModel._temporal_slicing: "hard-coded" for 2
        raise v.fail("temporal_merge_size", f"{temporal}: its resampler slices frames in pairs, which only 2 can run")
    return {
        "layers": {
            "d_model": d,
            "n_layers": v.int("depth"),
            "attention": {"n_heads": v.int("num_heads"), "qkv_bias": True, "o_bias": True},
            "ffn": {"kind": "dense", "d_ff": v.int("intermediate_size", 4 * d), "bias": True, "activation": act},
            "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
        },
        "image_size": IMAGE_SIZE,
        "patch_size": v.int("patch_size"),
        "channels": v.int("in_channels", 3),
        "patch_bias": False,
        "position_table": False,
        "pre_norm": False,
        "post_norm": True,
        "projector": {"width": d, "variable": {"merge": merge, "frames": temporal}},
    }
