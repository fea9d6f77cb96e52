"""A fixed table of sines and cosines held as a parameter beside rotary positions (RoFormer, Su et al. 2021:
RoFormerEncoder.embed_positions, a frozen nn.Embedding of max_position_embeddings × head_dim whose rows are the
rotation angles' sines and cosines): stored with the model's parameters, read by a lookup (no multiply-adds); the
rotation it feeds is the attention's rotary positions, counted there."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive
from . import Part, register


@register
@dataclass(frozen=True)
class SineTable(Part):
    key = "sine_table"
    order = 14
    summary = "a fixed sine and cosine table held as a parameter for rotary positions (RoFormer's embed_positions)"

    rows: Positive
    width: Positive

    def input_terms(self, e, model, seq_len) -> None:
        e.term("sine_table.weight", "position", (self.rows, self.width))  # a lookup: no work of its own

    def model_module(self, model):
        return _module()(self)


@cache
def _module():
    import torch
    from torch import nn

    class Table(nn.Module):
        def __init__(self, spec: SineTable):
            super().__init__()
            self.weight = nn.Parameter(torch.empty(spec.rows, spec.width), requires_grad=False)

    return Table
