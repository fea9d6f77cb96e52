"""Kind none, in either slot: a layer that is only its token mixer (Mamba, Mamba-2), or only its FFN (the MLP
and MoE layers of hybrid stacks such as Nemotron-H). No parameters, no work, nothing cached or kept."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from . import Block, register


class _Nothing(Block):
    kind = "none"

    def describe(self) -> str:
        return "none"

    def terms(self, e, model, seq_len: int) -> None:
        pass

    def torch_module(self, model, causal: bool):
        return _module()()


@register
@dataclass(frozen=True)
class NoFFN(_Nothing):
    """Nothing after the mixer."""

    slot = "ffn"
    summary = "no FFN: a layer that is only its token mixer (Mamba, hybrid stacks)"


@register
@dataclass(frozen=True)
class NoMixer(_Nothing):
    """Nothing before the FFN."""

    slot = "attention"
    summary = "no token mixer: a layer that is only its FFN (Nemotron-H's MLP and MoE layers)"


@cache
def _module():
    import torch
    from torch import nn

    class Nothing(nn.Module):
        """Adds nothing to the residual stream."""

        def forward(self, x):
            return torch.zeros_like(x)  # nothing, shaped as the stream (a post-norm may follow)

    return Nothing
