"""LUKE's entity side (Yamada et al. 2020, "LUKE: Deep Contextualized Entity Representations with Entity-aware
Self-attention", §3): an entity table of entity_vocab_size × entity_emb_size projected to d_model without a bias,
entity position and type tables and a LayerNorm (LukeEntityEmbeddings); in every layer, three more query projections
for the entity-aware attention (w2e, e2w, e2e: d -> d with biases, where use_entity_aware_attention); and the entity
prediction head (a dense d -> entity_emb_size with a bias, the activation, a LayerNorm, the entity table again with a
bias of its own). A forward given words alone runs none of it: its parameters are held, no token passes through."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive
from . import Part, register

QUERIES = ("w2e_query", "e2w_query", "e2e_query")


@register
@dataclass(frozen=True)
class Entities(Part):
    key = "entities"
    order = 32
    summary = "an entity table, its embeddings, entity-aware queries and prediction head, idle in a word-only forward (LUKE)"

    vocab: Positive  # entity_vocab_size
    width: Positive  # entity_emb_size
    position_rows: Positive  # max_position_embeddings
    types: Positive  # type_vocab_size
    aware: bool = True  # use_entity_aware_attention: the three queries in every layer

    def input_terms(self, e, model, seq_len: int) -> None:
        d = model.d_model
        e.term("entities.table.weight", "token", (self.vocab, self.width), active=0)
        e.term("entities.dense.weight", "weight", (d, self.width), active=0)
        e.term("entities.pos_embed.weight", "position", (self.position_rows, d), active=0)
        e.term("entities.token_type_embed.weight", "position", (self.types, d), active=0)
        e.term("entities.norm", "norm", (d,), active=0, numel=d * model.norm.params_per_feature)

    def layer_terms(self, e, model, positions: int) -> None:
        if self.aware:
            d, n = model.d_model, e.n
            for name in QUERIES:
                e.term(f"entities.{name}.weight", "weight", (d, d), n, active=0)
                e.term(f"entities.{name}.bias", "bias", (d,), n, active=0)

    def top_terms(self, e, model) -> None:
        d, w = model.d_model, self.width
        e.term("entities.head.dense.weight", "weight", (w, d), active=0)
        e.term("entities.head.dense.bias", "bias", (w,), active=0)
        e.term("entities.head.norm", "norm", (w,), active=0, numel=w * model.norm.params_per_feature)
        e.term("entities.head.bias", "bias", (self.vocab,), active=0)  # its decoder is the entity table

    def model_module(self, model):
        return _modules()[0](self, model)

    def layer_module(self, model, layer):
        return _modules()[1](self, model) if self.aware else None


@cache
def _modules():
    import torch
    from torch import nn

    from ..blocks._torch import Linear, make_norm

    class Head(nn.Module):
        def __init__(self, spec: Entities, model):
            super().__init__()
            self.dense = Linear(model.d_model, spec.width)
            self.norm = make_norm(model.norm, spec.width)
            self.bias = nn.Parameter(torch.zeros(spec.vocab))

    class Side(nn.Module):
        """The entity tables, their projection and norm, and the head: held, not run by a word-only forward."""

        def __init__(self, spec: Entities, model):
            super().__init__()
            d = model.d_model
            self.table = nn.Embedding(spec.vocab, spec.width)
            self.dense = Linear(spec.width, d, bias=False)
            self.pos_embed = nn.Embedding(spec.position_rows, d)
            self.token_type_embed = nn.Embedding(spec.types, d)
            self.norm = make_norm(model.norm, d)
            self.head = Head(spec, model)

    class Queries(nn.Module):
        def __init__(self, spec: Entities, model):
            super().__init__()
            for name in QUERIES:
                self.add_module(name, Linear(model.d_model, model.d_model))

    return Side, Queries
