"""Llama 3.2 Vision (Meta 2024; transformers' MllamaForConditionalGeneration) read whole: its tiled vision model and
projector (the ``vision`` part, parts/vision.py) beside the language model of its text_config, whose cross-attention
layers read the projector's rows (families/mllama.py, parts/cross_attention.py)."""

from __future__ import annotations

from ..config import Config
from . import sub_config, wrapper

# MllamaVisionConfig.__post_init__: what it sets where a file states none
INTERMEDIATE_LAYERS = [3, 7, 15, 23, 30]
ASPECT_RATIOS = [[1, 1], [1, 2], [1, 3], [1, 4], [2, 1], [2, 2], [3, 1], [4, 1]]


@wrapper("mllama")
def mllama(c: Config) -> dict:
    """MllamaForConditionalGeneration: MllamaVisionModel — a patch convolution without a bias, per tile; a gated
    pre-tile table; a class token; the gated position table (positions × width) and tile position table; layernorm_pre;
    each tile's positions padded to a whole multiple of 8, the tiles of an image run together through num_hidden_layers
    layers (CLIP's form: no attention biases, a two-layer GELU MLP with biases, LayerNorms), layernorm_post, a gated
    post-tile table and num_global_layers gated layers; the padding dropped, the last output and the layers
    intermediate_layers_indices names concatenated (vision_output_dim features) — then multi_modal_projector,
    Linear(vision_output_dim, text width) with a bias, over every tile's positions, class tokens included. Each image
    is max_num_tiles tiles of image_size pixels a side (the processor's largest layout)."""
    v = sub_config(c, "vision_config", {None: "mllama_vision_model"})  # type: ignore[dict-item]
    d, heads = v.int("hidden_size"), v.int("attention_heads")
    if d % heads:
        raise v.fail("attention_heads", f"{heads} heads do not divide the width {d}")
    stated = v.data.get("intermediate_layers_indices")
    features = d * (len(INTERMEDIATE_LAYERS if stated is None else v.int_list("intermediate_layers_indices")) + 1)
    if v.int("vision_output_dim") != features:  # transformers builds it, and no image runs
        raise v.fail("vision_output_dim", f"{v.int('vision_output_dim')}: the tower writes {features} features")
    ratios = v.data.get("supported_aspect_ratios")
    ratios = ASPECT_RATIOS if ratios is None else ratios
    if not isinstance(ratios, list) or not ratios:
        raise v.fail("supported_aspect_ratios", f"expected a list of [rows, columns], got {ratios!r}")
    act = v.activation("hidden_act", "gelu")

    def layers(n: int) -> dict:
        return {
            "d_model": d,
            "n_layers": n,
            "attention": {"n_heads": heads},
            "ffn": {"kind": "dense", "d_ff": v.int("intermediate_size"), "bias": True, "activation": act},
            "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
        }

    patch, size = v.int("patch_size"), v.int("image_size")
    vision = {
        "image_size": size,
        "patch_size": patch,
        "channels": v.int("num_channels", 3),
        "layers": layers(v.int("num_hidden_layers")),
        "patch_bias": False,
        "class_token": True,
        "pre_norm": True,
        "read_class": True,
        "tiles": v.int("max_num_tiles"),
        "pad_to": 8,  # MllamaVisionModel.forward: (8 - positions % 8) % 8 rows of zeros
        "tile_tables": len(ratios) + 1,  # max_aspect_ratio_id + 1: the supported ratios and the padding id
        "global_layers": layers(v.int("num_global_layers")),
        "cross_layers": True,
        "projector": {"width": features, "bias": True},
    }
    return {"vision": vision}
