"""Gemma 3n's audio and image paths as transformers runs them: one clip of log-mel frames through
Gemma3nModel.get_audio_features (the audio tower and embed_audio), one image through get_image_features (the
MobileNetV5 tower through TimmWrapperModel, and embed_vision), FlopCounterMode over each, the whole class on the meta
device (its audio tower's masks and gathers, and timm's tower, run there as on the CPU)."""

from __future__ import annotations

GEMMA3N_AUDIO_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over Gemma3nModel.get_audio_features(input_features, input_features_mask) "
    "of the whole class on the meta device, eager attention, one clip of frames × 128 log-mel bins (Gemma3nAudioFeature"
    "Extractor's frames: 2,997 for 30 s of 16 kHz audio, 997 for 10 s), no frame masked: the audio tower and embed_audio, "
    "2 FLOPs per multiply-add of every matmul and convolution, summed per module"
)
GEMMA3N_IMAGE_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over Gemma3nModel.get_image_features(pixel_values) of the whole class on "
    "the meta device (timm 1.0.31's MobileNetV5 through TimmWrapperModel, its attention through scaled_dot_product_"
    "attention, counted as its products), one image of 3 × size × size pixels: the tower and embed_vision, 2 FLOPs per "
    "multiply-add of every matmul and convolution, summed per module"
)
# Frames of one clip at which the audio FLOPs are recorded: 30 s and 10 s of audio (parts/gemma3n_audio.py: frames_of)
GEMMA3N_FRAMES = (2997, 997)


def _counted(run) -> tuple[int, dict]:
    """FlopCounterMode's total over ``run()`` and its top-level modules'."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        run()
    counts = counter.get_flop_counts()
    modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}
    return sum(counts["Global"].values()), modules


def gemma3n_audio_flops(data: dict, frames: int) -> dict:
    """FLOPs of one clip of ``frames`` frames through the audio tower and embed_audio, per module."""
    import torch

    from .hfwhole import instantiate_whole

    net = instantiate_whole(data)
    net.requires_grad_(False)
    bins = net.config.audio_config.input_feat_size
    features = torch.ones(1, frames, bins, device="meta")
    mask = torch.zeros(1, frames, dtype=torch.bool, device="meta")  # True where a frame is padding: none
    total, modules = _counted(lambda: net.model.get_audio_features(features, mask))
    return {"frames": frames, "total": total, "modules": modules}


def gemma3n_image_flops(data: dict, size: int) -> dict:
    """FLOPs of one image of ``size`` × ``size`` pixels through the vision tower and embed_vision, per module."""
    import torch

    from .hfwhole import instantiate_whole

    net = instantiate_whole(data)
    net.requires_grad_(False)
    pixels = torch.ones(1, 3, size, size, device="meta")
    total, modules = _counted(lambda: net.model.get_image_features(pixel_values=pixels))
    return {"size": size, "total": total, "modules": modules}
