"""A Chinese character's glyph and pronunciation beside its token (RoCBert, Su et al. 2022 §3.1: transformers'
RoCBertEmbeddings.shape_embed and pronunciation_embed, shape_vocab_size × shape_embed_dim and
pronunciation_vocab_size × pronunciation_embed_dim). With ``concat`` (concat_input, the default) each token's rows of
the two tables are concatenated with its word embedding and projected back to d_model with a bias
(map_inputs_layer), before the token types and positions are added, each where enabled (both tables are built
either way); without it the tables are read only where a forward is given their ids (none by default): parameters
alone."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive
from . import Part, register

TABLES = ("shape", "pronunciation")  # in the order RoCBertEmbeddings builds and concatenates them


@register
@dataclass(frozen=True)
class CharFeatures(Part):
    key = "char_features"
    order = 2  # right after the lookup: the projection's output is the token's embedding
    summary = "glyph and pronunciation tables concatenated with the token's embedding and projected back (RoCBert)"

    shape_vocab: Positive = 24858  # the glyph table: RoCBertConfig.shape_vocab_size × shape_embed_dim
    shape_dim: Positive = 512
    pronunciation_vocab: Positive = 910  # pronunciation_vocab_size × pronunciation_embed_dim
    pronunciation_dim: Positive = 768
    concat: bool = True  # concat_input
    use_shape: bool = True  # enable_shape: concatenated (the table is built either way)
    use_pronunciation: bool = True  # enable_pronunciation

    def _tables(self):
        return [("shape", self.shape_vocab, self.shape_dim), ("pronunciation", self.pronunciation_vocab, self.pronunciation_dim)]

    def _concatenated(self) -> list[str]:
        return [name for name, used in zip(TABLES, (self.use_shape, self.use_pronunciation)) if used]

    def lookup_terms(self, e, model) -> None:
        width = model.d_model
        for name, rows, w in self._tables():
            e.term(f"char_features.{name}.weight", "token", (rows, w))  # a lookup each: no multiply-adds
            width += w if name in self._concatenated() else 0
        if self.concat:
            e.linear("char_features.project", width, model.d_model, True, 1)

    def model_module(self, model):
        return _module()(self, model)


@cache
def _module():
    import torch
    from torch import nn

    from ..blocks._torch import Linear

    class Features(nn.Module):
        """The tables; ``lookup`` concatenates row 0 of each (the all-zero ids transformers passes by default) with
        the token's embedding and projects the whole back to d_model."""

        def __init__(self, spec: CharFeatures, model):
            super().__init__()
            width, self.names, self.concat = model.d_model, spec._concatenated(), spec.concat
            for name, rows, w in spec._tables():
                self.add_module(name, nn.Embedding(rows, w))
                width += w if name in self.names else 0
            if spec.concat:
                self.project = Linear(width, model.d_model)

        def lookup(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            if not self.concat:
                return x
            rows = [getattr(self, n).weight[0].expand(*x.shape[:-1], -1).to(x.dtype) for n in self.names]
            return self.project(torch.cat([x, *rows], dim=-1))

    return Features
