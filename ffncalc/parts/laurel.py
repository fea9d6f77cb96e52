"""Learned augmented residual layer (Menghani et al. 2024, "LAuReL: Learned Augmented Residual Layer"; Gemma 3n:
Gemma3nTextLaurelBlock, laurel_rank): from the layer's normed input x, x + norm(right(left(x))) with left d -> r and
right r -> d, added to the attention's residual sum and the two scaled by 1/√2."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive, SpecError
from . import Part, register


@register
@dataclass(frozen=True)
class Laurel(Part):
    key = "laurel"
    order = 21
    summary = "a low-rank learned residual beside each layer's attention (Gemma 3n)"

    rank: Positive

    def check(self, spec) -> None:
        if spec.parallel or spec.norm.placement != "pre" or not spec.norm.per_layer:
            raise SpecError(("laurel",), "LAuReL reads the layer's first norm's output: sequential pre-norm layers")

    def layer_terms(self, e, model, positions: int) -> None:
        d, n = model.d_model, e.n
        e.linear("laurel.left", d, self.rank, False, n)
        e.linear("laurel.right", self.rank, d, False, n)
        e.norm("laurel.norm", model.norm, d, n)
        e.op("laurel.residual", n * 3 * d)  # x + norm(…); added to the attention's sum; × 1/√2

    def layer_module(self, model, layer):
        return _module()(self, model)


@cache
def _module():
    import torch
    from torch import nn

    from ..blocks._torch import Linear, make_norm

    class LaurelModule(nn.Module):
        def __init__(self, spec: Laurel, model):
            super().__init__()
            self.left = Linear(model.d_model, spec.rank, bias=False)
            self.right = Linear(spec.rank, model.d_model, bias=False)
            self.norm = make_norm(model.norm, model.d_model)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.norm(self.right(self.left(x)))

        def add(self, x: torch.Tensor, out: torch.Tensor, slot: int, normed: torch.Tensor) -> torch.Tensor:
            """Beside attention, on its first norm's output; the FFN's add as usual."""
            return (x + out + self(normed)) * 2**-0.5 if slot == 0 else x + out

    return LaurelModule
