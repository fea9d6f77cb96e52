"""A stack's table of relative-position embeddings (DeBERTa, He et al. 2021 §3.1; transformers'
DebertaV2Encoder.rel_embeddings: 2P × d, P the span of relative positions each way), with a LayerNorm over it where
norm_rel_ebd says layer_norm (DebertaV2Encoder.LayerNorm). Read once a forward and handed to every layer, whose
disentangled attention projects it (blocks/disentangled.py); the norm runs over the whole table once a forward."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

from ..model.schema import Positive
from . import Part, register


@register
@dataclass(frozen=True)
class RelativeEmbeddings(Part):
    key = "relative_embeddings"
    order = 15
    prefix = "rel_embed"
    summary = "a table of relative-position embeddings every layer's disentangled attention projects (DeBERTa)"

    rows: Positive  # 2P: position_buckets · 2, else max_relative_positions · 2
    norm: bool = True  # norm_rel_ebd: layer_norm

    def input_terms(self, e, model, seq_len: int) -> None:
        d = model.d_model
        e.term("rel_embed.weight", "position", (self.rows, d))  # read whole: no lookup work
        if self.norm:  # once a forward over every row: per token of the sequence, 1/s of it
            start = len(e.out)
            e.norm("rel_embed.norm", model.norm, d, 1, total=self.rows * d)
            e.out[start:] = [replace(t, positions=Fraction(1, seq_len), per_sequence=True) for t in e.out[start:]]

    def model_module(self, model):
        return _module()(self, model)


@cache
def _module():
    import torch
    from torch import nn

    from ..blocks._torch import make_norm

    class Table(nn.Module):
        """The table and its norm; the layers' attention modules project a stand-in of its shape."""

        def __init__(self, spec: RelativeEmbeddings, model):
            super().__init__()
            self.weight = nn.Parameter(torch.empty(spec.rows, model.d_model))
            if spec.norm:
                self.norm = make_norm(model.norm, model.d_model)

    return Table
