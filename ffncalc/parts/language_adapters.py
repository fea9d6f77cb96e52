"""Per-language adapters after each layer's FFN (X-MOD, Pfeiffer et al. 2022, "Lifting the Curse of
Multilinguality by Pre-training Modular Transformers", §3; transformers' XmodOutput.adapter_modules): one bottleneck
MLP per language in every layer, dense1 d -> d / adapter_reduction_factor, the activation, dense2 back, each with a
bias, added to its input; each token runs its own language's. After the FFN's residual sum the sum is normalised (the
layer's own LayerNorm again where adapter_reuse_layer_norm, or an adapter_layer_norm of its own), the adapter runs on
it and its output is added, and the layer's LayerNorm follows."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.terms import ACTIVATION_OPS, Activation
from . import Part, register


@register
@dataclass(frozen=True)
class LanguageAdapters(Part):
    key = "language_adapters"
    order = 25
    summary = "a bottleneck adapter per language after each layer's FFN, each token through its own (X-MOD)"

    languages: Positive
    bottleneck: Positive
    activation: Activation = "gelu"
    own_norm: bool = False  # adapter_layer_norm: a LayerNorm of its own before the adapters
    reuse_norm: bool = True  # adapter_reuse_layer_norm: else the layer's LayerNorm again

    def check(self, spec) -> None:
        if spec.norm.placement != "residual" or spec.parallel:
            raise SpecError(("language_adapters",), "X-MOD's adapters follow a post-norm layer's FFN sum (norm placement residual)")

    def layer_terms(self, e, model, positions: int) -> None:
        d, b, n = model.d_model, self.bottleneck, e.n
        if self.own_norm:
            e.norm("language_adapters.norm", model.norm, d, n)
        elif self.reuse_norm:
            e.op("language_adapters.reused_norm", n * model.norm.ops(d))
        # every language's adapter held, one run per token
        e.linear("language_adapters.dense1", d, b, True, n * self.languages, n)
        e.op("language_adapters.act", n * b * ACTIVATION_OPS[self.activation])
        e.linear("language_adapters.dense2", b, d, True, n * self.languages, n)
        e.op("language_adapters.residual", n * d)

    def layer_module(self, model, layer):
        return _module()(self, model)


@cache
def _module():
    import torch
    from torch import nn

    from ..blocks._torch import ACTIVATIONS, Linear, make_norm

    class Adapters(nn.Module):
        """Every language's adapter; ``add`` after the FFN runs language 0's on the sum (a single-language batch)."""

        def __init__(self, spec: LanguageAdapters, model):
            super().__init__()
            d, b = model.d_model, spec.bottleneck
            if spec.own_norm:
                self.norm = make_norm(model.norm, d)
            self.dense1 = nn.ModuleList(Linear(d, b) for _ in range(spec.languages))
            self.dense2 = nn.ModuleList(Linear(b, d) for _ in range(spec.languages))
            self.act = ACTIVATIONS[spec.activation]

        def add(self, x: torch.Tensor, out: torch.Tensor, slot: int, normed) -> torch.Tensor:
            h = x + out
            if slot == 0:
                return h
            a = self.norm(h) if hasattr(self, "norm") else h  # the layer's own norm again: elementwise, left out here
            return a + self.dense2[0](self.act(self.dense1[0](a)))

    return Adapters
