"""Chameleon's and Emu3's image paths as transformers runs them: one image through ChameleonVQVAE.encode or
Emu3VQVAE.encode (the VQ-VAE's encoder, Emu3's temporal layers, quant_conv and quantizer, whose codes the model maps to
its own tokens), FlopCounterMode over it. The whole class is
built on the meta device: every product's shapes are its FLOPs."""

from __future__ import annotations

VQVAE_IMAGE_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over model.vqmodel.encode(pixel_values) of the whole class built on the "
    "meta device (its vocabulary_map empty), one image of size × size pixels (Emu3's with image_sizes [(size, size)], "
    "repeated as temporal_downsample_factor frames): the encoder's convolutions and attention blocks (Emu3's temporal "
    "layers), quant_conv and the quantizer's distance matmul against the codebook, 2 FLOPs per multiply-add, summed per "
    "module"
)


def vqvae_image_flops(data: dict, size: int) -> dict:
    """FLOPs of one image of ``size`` × ``size`` pixels through the VQ-VAE's encoder, quant_conv and quantizer, per
    module the VQ-VAE runs (by its class: the encoder, quant_conv's, the quantizer)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from .hfwhole import instantiate_whole

    net = instantiate_whole(data)
    vq = net.model.vqmodel
    pixels = torch.ones(1, vq.config.in_channels, size, size, device="meta")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        if data["model_type"] == "emu3":  # its image's size, which slices its codes
            vq.encode(pixels, [(size, size)], return_dict=True)
        else:
            vq.encode(pixels, return_dict=True)
    counts = counter.get_flop_counts()
    modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}  # by their classes
    return {"size": size, "total": sum(counts["Global"].values()), "modules": modules}
