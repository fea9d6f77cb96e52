"""A pooler (BERT, Devlin et al. 2019 §3: the final hidden state of the first token, [CLS], as the sequence's
representation; transformers' BertPooler): a dense d -> d with a bias and tanh over the first position of each
sequence. Models whose masked-LM class builds it (LayoutLMForMaskedLM, LukeForMaskedLM, FNetForMaskedLM …) compute it
in every forward, once a sequence, whatever reads it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

from ..model.terms import ACTIVATION_OPS, Activation
from . import Part, register


@register
@dataclass(frozen=True)
class Pooler(Part):
    key = "pooler"
    order = 29  # before the prediction head's top: it reads the final hidden states
    summary = "a dense layer and tanh over each sequence's first position (BERT's pooler)"

    activation: Activation = "tanh"
    bias: bool = True

    def sequence_terms(self, e, model, seq_len) -> None:
        d = model.d_model
        start = len(e.out)
        e.linear("pooler.dense", d, d, self.bias, 1)
        e.op("pooler.act", d * ACTIVATION_OPS[self.activation], copies=1)
        # one position of each sequence: its work per token of the sequence is 1 / seq_len of a position's; no
        # token's active parameters
        e.out[start:] = [replace(t, positions=Fraction(1, seq_len), per_sequence=True, active_count=0) for t in e.out[start:]]

    def model_module(self, model):
        return _module()(self, model)


@cache
def _module():
    import torch
    from torch import nn

    from ..blocks._torch import ACTIVATIONS, Linear

    class PoolerModule(nn.Module):
        def __init__(self, spec: Pooler, model):
            super().__init__()
            self.dense = Linear(model.d_model, model.d_model, bias=spec.bias)
            self.act = ACTIVATIONS[spec.activation]

        def top(self, x: torch.Tensor) -> torch.Tensor:
            self.act(self.dense(x[:, 0]))  # computed, and read by no logit
            return x

    return PoolerModule
