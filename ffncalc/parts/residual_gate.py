"""Learned residual gates (MUSE Spark: MuseSparkResidualGate after each sublayer, post_attention_residual_gate and
post_feedforward_residual_gate). Each holds one vector w of d; with β = σ(w / T) and α = √max(σ(−w / T)(1 + β), ε)
(T: residual_gate_temperature), the residual x and the sublayer's output h mix per feature: α ⊙ x + β ⊙ h. α and β are
a forward's, not a token's: a token's work is the two products (its add is the residual add every layer makes)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import SpecError
from . import Part, register


@register
@dataclass(frozen=True)
class ResidualGates(Part):
    key = "residual_gates"
    order = 24
    summary = "learned sigmoid mixes of the residual and each sublayer's output (MUSE Spark)"

    temperature: float = 0.3  # residual_gate_temperature

    def check(self, spec) -> None:
        if spec.parallel or spec.has("laurel", "altup", "hyper", "residual_scale") or spec.norm.placement == "residual":
            raise SpecError(
                ("residual_gates",),
                "residual gates mix a sequential layer's two adds: no parallel sublayers, LAuReL, AltUp, "
                "hyper-connections, scaled adds or norms after the add",
            )
        if self.temperature <= 0:
            raise SpecError(("residual_gates", "temperature"), f"expected a positive temperature, got {self.temperature}")

    def layer_terms(self, e, model, positions: int) -> None:
        d, n = model.d_model, e.n
        # attention's gate and the FFN's: α ⊙ x and β ⊙ h a feature each (the sum is the residual add's)
        e.term("residual_gates", "norm", (2, d), n, elementwise=n * 2 * 2 * d)

    def layer_module(self, model, layer):
        return _module()(self, model)


@cache
def _module():
    import torch
    from torch import nn

    class Gates(nn.Module):
        """Attention's gate (row 0) and the FFN's (row 1)."""

        is_norm = True  # verify: one component, its weight a vector per feature

        def __init__(self, spec: ResidualGates, model):
            super().__init__()
            self.weight = nn.Parameter(torch.zeros(2, model.d_model))
            self.temperature = spec.temperature

        def add(self, x: torch.Tensor, out: torch.Tensor, slot: int, normed) -> torch.Tensor:
            w = self.weight[slot] / self.temperature
            beta = torch.sigmoid(w)
            alpha = torch.sqrt(torch.clamp(torch.sigmoid(-w) * (1.0 + beta), min=1e-3))
            return alpha * x + beta * out

    return Gates
