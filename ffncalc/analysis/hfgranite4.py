"""Granite 4 Vision's image path as transformers runs it: one crop through the calls Granite4VisionModel.get_image_features
makes (the vision tower with its hidden states; each layerwise projector over the layer its deepstack_layer_map pair
names, each spatial projector over spatial_vision_layer's, the class token dropped by the "default" strategy),
FlopCounterMode over them. Its packing of the crops (torch.split, unpad_image, the newline rows) has no multiply-adds,
and asks for the anyres crops of image_grid_pinpoints, which one crop at the tower's size is not."""

from __future__ import annotations

GRANITE4_IMAGE_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over Granite4VisionModel's vision_tower(pixel_values, "
    "output_hidden_states=True) and each of its layerwise_projectors and spatial_projectors over the hidden states "
    "get_image_features hands it (the class token dropped), of the whole class on the meta device built with the "
    "record's reduced, eager attention, one crop of shape (1, 3, size, size), vision_config.image_size set to size: "
    "2 FLOPs per multiply-add of every matmul and convolution, summed per module"
)
# Its tower at the released Granite Vision 4.1 tower's 27 layers, so that the released map's vision layers (-19 the
# deepest) are hidden states of it; the rest as the class's defaults
GRANITE4_REDUCED = {"vision_config": {"num_hidden_layers": 27}}


def granite4_image_flops(data: dict, size: int) -> dict:
    """FLOPs of one crop of ``size`` × ``size`` pixels through the tower and every projector, per module."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from .hfwhole import instantiate_whole

    vision = {**data["vision_config"], **GRANITE4_REDUCED["vision_config"], "image_size": size}
    net = instantiate_whole({**data, "vision_config": vision})
    net.requires_grad_(False)
    model, config = net.model, net.config
    start = 1 if config.vision_feature_select_strategy == "default" else 0
    pixels = torch.ones(1, 3, size, size, device="meta")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        states = model.vision_tower(pixels, output_hidden_states=True).hidden_states
        for projector, (layer, _) in zip(model.layerwise_projectors, config.deepstack_layer_map):
            projector(states[layer][:, start:])
        for projector in model.spatial_projectors:
            projector(states[config.spatial_vision_layer][:, start:])
    counts = counter.get_flop_counts()
    modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}
    return {"size": size, "total": sum(counts["Global"].values()), "modules": modules}
