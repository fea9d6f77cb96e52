"""Vision Transformers as transformers builds CLIP's and SigLIP's vision models (CLIPVisionModel, SiglipVisionModel):
patch embedding by a convolution, learned positions, pre-norm layers of bidirectional attention with biases on
q/k/v/out_proj and a two-layer MLP with biases, LayerNorms with biases; CLIP adds a class embedding and pre_layrnorm,
SigLIP a bias on the patch convolution and, where vision_use_head, an attention-pooling head."""

from __future__ import annotations

from ..config import Config

VISION_TYPES = ("clip_vision_model", "siglip_vision_model")


def vit(v: Config, projector: dict, **over) -> dict:
    """The ``vision`` part of a CLIP or SigLIP vision_config (hidden_size, intermediate_size, num_hidden_layers,
    num_attention_heads, image_size, patch_size, num_channels, hidden_act), with ``projector``."""
    kind = v.model_type or "clip_vision_model"
    if kind not in VISION_TYPES:
        raise v.fail("model_type", f"a vision tower of {kind!r} is not read yet (read: {', '.join(VISION_TYPES)})")
    clip = kind == "clip_vision_model"
    d = v.int("hidden_size")
    return {
        "layers": {
            "d_model": d,
            "n_layers": v.int("num_hidden_layers"),
            "attention": {"n_heads": v.int("num_attention_heads"), "qkv_bias": True, "o_bias": True},
            "ffn": {
                "kind": "dense",
                "d_ff": v.int("intermediate_size"),
                "bias": True,
                "activation": v.activation("hidden_act", "gelu"),
            },
            "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
        },
        "image_size": v.int("image_size"),
        "patch_size": v.int("patch_size"),
        "channels": v.int("num_channels", 3),
        "patch_bias": not clip,
        "class_token": clip,
        "pre_norm": clip,
        "head": not clip and v.bool("vision_use_head", True),
        "projector": projector,
        **over,
    }
