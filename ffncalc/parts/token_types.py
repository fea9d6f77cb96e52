"""Token-type embeddings (BERT, Devlin et al. 2019 §3.2: segment A or B; transformers' token_type_embeddings,
type_vocab_size × d): each position's type's vector added to its token's embedding, before the positions are added
and before the embedding norm. A lookup (no multiply-adds) and one add per feature."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive
from . import Part, register


@register
@dataclass(frozen=True)
class TokenTypes(Part):
    key = "token_types"
    order = 12
    prefix = "token_type_embed"
    summary = "token-type (segment) embeddings added before the positions (BERT, RoBERTa)"

    types: Positive = 2  # BertConfig.type_vocab_size

    @classmethod
    def annotation(cls):
        return Positive  # a spec states the number of types: token_types: 2

    @classmethod
    def read(cls, value):
        return cls(types=value) if value is not None else None

    def lookup_terms(self, e, model) -> None:
        d = model.input_width  # d_model, or a factorised embedding's width
        e.term("token_type_embed.weight", "position", (self.types, d), elementwise=d)  # one add per feature

    def model_module(self, model):
        return _module()(self, model)


@register
@dataclass(frozen=True)
class TaskTypes(Part):
    """A second table of the same kind: task types (ERNIE 3.0's task_type_embeddings, task_type_vocab_size × d,
    where use_task_id), added with the token types."""

    key = "task_types"
    order = 13
    prefix = "task_type_embed"
    summary = "task-type embeddings added before the positions (ERNIE)"

    types: Positive = 3

    @classmethod
    def annotation(cls):
        return Positive

    @classmethod
    def read(cls, value):
        return cls(types=value) if value is not None else None

    def lookup_terms(self, e, model) -> None:
        d = model.input_width
        e.term("task_type_embed.weight", "position", (self.types, d), elementwise=d)

    def model_module(self, model):
        return _module()(self, model)


@cache
def _module():
    import torch
    from torch import nn

    class TokenTypeModule(nn.Module):
        """The table; ``lookup`` adds type 0's row to every position (a single segment), as a lookup of the
        all-zero token_type_ids transformers passes by default."""

        def __init__(self, spec: TokenTypes | TaskTypes, model):
            super().__init__()
            self.weight = nn.Parameter(torch.empty(spec.types, model.input_width))

        def lookup(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            return x + self.weight[0]

    return TokenTypeModule


@register
@dataclass(frozen=True)
class TypeTables(Part):
    """Several token-type tables, each looked up by its own type id and added (TAPAS, Herzig et al. 2020 §2: segment,
    column, row, previous answer, column rank, inverse column rank and numeric relation; TapasEmbeddings'
    token_type_embeddings_0..6, type_vocab_sizes rows each)."""

    key = "type_tables"
    order = 12
    summary = "several token-type tables, each added before the positions (TAPAS's table structure)"

    sizes: tuple[Positive, ...]

    @classmethod
    def annotation(cls):
        return list[Positive]  # a spec states the tables' sizes: type_tables: [3, 256, 256]

    @classmethod
    def read(cls, value):
        return cls(sizes=tuple(value)) if value is not None else None

    def lookup_terms(self, e, model) -> None:
        d = model.input_width
        for i, rows in enumerate(self.sizes):
            e.term(f"type_tables.table_{i}.weight", "position", (rows, d), elementwise=d)

    def model_module(self, model):
        return _tables()(self, model)


@cache
def _tables():
    import torch
    from torch import nn

    class Tables(nn.Module):
        """The tables; ``lookup`` adds each table's row 0 (the all-zero type ids transformers passes by default)."""

        def __init__(self, spec: TypeTables, model):
            super().__init__()
            self.count = len(spec.sizes)
            for i, rows in enumerate(spec.sizes):
                self.add_module(f"table_{i}", nn.Embedding(rows, model.input_width))

        def lookup(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            for i in range(self.count):
                x = x + getattr(self, f"table_{i}").weight[0]
            return x

    return Tables
