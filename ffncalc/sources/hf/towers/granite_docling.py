"""Granite Docling's vision tower and connector (GraniteDoclingForConditionalGeneration, as transformers 5.23 builds
it): Idefics3's SigLIP-built tower over tiles of image_size pixels, then GraniteDoclingConnector: a LayerNorm over
each patch (ln_in), a pixel shuffle of scale_factor, the coarse path's projection, a fixed 2-D sine-cosine table added
(a buffer: no parameters, no multiply-adds), ln_mid, a GELU, mlp_fc2 and ln_out; a deepstack merger for each layer of
deepstack_visual_indexes, whose outputs the language model adds to the image's tokens after its first layers (an
addition: no multiply-adds); and the fine path (half the shuffle, four times the tokens), which an image takes only
where the processor is asked for it (fine_route), its parameters built where use_fine_route."""

from __future__ import annotations

from ..config import Config
from . import sub_config, wrapper
from .vit import vit


@wrapper("granite_docling")
def granite_docling(c: Config) -> dict:
    """GraniteDoclingForConditionalGeneration (IBM, Granite Docling) whole: GraniteDoclingVisionModel,
    GraniteDoclingVisionEmbeddings (a Conv2d patch embedding with a bias, a learned table
    of (image_size / patch_size)² rows), SigLIP's encoder layers and post_layernorm; its connector
    (GraniteDoclingConnector): ln_in (LayerNorm of the width), the coarse GraniteDoclingConnectorPath's pixel shuffle of
    scale_factor and projection (Linear(width · scale², out_hidden_size), no bias), ln_mid (LayerNorm), GELU, mlp_fc2
    (Linear(out_hidden_size, out_hidden_size), no bias) and ln_out (LayerNorm); each GraniteDoclingDeepStackMerger a
    LayerNorm over width · scale² shuffled features, linear_1 (to out_hidden_size) → GELU → linear_2, with biases, over
    a tapped layer's output; the fine path the same with scale_factor // 2, run by no image unless asked. Its density
    router (density_router_hidden_size, default none) is not read yet. out_hidden_size must be the text width: the
    class adds the image's tokens to the text's."""
    # none stated (or no model_type): GraniteDoclingConfig builds GraniteDoclingVisionConfig's defaults
    v = sub_config(c, "vision_config", {None: "granite_docling_vision"})  # type: ignore[dict-item]
    width, out = v.int("hidden_size"), v.int("out_hidden_size", 1024)
    text = sub_config(c, "text_config").int("hidden_size")
    if out != text:
        raise v.fail("out_hidden_size", f"{out} features where the language model's width is {text} (its tokens are the text's)")
    if c.data.get("density_router_hidden_size") is not None:
        raise c.fail("density_router_hidden_size", "a density router is not read yet")
    scale = v.int("scale_factor", 4)
    side = v.int("image_size", 512) // v.int("patch_size", 16)
    if scale < 2 or side % scale:
        raise v.fail("scale_factor", f"{scale} does not divide the tile's {side} patches a side (its pixel shuffle groups them)")
    depth = v.int("num_hidden_layers")
    # GraniteDoclingVisionConfig.__post_init__: none stated is [3, 7, 10]
    taps = v.int_list("deepstack_visual_indexes") if v.has("deepstack_visual_indexes") else [3, 7, 10]
    if any(not 0 <= i < depth for i in taps):
        raise v.fail("deepstack_visual_indexes", f"{taps}: each must name one of the tower's {depth} layers")
    projector = {
        "width": width,
        "hidden": out,
        "bias": False,
        "activation": "gelu",
        "norm": "layernorm",
        "prenorm": True,
        "shuffle": scale,
        "mid_norm": True,
        "out_norm": True,
    }
    merger = {"width": width, "hidden": out, "bias": True, "activation": "gelu", "norm": "layernorm", "shuffle": scale}
    over: dict = {"deepstack": len(taps), "deepstack_projector": merger}
    if v.bool("use_fine_route", True):
        fine = scale // 2
        over["fine"] = {"width": width, "bias": False, "shuffle": fine}
        over["fine_deepstack"] = {**merger, "shuffle": fine}
    return {"vision": vit(v, projector, **over)}
