"""Dots3 Note's towers as transformers runs them: one image, and one audio window, through Dots3NoteModel's
get_image_features and get_audio_features, FlopCounterMode over each. The whole class is built on the meta device
from its configuration with its towers small (DOTS3_REDUCED: a routed layer's experts are chosen by value), and its
towers then given memory on the CPU; its experts run eagerly, each expert a Linear over the patches routed to it (the
default grouped_mm is an operation FlopCounterMode does not count)."""

from __future__ import annotations

DOTS3_IMAGE_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over Dots3NoteModel.get_image_features(pixel_values, image_grid_thw) of "
    "the whole class (built on the meta device, its vision tower given memory on the CPU, built small: the record's "
    "reduced), eager attention and eager experts, one image of size × size pixels as its processor flattens it: (size / "
    "patch_size)² patches of 3 × patch_size² pixels, grid (1, side, side): 2 FLOPs per multiply-add of every matmul and "
    "convolution, summed per module"
)
DOTS3_AUDIO_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over Dots3NoteModel.get_audio_features(input_features, "
    "chunk_sample_lengths) of the whole class (built on the meta device, its audio tower given memory on the CPU, built "
    "small: the record's reduced), eager attention, one chunk of positions × 8 log-mel frames, positions × "
    "samples_per_token samples long (every position valid): 2 FLOPs per multiply-add of every matmul and convolution, "
    "summed per module"
)
# Its towers built small; the adapters still write the language model's width (adapter_out_dim, which the class checks)
DOTS3_REDUCED = {
    "vision_config": {
        "hidden_size": 64,
        "num_attention_heads": 4,
        "intermediate_size": 96,
        "moe_intermediate_size": 48,
        "num_hidden_layers": 4,
        "mlp_layer_types": ["dense", "dense", "sparse", "sparse"],
        "per_layer_config": {"2": {"num_local_experts": 4}, "3": {"num_local_experts": 8}},
        "adapter_in_dim": 64,
    },
    "audio_config": {
        "hidden_size": 64,
        "num_attention_heads": 4,
        "intermediate_size": 96,
        "num_hidden_layers": 2,
        "downsample_hidden_size": 8,
        "adapter_input_size": 64,
        "conv_output_size": 8 * 16,  # stated in its configuration: channels × the 16 mel bins three convolutions leave
    },
}


def _built(data: dict, tower: str):
    """The whole class, small (DOTS3_REDUCED), on the meta device, with ``tower`` given memory on the CPU and its
    experts run eagerly."""
    import torch

    from .hfwhole import instantiate_whole

    small = {**data, **{key: {**data[key], **value} for key, value in DOTS3_REDUCED.items()}}
    net = instantiate_whole(small)
    setattr(net.model, tower, getattr(net.model, tower).to_empty(device="cpu"))
    for module in getattr(net.model, tower).modules():
        if hasattr(module, "gate_up_proj") and hasattr(module, "config"):
            module.config._experts_implementation = "eager"
    with torch.no_grad():  # routing reads the scores' values: a fixed weight of its own, no NaN
        for p in getattr(net.model, tower).parameters():
            p.copy_(torch.full_like(p, 0.01) + torch.arange(p.numel(), dtype=p.dtype).reshape(p.shape) % 7 * 1e-3)
    net.requires_grad_(False)
    return net


def _record(counter, **key) -> dict:
    counts = counter.get_flop_counts()
    modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}
    return {**key, "total": sum(counts["Global"].values()), "modules": modules}


def dots3_image_flops(data: dict, size: int) -> dict:
    """One image of ``size`` pixels a side through the vision tower and its merger."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    net = _built(data, "vision_tower")
    v = net.config.vision_config
    side = size // v.patch_size
    pixels = torch.ones(side * side, v.num_channels * v.patch_size**2)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        net.model.get_image_features(pixel_values=pixels, image_grid_thw=torch.tensor([[1, side, side]]))
    return _record(counter, size=size)


def dots3_audio_flops(data: dict, positions: int) -> dict:
    """One chunk of ``positions`` positions (8 frames each) through the audio tower and its adapter."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    net = _built(data, "audio_tower")
    a = net.config.audio_config
    features = torch.ones(1, a.feature_size, 8 * positions)
    samples = torch.tensor([positions * a.samples_per_token])
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        net.model.get_audio_features(input_features=features, chunk_sample_lengths=samples)
    return _record(counter, positions=positions)
