"""Per-layer inputs (Gemma 3n: Gemma3nTextModel; Gemma 4: Gemma4TextModel with hidden_size_per_layer_input).

Model: a second table gives each token a p-wide vector for every layer (embed_tokens_per_layer, vocab_size × L·p,
scaled by √p); the token's embedding projected d -> L·p (per_layer_model_projection, scaled by 1/√d) and RMS-normed
over each layer's p (per_layer_projection_norm) is added, the sum scaled by 1/√2. Each layer, after its FFN: gate
d -> p (per_layer_input_gate), the activation, ⊙ the layer's vector, p -> d (per_layer_projection), a norm over d
(post_per_layer_input_norm), added to the residual (with AltUp: to every stream but the active one).
Widths: d the model's, L its layers, p the per-layer input width.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive
from ..model.terms import ACTIVATION_OPS, Activation
from . import Part, register


@register
@dataclass(frozen=True)
class PerLayerInputs(Part):
    key = "per_layer_inputs"
    order = 22  # in a layer after AltUp's and LAuReL's terms; at the input before AltUp's
    input_order = 19
    prefix = "ple"
    summary = "a vector per layer for every token, added after each layer's FFN (Gemma 3n, Gemma 4 E2B/E4B)"

    width: Positive
    vocab_size: Positive | None = None  # default: the model's
    activation: Activation = "gelu_tanh"

    def input_terms(self, e, model, seq_len: int) -> None:
        d, p, total = model.d_model, self.width, model.n_layers * self.width
        vocab = self.vocab_size or model.vocab_size
        # a lookup, as the token embedding (count.py: the one-hot matmul Chinchilla charges), then × √p
        e.term("ple.embed.weight", "token", (vocab, total), macs=vocab * total, elementwise=total)
        e.linear("ple.projection", d, total, False, 1)
        e.norm("ple.projection_norm", model.norm, p, 1, total=total)
        e.op("ple.combine", 3 * total)  # × 1/√d before the norm; (projection + vector) × 1/√2

    def layer_terms(self, e, model, positions: int) -> None:
        d, p, n = model.d_model, self.width, e.n
        e.linear("ple.gate", d, p, False, n)
        e.op("ple.act", n * p * (ACTIVATION_OPS[self.activation] + 1))  # the activation, ⊙ the layer's vector
        e.linear("ple.proj", p, d, False, n)
        e.norm("ple.norm", model.norm, d, n)
        altup = model.part("altup")
        streams = altup.inputs - 1 if altup else 1
        e.op("ple.residual", n * streams * d)

    def model_module(self, model):
        return _modules()[0](self, model)

    def layer_module(self, model, layer):
        return _modules()[1](self, model)


@cache
def _modules():
    import torch
    from torch import nn

    from ..blocks._torch import ACTIVATIONS, Linear, make_norm

    class ModelInputs(nn.Module):
        """Every layer's input vector: the table's row and the projected embedding, (B, s, L, p), as ctx["vectors"]."""

        def __init__(self, spec: PerLayerInputs, model):
            super().__init__()
            self.layers, self.width = model.n_layers, spec.width
            self.embed = nn.Embedding(spec.vocab_size or model.vocab_size, model.n_layers * spec.width)
            self.projection = Linear(model.d_model, model.n_layers * spec.width, bias=False)
            self.projection_norm = make_norm(model.norm, spec.width)
            self.scale = spec.width**0.5

        def enter(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            tokens = ctx["tokens"]
            shape = (*tokens.shape, self.layers, self.width)
            table = self.embed(tokens).view(shape) * self.scale
            projected = self.projection_norm((self.projection(x) * x.shape[-1] ** -0.5).view(shape))
            ctx["vectors"] = (projected + table) * 2**-0.5
            return x

    class LayerInput(nn.Module):
        """norm(proj(act(gate(h)) ⊙ the layer's vector)), added after the layer (with AltUp, from its active stream
        to every other)."""

        def __init__(self, spec: PerLayerInputs, model):
            super().__init__()
            self.gate = Linear(model.d_model, spec.width, bias=False)
            self.proj = Linear(spec.width, model.d_model, bias=False)
            self.norm = make_norm(model.norm, model.d_model)
            self.act = ACTIVATIONS[spec.activation]

        def forward(self, h: torch.Tensor, vector: torch.Tensor) -> torch.Tensor:
            return self.norm(self.proj(self.act(self.gate(h)) * vector))

        def around(self, run, x: torch.Tensor, ctx: dict, k: int) -> torch.Tensor:
            y, vector = run(x), ctx["vectors"][..., k, :]
            if "active" in ctx:  # AltUp's streams and its corrected active one
                return torch.cat([y[:1], y[1:] + self(ctx.pop("active"), vector)])
            return y + self(y, vector)

    return ModelInputs, LayerInput
