"""2-D position embeddings of a document's layout (LayoutLM, Xu et al. 2020 §2.2: each token's bounding box
(x0, y0, x1, y1) looked up in an x and a y table, its height and width in tables of their own; transformers'
LayoutLMEmbeddings: x_position_embeddings, y_position_embeddings, h_position_embeddings, w_position_embeddings, each
max_2d_position_embeddings × d). The six rows (x0 and x1 in the x table, y0 and y1 in the y table, the height and the
width) are added to the token's embedding with its position and type before the embedding norm: lookups (no
multiply-adds) and six adds per feature."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive
from . import Part, register

TABLES = (("x", 2), ("y", 2), ("h", 1), ("w", 1))  # each table and the rows a token adds from it


@register
@dataclass(frozen=True)
class LayoutPositions(Part):
    key = "layout_positions"
    order = 13
    prefix = "layout"
    summary = "x, y, height and width tables of a token's bounding box added before the embedding norm (LayoutLM)"

    rows: Positive = 1024  # LayoutLMConfig.max_2d_position_embeddings

    def lookup_terms(self, e, model) -> None:
        d = model.input_width
        for name, adds in TABLES:
            e.term(f"layout.{name}.weight", "position", (self.rows, d), elementwise=adds * d)

    def model_module(self, model):
        return _module()(self, model)


@cache
def _module():
    import torch
    from torch import nn

    class Layout(nn.Module):
        """The four tables; ``lookup`` adds the rows of an all-zero box (the bbox transformers passes by default):
        row 0 of x and of y twice, of the height and the width once."""

        def __init__(self, spec: LayoutPositions, model):
            super().__init__()
            for name, _ in TABLES:
                self.add_module(name, nn.Embedding(spec.rows, model.input_width))

        def lookup(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            for name, adds in TABLES:
                x = x + adds * getattr(self, name).weight[0]
            return x

    return Layout
