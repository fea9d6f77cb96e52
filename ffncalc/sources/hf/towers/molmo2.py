"""Molmo 2 read whole (Molmo2ForConditionalGeneration, Ai2 2025, as transformers 5.23 builds it): a SigLIP-form tower
over 378-pixel crops, an adapter pooling 2 × 2 windows of two of its layers' outputs by attention and a SwiGLU
(parts/window_pooling.py), beside its language model (molmo2_text, families/molmo2.py); an image's crops and tokens as
its processor makes them (parts/molmo2_vision.py).

The released checkpoints' config.json states the tower under vit_config with keys of their own (image_default_input_size,
image_patch_size, image_num_pos; the adapter's vit_layers): Molmo2Config reads them as vision_config's, takes each
vit_layers index modulo the tower's depth and builds only the layers up to the deepest it reads."""

from __future__ import annotations

from ..config import Config
from . import sub_config, wrapper

MOLMO2_IMAGE_SIZE = 378  # pixels a side: one crop (1 × 1 tiling) and the global crop, 196 + 196 tokens


def _side(v: Config, key: str, legacy: str, default: int | None) -> int | None:
    """A square size stated as an int or [height, width], under its key or the released checkpoints' own."""
    value = v.data.get(key, v.data.get(legacy))
    if value is None:
        return default
    if isinstance(value, list) and len(value) == 2 and value[0] == value[1]:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise v.fail(key if key in v.data else legacy, f"expected a positive size, square where a list, got {value!r}")
    return value


@wrapper("molmo2")
def molmo2(c: Config) -> dict:
    """Molmo2ForConditionalGeneration (Ai2 2025, Molmo 2) whole: Molmo2VisionModel (positional_embedding, a learned table
    of num_position_embeddings rows added to the patches; patch_embedding, Linear(patch² × channels, hidden_size) with a
    bias; num_hidden_layers Molmo2VisionEncoderLayers: layer_norm1 and layer_norm2 LayerNorms, q_proj, k_proj, v_proj
    and o_proj with attention_bias (num_attention_heads of head_dim, num_key_value_heads for keys and values), fc1 →
    hidden_act → fc2 with biases; no norm after them), Molmo2Adapter (image_pooling_2d over vision_feature_layer's
    outputs side by side, image_projector to text_hidden_size), beside Molmo2TextModel."""
    legacy = c.data.get("vision_config") is None and c.data.get("vit_config") is not None
    v = sub_config(c, "vit_config" if legacy else "vision_config", {None: "molmo2_vision", "molmo2": "molmo2_vision"})  # type: ignore[dict-item]
    a = sub_config(c, "adapter_config", {None: "molmo2_adapter", "molmo2": "molmo2_adapter"})  # type: ignore[dict-item]
    # Molmo2VisionConfig's defaults: 1,152 wide, 25 layers of 16 heads of 72, 378-pixel images of 14-pixel patches
    d, heads = v.int("hidden_size", 1152), v.int("num_attention_heads", 16)
    kv, head_dim = v.int("num_key_value_heads", 16), v.int("head_dim", 72)
    if heads % kv:
        raise v.fail("num_key_value_heads", f"{kv} key-value heads do not divide {heads} heads")
    patch = _side(v, "patch_size", "image_patch_size", 14)
    image = _side(v, "image_size", "image_default_input_size", 378)
    grid = image // patch
    if grid < 1:
        raise v.fail("image_size", f"{image} pixels hold no {patch}-pixel patch")
    table = v.data.get("num_position_embeddings", v.data.get("image_num_pos")) or grid * grid
    if table != grid * grid:  # Molmo2VisionModel adds the whole table to a crop's patches
        raise v.fail("num_position_embeddings", f"{table} rows where a crop is {grid * grid} patches: no image runs")
    depth = v.int("num_hidden_layers", 25)
    layers = a.data.get("vision_feature_layer", a.data.get("vit_layers")) or [24, 18]  # Molmo2AdapterConfig's default
    if not isinstance(layers, list) or not layers or not all(isinstance(k, int) and not isinstance(k, bool) for k in layers):
        raise a.fail("vision_feature_layer", f"expected a list of layer indices, got {layers!r}")
    if legacy:  # Molmo2Config.__post_init__: the indices modulo the depth, the layers up to the deepest built
        layers = [k % depth for k in layers]
        depth = max(layers) + 1
    if not all(-depth <= k < depth for k in layers):  # Molmo2Config.validate_architecture
        raise a.fail("vision_feature_layer", f"{layers} must index the tower's {depth} layers")
    ah, akv = a.int("num_attention_heads", 16), a.int("num_key_value_heads", 16)
    if ah % akv:
        raise a.fail("num_key_value_heads", f"{akv} key-value heads do not divide {ah} heads")
    pooling = {
        "n_heads": ah,
        "n_kv_heads": akv,
        "head_dim": a.int("head_dim", 72),
        "hidden": a.int("hidden_size", 1152),
        "d_ff": a.int("intermediate_size", 18944),
        "out": a.int("text_hidden_size", 3584),
        "attention_bias": a.bool("attention_bias", True),
        "mlp_bias": a.bool("mlp_bias", False),
    }
    bias = v.bool("attention_bias", True)
    return {
        "molmo2_vision": {
            "layers": {
                "d_model": d,
                "n_layers": depth,
                "attention": {"n_heads": heads, "n_kv_heads": kv, "head_dim": head_dim, "qkv_bias": bias, "o_bias": bias},
                "ffn": {
                    "kind": "dense",
                    "d_ff": v.int("intermediate_size", 4304),
                    "bias": True,
                    "activation": v.activation("hidden_act", "gelu_pytorch_tanh"),
                },
                "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
            },
            "image_size": MOLMO2_IMAGE_SIZE,
            "crop": image,
            "patch_size": patch,
            "channels": v.int("num_channels", 3),
            "patch_bias": True,
            "pre_norm": False,
            "post_norm": False,
            # q_proj, k_proj and v_proj read the adapter's hidden_size × the layers it reads (pooling_input_dim)
            "projector": {"width": pooling["hidden"] * len(layers), "window_pooling": pooling},
        }
    }


molmo2.reads = ("adapter_config", "vit_config")  # type: ignore[attr-defined]  # read beside its molmo2_vision part
