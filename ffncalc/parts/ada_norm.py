"""A time-conditioned adaptive scale of each layer's FFN input (Voxtral Realtime's text decoder, transformers 5.23's
VoxtralRealtimeTextAdaRmsNorm and VoxtralRealtimeTextDecoderLayer): after the post-attention RMSNorm, the normed
input h is scaled per feature, h ⊙ (1 + linear2(GELU(linear1(t)))), with linear1 d -> ``rank`` and linear2 ``rank``
-> d, no biases. t is the time embedding of the stream's delay (VoxtralRealtimeTimeEmbedding: the sines and cosines of
its delay tokens, a buffer, no parameters): one row a forward, so the two linears run once a sequence, and only the
product with h is a token's work."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.terms import ACTIVATION_OPS
from . import Part, register


@register
@dataclass(frozen=True)
class AdaNorm(Part):
    key = "ada_norm"
    order = 27
    summary = "a time-conditioned scale of each layer's FFN input (Voxtral Realtime's adaptive RMS norm)"

    rank: Positive = 32  # linear1's outputs (VoxtralRealtimeTextAdaRmsNorm: 32)

    def check(self, spec) -> None:
        if spec.parallel or spec.norm.placement != "pre" or spec.norm.per_layer != 2:
            raise SpecError(("ada_norm",), "the adaptive scale reads the FFN's pre-norm: sequential layers of two pre-norms")

    def layer_terms(self, e, model, positions: int) -> None:
        d, n = model.d_model, e.n
        start = len(e.out)
        e.linear("ada_norm.linear1", d, self.rank, False, n)
        e.op("ada_norm.act", n * self.rank * ACTIVATION_OPS["gelu"])
        e.linear("ada_norm.linear2", self.rank, d, False, n)
        e.op("ada_norm.shift", n * d)  # 1 + the scale
        # the time embedding is one row a sequence: its work per token is 1 / positions of a position's, and no
        # token's active parameters (as a pooler's, parts/pooler.py)
        once = Fraction(1, positions)
        e.out[start:] = [replace(t, positions=once, per_sequence=True, active_count=0) for t in e.out[start:]]
        e.op("ada_norm.scale", n * d)  # h ⊙ (1 + s), every token

    def kept_elements(self, model) -> int:
        return model.d_model  # the normed input h, which the scale's gradient reads (the product is the FFN's input)

    def layer_module(self, model, layer):
        return _module()(self, model)


@cache
def _module():
    import torch
    from torch import nn

    from ..blocks._torch import Linear

    class AdaNormModule(nn.Module):
        def __init__(self, spec: AdaNorm, model):
            super().__init__()
            self.linear1 = Linear(model.d_model, spec.rank, bias=False)
            self.linear2 = Linear(spec.rank, model.d_model, bias=False)

        def body(self, layer, x: torch.Tensor, ctx: dict, k: int) -> torch.Tensor:
            """VoxtralRealtimeTextDecoderLayer.forward: attention's residual as usual; the FFN reads its normed input
            scaled by 1 + the time embedding's scale, one row a sequence."""
            mixer, ffn = layer.sublayers()
            x = x + mixer(layer.norms[0](x))
            t = x.new_ones(x.shape[0], 1, x.shape[-1])  # the delay's time embedding (a buffer's sines; values unread)
            s = self.linear2(nn.functional.gelu(self.linear1(t)))
            return x + ffn(layer.norms[1](x) * (1 + s))

    return AdaNormModule
