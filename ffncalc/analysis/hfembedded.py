"""Phi-4-multimodal's and Inkling's towers as transformers builds them (analysis/hfwhole.py's measurements for the
two multimodal classes whose media enter through embedding modules of their own): FlopCounterMode over one image or
one audio window."""

from __future__ import annotations

from .hfwhole import instantiate_whole

PHI4_IMAGE_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over Phi4MultimodalImageEmbedding.forward of the whole class (built on the "
    "meta device, its image embedding given memory on the CPU), eager attention, one image of size × size pixels as its "
    "processor cuts it: the global image and ⌈size / crop_size⌉² crops, each (3, crop_size, crop_size), every patch "
    "real, image_sizes the crops' pixels: 2 FLOPs per multiply-add of every matmul and convolution, summed per module"
)
PHI4_AUDIO_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over Phi4MultimodalAudioEmbedding's encoder and its speech projector "
    "(up_proj_for_speech → GELU → down_proj_for_speech, as its forward runs them) of the whole class on the meta device, "
    "eager attention, input features of shape (1, time_reduction × positions, input_size): 2 FLOPs per multiply-add of "
    "every matmul and convolution, summed per module"
)
PHI4_REDUCED = {"vision_config": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4}}


def phi4_image_flops(data: dict, size: int) -> dict:
    """Phi-4-multimodal: one image of ``size`` pixels a side through its image embedding (the tower over the global
    image and every crop, the HD transform, the projector), as its forward runs them."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    net = instantiate_whole(data)
    outer = net.model.embed_tokens_extend
    outer.image_embed = outer.image_embed.to_empty(device="cpu")
    net.requires_grad_(False)
    v = net.config.vision_config
    side, grid = -(-size // v.crop_size), v.crop_size // v.patch_size
    g = grid // 2
    tokens = g * (g + 1) + 1 + side * g * (side * g + 1)  # the processor's num_img_tokens
    pixels = torch.ones(1, side * side + 1, 3, v.crop_size, v.crop_size)
    mask = torch.ones(1, side * side + 1, grid, grid)
    ids = torch.full((1, tokens), v.image_token_id)
    embeds = torch.zeros(1, tokens, net.config.hidden_size)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        processed = side * v.crop_size  # the processor's image_sizes: the image resized and padded to whole crops
        outer.image_embed(ids, embeds, pixels, image_sizes=torch.tensor([[processed, processed]]), image_attention_mask=mask)
    counts = counter.get_flop_counts()
    modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}
    return {"size": size, "tokens": tokens, "total": sum(counts["Global"].values()), "modules": modules}


def phi4_audio_flops(data: dict, positions: int) -> dict:
    """Phi-4-multimodal: one window of ``positions`` positions (time_reduction × as many frames) through its encoder
    and its speech projector."""
    import torch
    from torch import nn
    from torch.utils.flop_counter import FlopCounterMode

    net = instantiate_whole(data)
    net.requires_grad_(False)
    a = net.config.audio_config
    embed = net.model.embed_tokens_extend.audio_embed
    features = torch.ones(1, a.time_reduction * positions, a.input_size, device="meta")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        h = embed.encoder(features, None)
        embed.down_proj_for_speech(nn.functional.gelu(embed.up_proj_for_speech(h)))
    counts = counter.get_flop_counts()
    modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}
    return {"positions": positions, "total": sum(counts["Global"].values()), "modules": modules}


INKLING_IMAGE_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over model.get_image_features(pixel_values) of the whole class on the meta "
    "device, one image of size × size pixels as its processor cuts it: ⌈size / patch_size⌉ rows of size // patch_size + "
    "1 patches, pixel_values of shape (patches, temporal_patch_size, patch_size, patch_size, num_channels): 2 FLOPs per "
    "multiply-add of every matmul, summed per module"
)
INKLING_AUDIO_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over model.get_audio_features(audio_input_ids) of the whole class on the "
    "meta device, audio_input_ids of shape (frames, n_mel_bins): its table's lookups and their sum, no matmul"
)


def inkling_image_flops(data: dict, size: int) -> dict:
    """Inkling: one image of ``size`` pixels a side, its patches through the vision tower."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    net = instantiate_whole(data)
    net.requires_grad_(False)
    v = net.config.vision_config
    p = v.patch_size
    patches = -(-size // p) * (size // p + 1)  # divide_to_patches
    pixels = torch.ones(patches, v.temporal_patch_size, p, p, v.num_channels, device="meta")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        net.model.get_image_features(pixel_values=pixels)
    counts = counter.get_flop_counts()
    modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}
    return {"size": size, "tokens": patches, "total": sum(counts["Global"].values()), "modules": modules}


def inkling_audio_flops(data: dict, frames: int) -> dict:
    """Inkling: ``frames`` frames of quantised mel bins through the audio tower."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    net = instantiate_whole(data)
    net.requires_grad_(False)
    ids = torch.zeros(frames, net.config.audio_config.n_mel_bins, dtype=torch.long, device="meta")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        net.model.get_audio_features(audio_input_ids=ids)
    return {"frames": frames, "total": sum(counter.get_flop_counts().get("Global", {}).values())}
