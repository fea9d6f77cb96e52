"""Granite 4 Vision's tower and projectors (Granite4VisionForConditionalGeneration, as transformers 5.23 builds it):
LLaVA-NeXT's layout (a CLIP or SigLIP tower, an image_newline row of the text width) whose one projector is replaced by
Window Q-Former downsamplers (Granite4VisionWindowQFormerDownsampler, parts/qformer.py with ``window``): one for each
pair of deepstack_layer_map (layerwise_projectors), reading that tower layer's output, and four more (spatial_projectors,
one a corner of every 2 × 2 patches) reading spatial_vision_layer's: the spatial ones the projector (four copies,
``projectors``), the layerwise ones its deepstack. Each writes the image's tokens; the language model
adds each projector's to the image's tokens before its own layer (deepstack_layer_map's, spatial_target_layers'): an
addition, no multiply-adds. An image here is one crop at the tower's image_size (the anyres crops of
image_grid_pinpoints each another), g = image_size / patch_size patches a side, (g / window_side)² windows of
query_side² tokens: g² · (query_side / window_side)² tokens."""

from __future__ import annotations

from ..config import Config
from . import sub_config, wrapper
from .vit import vit

# Granite4VisionConfig.sub_configs_defaults: the Q-Former a config without qformer_config builds (init_kwargs)
QFORMER_DEFAULTS = {"num_hidden_layers": 1, "intermediate_size": 3072, "cross_attention_frequency": 1, "hidden_act": "gelu"}


def _rate(c: Config) -> tuple[int, int]:
    """downsample_rate "query_side/window_side" (Granite4VisionWindowQFormerDownsampler splits it at "/")."""
    rate = c.data.get("downsample_rate")
    if rate is None:
        raise c.fail("downsample_rate", "none stated: its Window Q-Former's query and window sides (transformers builds no class)")
    parts = str(rate).split("/")
    if len(parts) != 2 or not all(p.strip().isdigit() and int(p) > 0 for p in parts) or int(parts[0]) > int(parts[1]):
        raise c.fail("downsample_rate", f'{rate!r}: expected "query_side/window_side", two positive integers, the first no larger')
    return int(parts[0]), int(parts[1])


@wrapper("granite4_vision")
def granite4_vision(c: Config) -> dict:
    """Granite4VisionForConditionalGeneration (IBM, Granite Vision 4) whole: its vision_config's tower (a CLIP tower by
    default); each Granite4VisionWindowQFormerDownsampler: norm (a LayerNorm over the tower's width), query
    (query_side² rows) and image_positions (window_side² rows), a Blip2QFormerModel of qformer_config (its hidden_size,
    encoder_hidden_size and heads set from the tower: width, width and width // 64; a config without qformer_config one
    layer of cross-attention and an MLP of 3,072) and out_linear (Linear(width, text width) with a bias);
    len(deepstack_layer_map) of them and four spatial ones; model.image_newline (the text width)."""
    # none stated (or no model_type): Granite4VisionConfig builds CLIPVisionConfig's defaults (sub_configs_defaults)
    v = sub_config(c, "vision_config", {None: "clip_vision_model"})  # type: ignore[dict-item]
    query_side, window = _rate(c)
    layer_map = c.data.get("deepstack_layer_map")
    if not isinstance(layer_map, list) or not layer_map:
        raise c.fail("deepstack_layer_map", f"{layer_map!r}: a list of [vision layer, text layer] pairs, at least one")
    d = v.int("hidden_size")
    heads = d // 64  # Granite4VisionConfig.__post_init__
    if heads < 1 or d % heads:
        raise v.fail("hidden_size", f"{d}: its Q-Former's {heads} heads (hidden_size // 64) do not divide it")
    stated = c.data.get("qformer_config") is not None
    q = sub_config(c, "qformer_config", {None: "blip_2_qformer"}) if stated else None  # type: ignore[dict-item]

    def qint(key: str) -> int:
        return q.int(key) if q is not None else QFORMER_DEFAULTS[key]

    qformer = {
        "queries": query_side**2,
        "depth": qint("num_hidden_layers"),
        "width": d,
        "heads": heads,
        "d_ff": qint("intermediate_size"),
        "context": d,
        "cross_every": qint("cross_attention_frequency"),
        "activation": q.activation("hidden_act", "gelu") if q is not None else "gelu",
        "window": window,
    }
    projector = {"width": d, "bias": True, "norm": "layernorm", "qformer": qformer}
    read_class = c.data.get("vision_feature_select_strategy", "default") == "full"
    # the four spatial ones the projector's copies (Granite4VisionModel: range(4), whatever spatial_target_layers
    # states), the layerwise ones its deepstack
    spec = vit(v, projector, read_class=read_class, newline=True, projectors=4, deepstack=len(layer_map))
    if bool(spec.get("class_token")) == read_class:  # the projector reads a square grid of patches alone
        strategy = "full" if read_class else "default"
        raise c.fail(
            "vision_feature_select_strategy", f"{strategy!r}: its Window Q-Former reads the tower's patches alone, a square grid"
        )
    return {"vision": spec}
