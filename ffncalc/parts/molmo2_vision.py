"""Molmo 2's vision tower and adapter (the spec's ``molmo2_vision``; Ai2 2025, Molmo 2), as transformers 5.23's
Molmo2ForConditionalGeneration and its image processor (image_processing_molmo2.py) run an image: a vision part
(parts/vision.py) whose image is cut into overlapping crops, each run through the tower, then pooled window by window
(parts/window_pooling.py).

An image of ``image_size`` pixels a side, crops of ``crop`` pixels (c = crop / patch patches a side), ``margin``
patches of overlap a side (overlap_margins), windows of w = c − 2·margin patches:

- the tiling (select_tiling): of the (rows, cols) with rows · cols ≤ ``max_crops``, ordered by area then rows, each
  scaled by min(rows, cols) · w · patch / (image − 2 · margin · patch); where every scale is under 1, the first of the
  largest, else the first of the smallest at least 1;
- the canvas (compute_crop_geometry): rows · w + 2 · margin patches high (cols the same wide), cut into rows · cols
  crops of c patches a side, each crop's margins dropped where a neighbour covers them: the canvas's patches one grid;
- the global crop: the whole image resized to one crop;
- the tower runs rows · cols + 1 crops; the adapter pools each ``pool`` × ``pool`` window of a grid, a grid's edge
  padded to whole windows (arange_for_pooling): ⌈c / pool⌉² tokens of the global crop and ⌈canvas / pool⌉² of the
  canvas.

A 378-pixel image: 1 × 1 tiling, 2 crops, 14² + 14² = 392 tokens; 756 pixels: 2 × 2 tiling (the canvas 46 patches a
side), 5 crops, 14² + 23² = 725 tokens.

FLOPs: ``images`` a sequence, each through its crops' runs of the tower and its tokens through the adapter, which
reads two of the tower's layers side by side (every layer runs)."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from fractions import Fraction

from ..model.schema import NonNegative, Positive, SpecError
from . import register
from .vision import Vision, image_term_flops
from .vision import _module as vision_module

TOWER = ("patch", "tower", "image")  # what a crop's run of the tower runs over (parts/vision.py's units)


@register
@dataclass(frozen=True)
class Molmo2Vision(Vision):
    key = "molmo2_vision"
    beside = True
    prefix = "vision"
    summary = "Molmo 2's vision tower over an image's overlapping crops and its adapter pooling 2 × 2 windows"

    crop: Positive = 378  # pixels a side of a crop: the tower's image (the processor's size)
    max_crops: Positive = 8  # crops of the canvas at most (max_crops)
    margin: NonNegative = 4  # patches of overlap a side of a crop (overlap_margins)

    @property
    def pool(self) -> int:
        """Patches a side of a token's window (pooling_size)."""
        pooling = self.projector.window_pooling
        return pooling.window if pooling else 1

    def check(self, spec) -> None:
        if self.projector.window_pooling is None:
            raise SpecError(("molmo2_vision", "projector"), "Molmo 2's adapter is a window_pooling")
        self.cropped.check(spec)
        if self.crop // self.patch_size <= 2 * self.margin:
            raise SpecError(("molmo2_vision", "margin"), f"{self.margin} patches a side leave no window of a crop")
        if self.image_size <= 2 * self.margin * self.patch_size:
            raise SpecError(
                ("molmo2_vision", "image_size"),
                f"{self.image_size} pixels: no more than the {2 * self.margin * self.patch_size} pixels of a crop's margins",
            )

    @property
    def cropped(self) -> Vision:
        """The tower as one crop runs it (a Vision part of the crop's size)."""
        return Vision(**{**{f.name: getattr(self, f.name) for f in fields(Vision)}, "image_size": self.crop})

    @property
    def tiling(self) -> tuple[int, int]:
        """Crops of the canvas (rows, cols): select_tiling over the image less its margins, a square image."""
        c = self.crop // self.patch_size
        window = (c - 2 * self.margin) * self.patch_size
        inner = self.image_size - 2 * self.margin * self.patch_size
        k = range(1, self.max_crops + 1)
        tilings = sorted(((h, w) for h in k for w in k if h * w <= self.max_crops), key=lambda t: (t[0] * t[1], t[0]))
        scales = [Fraction(min(h, w) * window, inner) for h, w in tilings]
        if all(s < 1 for s in scales):  # the first of the largest
            return tilings[scales.index(max(scales))]
        return tilings[scales.index(min(s for s in scales if s >= 1))]  # the first of the smallest at least 1

    @property
    def crops(self) -> int:
        """Runs of the tower an image makes: the canvas's crops and the global crop."""
        rows, cols = self.tiling
        return rows * cols + 1

    @property
    def tokens(self) -> int:
        """The language model's tokens one image becomes: the global crop's windows and the canvas's."""
        c, m = self.crop // self.patch_size, self.margin
        rows, cols = self.tiling

        def windows(patches: int) -> int:  # a side's windows, the grid padded to whole ones
            return -(-patches // self.pool)

        return windows(c) ** 2 + windows(rows * (c - 2 * m) + 2 * m) * windows(cols * (c - 2 * m) + 2 * m)

    def image_terms(self, model) -> list[tuple[str, object]]:
        """A crop's tower terms (parts/vision.py's, over a crop) and the adapter's over a token."""
        return Vision.image_terms(self.cropped, model)

    def input_terms(self, e, model, seq_len: int) -> None:
        crop = self.cropped
        runs = self.images * self.crops
        scale = {"patch": Fraction(runs * crop.grid**2, seq_len), "tower": Fraction(runs * crop.rows, seq_len)}
        scale["image"] = Fraction(runs, seq_len)
        scale["projector"] = Fraction(self.images * self.tokens, seq_len)
        # an image's work, not a token's: no token of the sequence passes through the tower (no active parameters)
        for where, t in self.image_terms(model):
            e.out.append(replace(t, positions=scale[where], per_sequence=True, active_count=0))

    def per_image(self, model) -> tuple[int, int, int]:
        """One image's LM tokens, its forward FLOPs through the tower (its crops' runs) and the adapter (2 per
        multiply-add, as FlopCounterMode counts), and its elementwise FLOPs."""
        crop = self.cropped
        counts = {"patch": crop.grid**2, "tower": crop.rows, "image": 1}
        flops = elementwise = 0
        for where, t in self.image_terms(model):
            f, el = image_term_flops(t, self.crops * counts[where] if where in TOWER else self.tokens)
            flops, elementwise = flops + f, elementwise + el
        return self.tokens, flops, elementwise

    def note(self, spec) -> str:
        text = super().note(spec)
        pooling = self.projector.window_pooling
        if pooling and pooling.out != spec.d_model:
            text += (
                f"; its adapter writes {pooling.out:,} features (text_hidden_size) where the language model's width is "
                f"{spec.d_model:,}: transformers' forward refuses an image (counted as get_image_features runs it)"
            )
        return text

    def model_module(self, model):
        return _module(self, model)


def _module(spec: Molmo2Vision, model):
    """parts/vision.py's module over every crop of the sequence's images, its adapter run once over the images' tokens,
    each a window of patch slots of the layers' features side by side."""
    import torch

    crop = replace(spec.cropped, images=spec.images * spec.crops)
    module = vision_module(crop, model)
    projector = module.projector
    run = projector.forward
    projector.forward = lambda h: None  # the crops' features: gathered into windows (no multiply-adds)
    tower = module.enter

    def enter(x, ctx):
        if not spec.images:
            return x
        tower(x, ctx)
        n, slots = x.shape[0] * spec.images * spec.tokens, spec.pool**2
        run(torch.zeros((n, slots, spec.projector.width), dtype=x.dtype, device=x.device))
        return x

    module.enter = enter
    return module
