"""An image patch stem beside the token table (NeoMME: NeoMMEPatchEmbeddings): each flattened patch of
channels × patch² values through a LayerNorm (weight and bias), a bias-free linear up to ``width`` (2·d_model), GELU and
a linear with a bias down to d_model; its output replaces an image placeholder token's embedding. Its parameters are
counted; a forward over tokens does not run it, and images are not charged (a count says so)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive
from . import Part, register


@register
@dataclass(frozen=True)
class PatchStem(Part):
    key = "patch_stem"
    beside = True
    order = 3
    summary = "an image patch stem beside the token table, its parameters alone (NeoMME)"
    count_note = (
        "the image patch stem's parameters are counted; the FLOPs are a forward over tokens alone: images, whose "
        "patches replace placeholder tokens' embeddings, are not charged"
    )

    patch: Positive
    channels: Positive = 3
    width: Positive | None = None  # default: 2 · d_model

    def values(self) -> int:
        """A flattened patch's values, channels × patch²."""
        return self.channels * self.patch**2

    def input_terms(self, e, model, seq_len: int) -> None:
        p, w, d = self.values(), self.width or 2 * model.d_model, model.d_model
        e.term("patch_stem.norm", "norm", (p,), numel=2 * p)
        e.term("patch_stem.up.weight", "weight", (w, p))
        e.term("patch_stem.down.weight", "weight", (d, w))
        e.term("patch_stem.down.bias", "bias", (d,))

    def model_module(self, model):
        return _module()(self, model)


@cache
def _module():
    from torch import nn

    from ..blocks._torch import LayerNorm, Linear

    class Stem(nn.Module):
        """The stem's modules, which a forward over tokens does not run."""

        def __init__(self, spec: PatchStem, model):
            super().__init__()
            w = spec.width or 2 * model.d_model
            self.norm = LayerNorm(spec.values())
            self.up = Linear(spec.values(), w, bias=False)
            self.down = Linear(w, model.d_model, bias=True)

    return Stem
