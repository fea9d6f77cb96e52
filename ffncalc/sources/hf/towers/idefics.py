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
    (no projector), or where use_resampler IdeficsPerceiverResampler's (parts/resampler.py) of perceiver_config:
    resampler_n_latents latents of the tower's width reading them, resampler_depth layers of resampler_n_heads heads of
    resampler_head_dim, LayerNorms, an MLP of 4 × the tower's width (fc, ReLU, c_proj), a final LayerNorm."""
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
        "cross_layers": True,
        "projector": {"width": d, "linear": False},
    }
    # IdeficsModel reads the wrapper's use_resampler (its perceiver_config's own is not read)
    if c.bool("use_resampler", False):
        p = sub_config(c, "perceiver_config", {None: "idefics_perciever"})  # type: ignore[dict-item]
        if p.bool("qk_layer_norms_perceiver", False):
            raise p.fail("qk_layer_norms_perceiver", "true: the resampler's q and k LayerNorms are not read yet")
        heads = p.int("resampler_n_heads")
        resampler = {
            "latents": p.int("resampler_n_latents"),
            "depth": p.int("resampler_depth"),
            "n_heads": heads,
            "n_kv_heads": heads,
            "head_dim": p.int("resampler_head_dim"),
            "d_ff": 4 * d,  # IdeficsPerceiverResampler: vision_config.embed_dim × 4
            "width": d,
            "norm": "layernorm",
            "gated": False,
        }
        vision["projector"] = {"width": d, "linear": False, "resampler": resampler}
    return {"vision": vision}
