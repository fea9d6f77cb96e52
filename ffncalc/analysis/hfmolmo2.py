"""Molmo 2's image path as transformers runs it: one image through its processor's cropping and pooling indices
(Molmo2ImageProcessor._image_batch_to_patches_and_grids: the tiling, the crops, image_token_pooling and image_grids),
then Molmo2Model.get_image_features (the tower over every crop, the adapter over every token), FlopCounterMode over
it. The whole class is built on the meta device, its tower and adapter then given memory on the CPU (the FLOPs are
their shapes'). The processor's resizing and normalising (torchvision's) are stood in for by a bilinear
interpolation: they change the pixels' values, not the crops or the indices."""

from __future__ import annotations

MOLMO2_IMAGE_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over Molmo2Model.get_image_features(pixel_values, image_token_pooling, "
    "image_grids) of the whole class (the record's reduced applied: its repair) built on the meta device, its "
    "vision_tower and multi_modal_projector given memory on the CPU, eager attention, one image of size × size pixels "
    "as Molmo2ImageProcessor crops and indexes it (max_crops 8, overlap_margins [4, 4], 378-pixel crops, 2 × 2 "
    "pooling): the tower over the global crop and every crop, the adapter over every token, 2 FLOPs per multiply-add "
    "of every matmul, summed per module"
)
# Molmo2AdapterConfig's text_hidden_size (3,584) is not Molmo2TextConfig's hidden_size (4,096), so the class's forward
# cannot add the adapter's output to the embeddings of an image's tokens: the FLOPs are recorded at the smallest repair,
# the released Molmo 2's layout (its adapter writes its language model's width: text_hidden_size 4,096 at these
# defaults). A FLOP-only repair: the parameters are recorded, and counted, at the unrepaired defaults.
MOLMO2_REDUCED = {"adapter_config": {"text_hidden_size": 4096}}


def molmo2_inputs(size: int) -> dict:
    """The processor's tensors for one size × size image (pixel_values of its crops, image_token_pooling, image_grids),
    its cropping and indexing transformers' own (Molmo2ImageProcessor's defaults)."""
    import importlib

    import torch
    from torch.nn import functional

    processing = importlib.import_module("transformers.models.molmo2.image_processing_molmo2")
    processor = processing.Molmo2ImageProcessor

    class Backend:  # its resize and normalisation (torchvision's) stood in for: the values, not the shapes
        _build_overlapping_crops = processor._build_overlapping_crops

        def resize(self, image, size, resample=None, antialias=False):
            return functional.interpolate(image, size=(size.height, size.width), mode="bilinear")

        def rescale_and_normalize(self, image, *args):
            return image

    d = processor
    grid, patches, pooled = processor._image_batch_to_patches_and_grids(
        Backend(),
        torch.ones(1, 3, size, size),
        max_crops=d.max_crops,
        overlap_margins=d.overlap_margins,
        crop_size=d.size["height"],
        resample=None,
        do_rescale=False,
        rescale_factor=1.0,
        do_normalize=False,
        image_mean=None,
        image_std=None,
        image_patch_size=d.patch_size,
        image_pooling_w=d.pooling_size[1],
        image_pooling_h=d.pooling_size[0],
    )
    return {"pixel_values": patches[0], "image_token_pooling": pooled[0], "image_grids": grid}


def molmo2_image_flops(data: dict, size: int) -> dict:
    """FLOPs of one image of ``size`` × ``size`` pixels through the tower and the adapter, per module (MOLMO2_REDUCED
    applied), with its crops and tokens."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from .hfwhole import instantiate_whole

    repaired = {**data, **{key: {**data[key], **value} for key, value in MOLMO2_REDUCED.items()}}
    net = instantiate_whole(repaired, "meta")
    for name in ("vision_tower", "multi_modal_projector"):  # their values unset: the FLOPs are their shapes'
        setattr(net.model, name, getattr(net.model, name).to_empty(device="cpu"))
    net.requires_grad_(False)
    inputs = molmo2_inputs(size)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        net.model.get_image_features(**inputs)
    counts = counter.get_flop_counts()
    modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}
    crops, tokens = inputs["pixel_values"].shape[0], inputs["image_token_pooling"].shape[0]
    return {"size": size, "crops": crops, "tokens": tokens, "total": sum(counts["Global"].values()), "modules": modules}
