"""No FFN: layers that are only a token mixer (Mamba, Mamba-2, the mixer-only layers of hybrid stacks)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from . import Block, register


@register
@dataclass(frozen=True)
class NoFFN(Block):
    """Nothing after the mixer: no parameters, no work."""

    kind = "none"
    slot = "ffn"
    summary = "no FFN: a layer that is only its token mixer (Mamba, hybrid stacks)"

    def describe(self) -> str:
        return "none"

    def terms(self, e, model, seq_len: int) -> None:
        pass

    def torch_module(self, model, causal: bool):
        return _module()()


@cache
def _module():
    from torch import nn

    class Nothing(nn.Module):
        """Adds nothing to the residual stream."""

        def forward(self, x):
            return x.new_zeros(())

    return Nothing
