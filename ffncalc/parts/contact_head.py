"""ESM's contact prediction head (Rao et al. 2020, "Transformer protein language models are unsupervised structure
learners": a logistic regression over every layer's and head's attention maps; transformers'
EsmContactPredictionHead.regression, Linear(layers · heads, 1) with a bias). EsmModel builds it whatever class wraps
it; only predict_contacts runs it, so a masked-LM forward holds its parameters and does none of its work."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive
from . import Part, register


@register
@dataclass(frozen=True)
class ContactHead(Part):
    key = "contact_head"
    order = 31
    summary = "a regression over the attention maps held beside the model and run apart from its forward (ESM)"

    inputs: Positive  # num_hidden_layers · num_attention_heads

    def top_terms(self, e, model) -> None:  # parameters alone: no token passes through it
        e.term("contact_head.regression.weight", "weight", (1, self.inputs), active=0)
        e.term("contact_head.regression.bias", "bias", (1,), active=0)

    def model_module(self, model):
        return _module()(self)


@cache
def _module():
    from torch import nn

    from ..blocks._torch import Linear

    class Contact(nn.Module):
        def __init__(self, spec: ContactHead):
            super().__init__()
            self.regression = Linear(spec.inputs, 1)

    return Contact
