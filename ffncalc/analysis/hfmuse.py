"""MUSE Glimmer's and MUSE Spark's image path as transformers runs it: one image through get_image_features (the
windowed tower, its adapter and vision_projection), FlopCounterMode over it, the whole class built small on the CPU
(MUSE_REDUCED, MUSE_SPARK_REDUCED: its window index and grid are read by value); and MUSE Spark's audio, its samples
through get_audio_features on the meta device."""

from __future__ import annotations

from .hfwhole import REDUCED

MUSE_IMAGE_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over MuseGlimmerModel.get_image_features(pixel_values, image_grid_thw) of "
    "the whole class built small (the record's reduced) on the CPU, eager attention, one image of size × size pixels as "
    "its processor flattens it: (size / 14)² patches of 2 frames × 3 × 14² pixels, grid (1, size / 14, size / 14): the "
    "tower, its adapter and vision_projection, 2 FLOPs per multiply-add of every matmul, summed per module"
)
# Its tower at its own width (the adapter reads out_hidden_size, 4 × 1,536) with two layers, one windowed and one full,
# and a narrow MLP; its language model one layer without rotary positions
MUSE_REDUCED = {
    "vision_config": {"num_hidden_layers": 2, "intermediate_size": 128, "layer_types": ["window_attention", "full_attention"]},
    "text_config": {**REDUCED["text_config"], "layer_types": ["full_attention"], "layer_rope_theta": [0]},
}


MUSE_SPARK_IMAGE_METHOD = MUSE_IMAGE_METHOD.replace("MuseGlimmerModel", "MuseSparkModel")
# MUSE Spark's: the same tower, its language model one dense layer, its audio tower writing that layer's width
# (MuseSparkConfig.validate_architecture)
MUSE_SPARK_REDUCED = {
    "vision_config": MUSE_REDUCED["vision_config"],
    "text_config": {**MUSE_REDUCED["text_config"], "mlp_layer_types": ["dense"]},
    "audio_config": {"out_hidden_size": REDUCED["text_config"]["hidden_size"]},
}


def muse_image_flops(data: dict, size: int, reduced: dict = MUSE_REDUCED) -> dict:
    """FLOPs of one image of ``size`` × ``size`` pixels through the tower, the adapter and vision_projection, per module
    (the class built small: ``reduced``, MUSE_REDUCED or MUSE_SPARK_REDUCED)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from .hfwhole import instantiate_whole

    small = {**data, **{key: {**data[key], **value} for key, value in reduced.items()}}
    net = instantiate_whole(small, "cpu")
    net.requires_grad_(False)
    v = net.config.vision_config
    side = size // v.patch_size
    pixels = torch.ones(side * side, 3 * v.patch_temporal * v.patch_size**2)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        net.model.get_image_features(pixel_values=pixels, image_grid_thw=torch.tensor([[1, side, side]]))
    counts = counter.get_flop_counts()
    modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}
    return {"size": size, "total": sum(counts["Global"].values()), "modules": modules}


MUSE_SPARK_AUDIO_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over MuseSparkModel.get_audio_features(input_values) of the whole class on "
    "the meta device, input_values of shape (1, tokens × 1,920) (24 kHz samples, whole tokens as MuseSparkFeatureExtractor "
    "pads them), no padding mask: the audio tower (its four stages' patch embeddings and causal depthwise convolution "
    "blocks, norm, proj, post_proj_norm) and the embedding norm, 2 FLOPs per multiply-add of every convolution and "
    "matmul, summed per module"
)


def muse_spark_audio_flops(data: dict, tokens: int) -> dict:
    """MUSE Spark: ``tokens`` × samples_per_token samples of audio through get_audio_features, on the meta device."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from .hfwhole import instantiate_whole

    net = instantiate_whole(data)
    net.requires_grad_(False)
    samples = tokens * net.config.audio_config.samples_per_token
    values = torch.zeros(1, samples, device="meta")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        net.model.get_audio_features(input_values=values)
    counts = counter.get_flop_counts()
    modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}
    return {"tokens": tokens, "samples": samples, "total": sum(counts["Global"].values()), "modules": modules}
