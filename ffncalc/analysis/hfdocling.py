"""Granite Docling's image path as transformers runs it: one tile through GraniteDoclingModel.get_image_features (its
vision model: the tower, then the connector's coarse path and deepstack mergers), FlopCounterMode over it. The whole
class is built on the meta device and its vision model given memory on the CPU: the class drops padding tiles by the
values of pixel_attention_mask and looks its position table up by position_ids, a buffer set here as it initialises
it."""

from __future__ import annotations

DOCLING_IMAGE_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over GraniteDoclingModel.get_image_features(pixel_values, "
    "pixel_attention_mask) of the whole class (built on the meta device, its vision model given memory on the CPU), "
    "eager attention, one sample of one tile of shape (1, 1, 3, size, size), vision_config.image_size set to size, "
    "the coarse path (no tile_fine_mask): 2 FLOPs per multiply-add of every matmul and convolution, summed per module"
)


def docling_image_flops(data: dict, size: int) -> dict:
    """FLOPs of one tile of ``size`` × ``size`` pixels through the vision model and its connector, per module."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from .hfwhole import instantiate_whole

    sized = {**data, "vision_config": {**data.get("vision_config", {}), "image_size": size}}
    net = instantiate_whole(sized)
    net.model.vision_model = net.model.vision_model.to_empty(device="cpu")
    ids = net.model.vision_model.embeddings.position_ids
    ids.copy_(torch.arange(ids.shape[-1]).expand_as(ids))  # GraniteDoclingPreTrainedModel._init_weights' arange
    net.requires_grad_(False)
    pixels = torch.ones(1, 1, 3, size, size)
    with FlopCounterMode(display=False) as counter:
        net.model.get_image_features(pixel_values=pixels, pixel_attention_mask=torch.ones(1, 1, dtype=torch.bool))
    counts = counter.get_flop_counts()
    modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}
    return {"size": size, "total": sum(counts["Global"].values()), "modules": modules}
