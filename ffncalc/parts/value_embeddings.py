"""Value embeddings (NeoMME: NeoMMEModel.value_embeddings, added in NeoMMEAttention): a second token table, one row
of ``width`` (the keys' and values' width, kv_heads × head_dim) a token, looked up once a forward and added to the
values of the attention of the layers ``layers`` names (NeoMME's first and last full-attention layers), after their
projection. The layers' attention takes the rows (the ``exclusive`` kind's ``forward(x, values)``), handed to it by
initial-state mixing (parts/initial_mix.py), which runs those layers."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import NonNegative, Positive, SpecError
from . import Part, register


@register
@dataclass(frozen=True)
class ValueEmbeddings(Part):
    key = "value_embeddings"
    order = 19
    summary = "a token table whose rows are added to the values of some layers' attention (NeoMME)"

    width: Positive
    layers: list[NonNegative] = ()  # the layers whose values take the rows, by index

    def check(self, spec) -> None:
        if not spec.has("initial_mix"):
            raise SpecError(("value_embeddings",), "the rows reach the layers' attention through initial_mix, which it needs")
        wrong = [i for i in self.layers if i >= spec.n_layers]
        if wrong:
            raise SpecError(("value_embeddings", "layers"), f"layer {wrong[0]} is past the model's {spec.n_layers} layers")

    def resolve_layers(self, spec, layers, groups):
        """The layers whose values take the rows."""
        return [layer.marked(self.key, True) if i in self.layers else layer for i, layer in enumerate(layers)]

    def input_terms(self, e, model, seq_len: int) -> None:
        # a lookup, as the token table (count.py: the one-hot matmul Chinchilla charges)
        e.term("value_embeddings.weight", "token", (model.vocab_size, self.width), macs=model.vocab_size * self.width)

    def layer_terms(self, e, model, positions: int) -> None:
        if e.layers is None:
            return
        first, stop = e.layers
        added = sum(first <= i < stop for i in self.layers)
        if added:  # value_states + value_embeds
            e.op("value_embeddings.add", added * self.width, copies=added)

    def model_module(self, model):
        return _module()(self, model)


@cache
def _module():
    import torch
    from torch import nn

    class Values(nn.Module):
        """The table (``weight``); ``enter`` looks up the tokens' rows once, as ctx["value_rows"]."""

        def __init__(self, spec: ValueEmbeddings, model):
            super().__init__()
            self.weight = nn.Parameter(torch.zeros(model.vocab_size, spec.width))

        def enter(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            ctx["value_rows"] = nn.functional.embedding(ctx["tokens"], self.weight)
            return x

    return Values
