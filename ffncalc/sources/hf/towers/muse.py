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


@wrapper("muse_spark")
def muse_spark(c: Config) -> dict:
    """MuseSparkForConditionalGeneration: MUSE Glimmer's vision tower, adapter and vision_projection (MuseSparkVisionModel,
    MuseSparkVisionAdapter: the same modules, read as above), and its audio tower (MuseSparkAudioModel,
    parts/muse_audio.py: audio_config's patch_sizes, hidden_sizes, depths, conv_kernel_size, mlp_ratio and hidden_act,
    its out_hidden_size the language model's width: MuseSparkConfig.validate_architecture)."""
    a = sub_config(c, "audio_config")
    sizes = {key: tuple(_positive_list(a, key, default)) for key, default in AUDIO_DEFAULTS.items()}
    layers = a.int("num_hidden_layers", 4)
    if any(len(v) != layers for v in sizes.values()):
        raise a.fail("num_hidden_layers", f"{layers} stages where patch_sizes, hidden_sizes and depths state one each")
    width = sub_config(c, "text_config").int("hidden_size")
    if a.int("out_hidden_size", 8192) != width:
        raise a.fail("out_hidden_size", f"{a.int('out_hidden_size', 8192)} features where the language model reads {width}")
    ratio = a.float("mlp_ratio", 4.0)
    if ratio <= 0:
        raise a.fail("mlp_ratio", f"expected a positive ratio, got {ratio}")
    audio = {
        "width": width,
        **sizes,
        "kernel": a.int("conv_kernel_size", 7),
        "mlp_ratio": ratio,
        "activation": a.activation("hidden_act", "gelu"),
    }
    return {"muse_spark_audio": audio, **muse_glimmer(c)}  # the audio tower first: its module names (tower_of)


# MuseSparkAudioConfig's stages where a config leaves them out
AUDIO_DEFAULTS = {"patch_sizes": (16, 6, 5, 4), "hidden_sizes": (256, 512, 1024, 2048), "depths": (2, 2, 2, 2)}


def _positive_list(a: Config, key: str, default: tuple[int, ...]) -> list[int]:
    value = a.data.get(key, default)
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, int) and v >= (key != "depths") for v in value):
        raise a.fail(key, f"expected a list of positive integers, got {value!r}")
    return list(value)


# MuseSparkAudioModel's modules -> the muse_spark_audio part's components (parts/muse_audio.py)
AUDIO_MODULES = (
    (r"^layers\.(\d+)\.patch_embedder\.(proj|norm)$", r"audio.patch\1.\2"),
    (r"^layers\.(\d+)\.conv_blocks\.\d+\.(conv|norm)$", r"audio.stage\1.\2"),
    (r"^layers\.(\d+)\.conv_blocks\.\d+\.mlp\.(fc1|fc2)$", r"audio.stage\1.\2"),
    (r"^(norm|proj|post_proj_norm)$", r"audio.\1"),
)


def muse_audio_component(path: str) -> str | None:
    """A MuseSparkAudioModel parameter (model.audio_tower.…) -> its component, or None."""
    import re

    found = re.search(r"(?:^|\.)audio_tower\.", path)
    if not found or not path.endswith((".weight", ".bias")):
        return None
    module = path[found.end() :].rsplit(".", 1)[0]
    for pattern, name in AUDIO_MODULES:
        if re.fullmatch(pattern, module):
            return re.sub(pattern, name, module)
    return f"(unmatched) audio.{module}"
