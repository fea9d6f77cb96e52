"""Phi-4-multimodal's vision tower and its projector (the spec's ``phi4_vision``; Microsoft 2025, "Phi-4-Mini
Technical Report", §2.2), as transformers' Phi4MultimodalImageEmbedding and its image processor run an image: a
vision part (parts/vision.py) whose image is cut into crops.

- an image of ``image_size`` pixels a side is resized and padded to whole crops of ``crop`` pixels (its processor's
  dynamic_preprocess: ⌈image / crop⌉ a side), and the tower (SigLIP's, the vision part's layers, pooling head
  included: Phi4MultimodalVisionModel runs it) runs each crop and the whole image resized to one crop (global_image);
- each crop's patch grid averaged 2 × 2 (image_token_compression, no multiply-adds): ``grid`` tokens a side;
- the HD transform: the global crop's grid with sub_img_feature_extensor after each row (g × (g + 1) tokens), the
  crops' grids side by side with it after each row of the whole (side·g × (side·g + 1)), global_img_feature_extensor
  between them: two learned rows of the tower's width (``separators``);
- the projector (img_projection_up → GELU → img_projection_down, with biases) over every one of those tokens:
  256 + 1 + crops × 256 + side × 16 + 16 of them at 16 a side (the processor's num_img_tokens).

FLOPs: ``images`` a sequence, each through crops + 1 runs of the tower and its tokens through the projector."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from fractions import Fraction

from ..model.schema import Positive, SpecError
from ..model.terms import Emitter
from . import register
from .vision import Vision, image_term_flops
from .vision import _module as vision_module

TOWER = ("patch", "tower", "image")  # what a crop's run of the tower runs over (parts/vision.py's units)


@register
@dataclass(frozen=True)
class Phi4Vision(Vision):
    key = "phi4_vision"
    beside = True
    prefix = "vision"
    summary = "Phi-4-multimodal's vision tower over an image's crops and the HD transform's tokens into the projector"

    crop: Positive = 448  # pixels a side of a crop: the tower's image (crop_size)
    pool: Positive = 2  # patches a side averaged into one token (image_token_compression)

    def check(self, spec) -> None:
        self.cropped.check(spec)
        grid = self.crop // self.patch_size
        if grid % self.pool:
            raise SpecError(("phi4_vision", "pool"), f"{grid} patches a side are not whole tiles of {self.pool}")

    @property
    def cropped(self) -> Vision:
        """The tower as one crop runs it (a Vision part of the crop's size)."""
        return Vision(**{**{f.name: getattr(self, f.name) for f in fields(Vision)}, "image_size": self.crop})

    @property
    def side(self) -> int:
        """Crops a side of an image (the processor pads it to whole crops)."""
        return -(-self.image_size // self.crop)

    @property
    def crops(self) -> int:
        """Runs of the tower an image makes: its crops and the global image."""
        return self.side**2 + 1

    @property
    def tokens(self) -> int:
        """The language model's tokens one image becomes: each crop's pooled grid with a separator after each row, and
        the one between the global image's and the crops' (num_img_tokens)."""
        g = self.crop // self.patch_size // self.pool
        s = self.side * g
        return g * (g + 1) + 1 + s * (s + 1)

    def image_terms(self, model) -> list[tuple[str, object]]:
        """A crop's tower terms (parts/vision.py's, over a crop), the projector's over a token, and the separators."""
        rows = Emitter("embedding")
        rows.term("vision.projector.separators", "position", (2, self.width(model)))  # concatenated: no work
        out = [(where, t) for where, t in Vision.image_terms(self.cropped, model)]
        return [(w if w in TOWER else "projector", t) for w, t in out] + [("image", t) for t in rows.out]

    def input_terms(self, e, model, seq_len: int) -> None:
        crop = self.cropped
        runs = self.images * self.crops
        scale = {"patch": Fraction(runs * crop.grid**2, seq_len), "tower": Fraction(runs * crop.rows, seq_len)}
        scale["image"] = Fraction(runs, seq_len)
        scale["projector"] = Fraction(self.images * self.tokens, seq_len)
        # an image's work, not a token's: no token of the sequence passes through the tower (no active parameters)
        for where, t in self.image_terms(model):
            s = 0 if t.name == "vision.projector.separators" else scale[where]
            e.out.append(replace(t, positions=s, per_sequence=True, active_count=0))

    def per_image(self, model) -> tuple[int, int, int]:
        """One image's LM tokens, its forward FLOPs through the tower (crops + 1 runs) and the projector (2 per
        multiply-add, as FlopCounterMode counts), and its elementwise FLOPs."""
        crop = self.cropped
        counts = {"patch": crop.grid**2, "tower": crop.rows, "image": 1}
        flops = elementwise = 0
        for where, t in self.image_terms(model):
            if t.name == "vision.projector.separators":
                continue
            f, el = image_term_flops(t, self.crops * counts[where] if where in TOWER else self.tokens)
            flops, elementwise = flops + f, elementwise + el
        return self.tokens, flops, elementwise

    def model_module(self, model):
        return _module(self, model)


def _module(spec: Phi4Vision, model):
    """parts/vision.py's module over every crop of the sequence's images, its projector run once over the images'
    tokens (the HD transform's concatenations have no work)."""
    import torch
    from torch import nn

    crop = replace(spec.cropped, images=spec.images * spec.crops)
    module = vision_module(crop, model)
    projector = module.projector
    projector.separators = nn.Parameter(torch.zeros(2, crop.width(model)))
    run = projector.forward
    projector.forward = lambda h: None  # the crops' patches: pooled, not projected (no multiply-adds)
    tower = module.enter

    def enter(x, ctx):
        if not spec.images:
            return x
        tower(x, ctx)
        tokens = torch.zeros((x.shape[0] * spec.images, spec.tokens, spec.projector.width), dtype=x.dtype, device=x.device)
        run(tokens)
        return x

    module.enter = enter
    return module
