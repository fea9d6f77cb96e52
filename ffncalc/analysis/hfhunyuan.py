"""HunyuanOCR's image path as transformers runs it: one image through HunYuanVLModel.get_image_features (the vision
tower and its patch merger), FlopCounterMode over it. The whole class is built small on the CPU (HUNYUAN_REDUCED: the
tower splits its patches by the grid's values)."""

from __future__ import annotations

from .hfwhole import REDUCED

HUNYUAN_IMAGE_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over HunYuanVLModel.get_image_features(pixel_values, image_grid_thw) of "
    "the whole class built small (the record's reduced) on the CPU, eager attention, one image of size × size pixels as "
    "its processor flattens it: (size / 16)² patches of 3 × 16² pixels, grid (1, size / 16, size / 16): the tower and its "
    "patch merger, 2 FLOPs per multiply-add of every matmul and convolution, summed per module"
)
# Its tower at its own width (the merger's convolutions at 2 and 4 × 1,152) with two layers and a narrow MLP; its
# language model (whose width the merger writes) one narrow layer, its XD-RoPE sections halving its head of 16
HUNYUAN_REDUCED = {
    "vision_config": {"num_hidden_layers": 2, "intermediate_size": 128},
    "text_config": {
        **REDUCED["text_config"],
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 2, 2, 2]},
    },
}


def hunyuan_image_flops(data: dict, size: int) -> dict:
    """FLOPs of one image of ``size`` × ``size`` pixels through the tower and its patch merger, per module (the class
    built small: HUNYUAN_REDUCED)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from .hfwhole import instantiate_whole

    small = {**data, **{key: {**data[key], **value} for key, value in HUNYUAN_REDUCED.items()}}
    net = instantiate_whole(small, "cpu")
    net.requires_grad_(False)
    v = net.config.vision_config
    side = size // v.patch_size
    pixels = torch.ones(side * side, v.num_channels * v.patch_size**2)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        net.model.get_image_features(pixel_values=pixels, image_grid_thw=torch.tensor([[1, side, side]]))
    counts = counter.get_flop_counts()
    modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}
    return {"size": size, "total": sum(counts["Global"].values()), "modules": modules}
