"""A transform of the final norm's output before the unembedding (ModernBERT's decoder:
ModernBertDecoderPredictionHead; BERT's masked-LM head, BertPredictionHeadTransform): dense d -> d, the activation,
the model's norm (lm_head.dense, .act, .norm). ``width``: the dense maps d to a width of its own, the norm is that wide
and so is the unembedding that reads it (ELECTRA's generator head, ElectraGeneratorPredictions: hidden_size ->
embedding_size; ALBERT's AlbertMLMHead; RemBERT's output_embedding_size)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from ..model.schema import Positive
from ..model.terms import ACTIVATION_OPS, Activation
from . import Part, register


@register
@dataclass(frozen=True)
class PredictionHead(Part):
    key = "prediction_head"
    order = 30
    summary = "a dense layer, activation and norm between the final norm and the unembedding (ModernBERT)"

    activation: Activation = "gelu"
    bias: bool = False  # the dense projection's (ModernBertDecoderConfig.classifier_bias)
    norm: bool = True
    width: Positive | None = None  # the dense's output and the head's input, where not d_model
    norm_bias: bool | None = None  # the norm's bias where it differs from the model's norm (ESM C: nn.LayerNorm)
    # a second dense from width back to d_model and the activation again, before the norm if any (Ultrabert's
    # UltrabertPredictionHead: linear1 d -> prediction_head_size, linear2 back)
    back: bool = False

    def head_norm(self, model):
        """The model's norm, with a bias of its own where stated."""
        return model.norm if self.norm_bias is None else replace(model.norm, bias=self.norm_bias, layer_bias=False)

    def head_width(self, width: int) -> int:
        return width if self.back else self.width or width

    def top_terms(self, e, model) -> None:
        d = model.d_model
        w = self.width or d
        e.linear("prediction_head.dense", d, w, self.bias, 1)
        e.op("prediction_head.act", w * ACTIVATION_OPS[self.activation])
        if self.back:
            e.linear("prediction_head.back", w, d, self.bias, 1)
            e.op("prediction_head.back_act", d * ACTIVATION_OPS[self.activation])
            w = d
        if self.norm:
            e.norm("prediction_head.norm", self.head_norm(model), w, 1)

    def model_module(self, model):
        return _module()(self, model)


@cache
def _module():
    import torch
    from torch import nn

    from ..blocks._torch import ACTIVATIONS, Linear, make_norm

    class Head(nn.Module):
        def __init__(self, spec: PredictionHead, model):
            super().__init__()
            w = spec.width or model.d_model
            self.dense = Linear(model.d_model, w, bias=spec.bias)
            self.act = ACTIVATIONS[spec.activation]
            if spec.back:
                self.back = Linear(w, model.d_model, bias=spec.bias)
                w = model.d_model
            self.norm = make_norm(spec.head_norm(model), w) if spec.norm else nn.Identity()

        def top(self, x: torch.Tensor) -> torch.Tensor:
            x = self.act(self.dense(x))
            if hasattr(self, "back"):
                x = self.act(self.back(x))
            return self.norm(x)

    return Head
