"""DiffusionGemma's image path as transformers runs it: DiffusionGemmaEncoderModel.get_image_features (Gemma 4's vision
tower, its pooler, and embed_vision) over the processor's flattened patches of one image, FlopCounterMode over it. The
whole class (DiffusionGemmaForBlockDiffusion) is built on the meta device, its encoder's vision_tower and embed_vision
then given memory on the CPU: Gemma 4's pooler reads the patches' positions (the FLOPs are the shapes')."""

from __future__ import annotations

DGEMMA_IMAGE_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over model.encoder.get_image_features(pixel_values, image_position_ids) of "
    "the whole class built on the meta device, its encoder's vision_tower and embed_vision given memory on the CPU, eager "
    "attention, one image of size × size pixels as (size / patch_size)² flattened patches of 3 × patch_size² values and "
    "their (x, y): 2 FLOPs per multiply-add of every matmul, summed per module"
)


def dgemma_image_flops(data: dict, size: int) -> dict:
    """FLOPs of one image of ``size`` × ``size`` pixels through the encoder's vision tower and embed_vision, per module."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from .hfwhole import instantiate_whole

    net = instantiate_whole(data)
    encoder = net.model.encoder
    for name in ("vision_tower", "embed_vision"):
        setattr(encoder, name, getattr(encoder, name).to_empty(device="cpu"))
    net.requires_grad_(False)
    p = net.config.vision_config.patch_size
    side = size // p
    grid = torch.arange(side * side)
    positions = torch.stack([grid % side, grid // side], dim=-1)[None]
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        encoder.get_image_features(pixel_values=torch.ones(1, side * side, 3 * p * p), image_position_ids=positions)
    counts = counter.get_flop_counts()
    modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}
    return {"size": size, "total": sum(counts["Global"].values()), "modules": modules}
