"""Initial-state mixing (NeoMME: NeoMMEEncoderLayer; NeoMMEModel passes the normalised embeddings to every layer as
initial_hidden_states). Each layer's attention reads a learned mix of the residual stream x and the layers' input
x₀, λ₀·x + λ₁·x₀ (``lambdas``, two scalars a layer, initialised to 1 and 0), through its first norm; each sublayer's
output is scaled by ``residual`` (residual_multiplier, by default 1/√(2·layers)) before its residual add:

    x = x + m · attention(norm₁(λ₀·x + λ₁·x₀)),  x = x + m · ffn(norm₂(x))

A layer the value embeddings name (parts/value_embeddings.py) hands their rows to its attention."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import PositiveFloat, SpecError
from . import Part, register


@register
@dataclass(frozen=True)
class InitialMix(Part):
    key = "initial_mix"
    order = 24
    summary = "each layer's attention reads a learned mix of the residual and the embeddings, its outputs scaled (NeoMME)"

    residual: PositiveFloat = 1.0  # the scale of each sublayer's output before its residual add

    def check(self, spec) -> None:
        if (
            spec.parallel
            or spec.norm.placement != "pre"
            or spec.norm.per_layer != 2
            or spec.has("altup", "laurel", "hyper", "residual_scale", "block_residuals", "reversible", "shared_blocks", "cycles")
            or any(group.reuses or group.shared for group in spec.layers or ())
        ):
            raise SpecError(
                ("initial_mix",),
                "initial-state mixing runs a layer of two sequential pre-norm sublayers (two norms a layer), without "
                "other residual streams, scaled adds, cycles, shared blocks or reused layers",
            )

    def layer_terms(self, e, model, positions: int) -> None:
        d, n = model.d_model, e.n
        # NeoMMEEncoderLayer.lambdas: two products and an add per feature
        e.term("initial_mix.lambdas", "bias", (2,), n, elementwise=n * 3 * d)
        e.op("initial_mix.scale", n * 2 * d)  # residual_multiplier times each sublayer's output

    def layer_module(self, model, layer):
        return _module()(self, layer.mark("value_embeddings") is not None)


@cache
def _module():
    import torch
    from torch import nn

    class Mix(nn.Module):
        def __init__(self, spec: InitialMix, values: bool):
            super().__init__()
            self.lambdas = nn.Parameter(torch.tensor([1.0, 0.0]))
            self.residual, self.values = spec.residual, values

        def body(self, layer, x: torch.Tensor, ctx: dict, k: int) -> torch.Tensor:
            mixer, ffn = layer.sublayers()
            a = layer.norms[0](self.lambdas[0] * x + self.lambdas[1] * ctx["embeddings"])
            out = mixer(a, ctx["value_rows"]) if self.values else mixer(a)
            x = x + self.residual * out
            return x + self.residual * ffn(layer.norms[1](x))

    return Mix
