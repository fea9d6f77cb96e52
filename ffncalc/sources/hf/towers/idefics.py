"""IDEFICS (Laurençon et al. 2023; transformers' IdeficsForVisionText2Text) read whole: its CLIP-built vision tower
(the ``vision`` part, parts/vision.py), whose rows the language model's gated cross-attention layers read
(families/idefics.py, parts/cross_attention.py)."""

from __future__ import annotations

from ..config import Config
from . import sub_config, wrapper


@wrapper("idefics")
def idefics(c: Config) -> dict:
    """IdeficsForVisionText2Text: IdeficsVisionTransformer, CLIP's form at vision_config's embed_dim (a patch
    convolution without a bias, a class token, a learned position a position, pre_layrnorm, layers with biased
    attention and a biased two-layer MLP, LayerNorms; post_layernorm over the class token alone, for a pooled output
    nothing reads); its last layer's rows, class token included, are the cross-attention's keys and values as they are
    (no projector). The perceiver resampler (use_resampler) is not read yet."""
    if c.bool("use_resampler", False):
        raise c.fail("use_resampler", "true: IDEFICS' perceiver resampler is not read yet")
    v = sub_config(c, "vision_config", {None: "idefics_vision"})  # type: ignore[dict-item]
    d, heads = v.int("embed_dim"), v.int("num_attention_heads")
    if d % heads:
        raise v.fail("num_attention_heads", f"{heads} heads do not divide the width {d}")
    vision = {
        "image_size": v.int("image_size"),
        "patch_size": v.int("patch_size"),
        "channels": v.int("num_channels", 3),
        "layers": {
            "d_model": d,
            "n_layers": v.int("num_hidden_layers"),
            "attention": {"n_heads": heads, "qkv_bias": True, "o_bias": True},
            "ffn": {
                "kind": "dense",
                "d_ff": v.int("intermediate_size"),
                "bias": True,
                "activation": v.activation("hidden_act", "gelu"),
            },
            "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
        },
        "patch_bias": False,
        "class_token": True,
        "pre_norm": True,
        "read_class": True,
        "cross": True,
        "projector": {"width": d, "linear": False},
    }
    return {"vision": vision}
