"""Scaled residual adds (ZAYA1: ZayaResidualScaling after each sublayer; ZayaModel.input_hidden_states_scale and
_bias). After each sublayer, the sublayer's output h and the residual x each shifted and scaled per feature before
they are added: (h + b_h) ⊙ s_h + (x + b_x) ⊙ s_x, four vectors of d (attention's, the FFN's); with ``input``, the
embedding (x + b) ⊙ s before the first layer."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import SpecError
from . import Part, register


@register
@dataclass(frozen=True)
class ResidualScale(Part):
    key = "residual_scale"
    order = 24
    summary = "scaled and shifted residual adds (ZAYA1)"

    input: bool = True

    def check(self, spec) -> None:
        if spec.parallel or spec.has("laurel", "altup", "hyper") or spec.norm.placement == "residual":
            raise SpecError(
                ("residual_scale",),
                "scaled residual adds are a sequential layer's two adds: no parallel "
                "sublayers, LAuReL, AltUp, hyper-connections or norms after the add",
            )

    def input_terms(self, e, model, seq_len: int) -> None:
        if self.input:
            e.term("residual_scale.input", "norm", (2, model.d_model), 1, elementwise=2 * model.d_model)

    def layer_terms(self, e, model, positions: int) -> None:
        d, n = model.d_model, e.n
        for sublayer in ("attention", "ffn"):  # two adds and two products per feature; the sum is the residual's
            e.term(f"residual_scale.{sublayer}", "norm", (4, d), n, elementwise=n * 4 * d)

    def model_module(self, model):
        return _modules()[0](self, model) if self.input else None

    def layer_module(self, model, layer):
        return _modules()[1](self, model)


@cache
def _modules():
    import torch
    from torch import nn

    class InputScale(nn.Module):
        def __init__(self, spec: ResidualScale, model):
            super().__init__()
            self.input = nn.Parameter(torch.stack([torch.ones(model.d_model), torch.zeros(model.d_model)]))

        def enter(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            return (x + self.input[1]) * self.input[0]

    class ScaledAdds(nn.Module):
        """Each sublayer's (scale, bias of its output, scale, bias of the residual)."""

        def __init__(self, spec: ResidualScale, model):
            super().__init__()
            d = model.d_model
            self.attention = nn.Parameter(torch.stack([torch.ones(d), torch.zeros(d)] * 2))
            self.ffn = nn.Parameter(torch.stack([torch.ones(d), torch.zeros(d)] * 2))

        def add(self, x: torch.Tensor, out: torch.Tensor, slot: int, normed) -> torch.Tensor:
            v = self.attention if slot == 0 else self.ffn
            return (out + v[1]) * v[0] + (x + v[3]) * v[2]

    return InputScale, ScaledAdds
