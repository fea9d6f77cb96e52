"""Reformer's model-level parts (Kitaev et al. 2020, "Reformer: The Efficient Transformer"; transformers'
ReformerModel): axial position embeddings and the sequence padded to whole attention chunks. Its reversible residual
streams are the spec's ``reversible`` (two streams of d_model: each layer's attention adds to one from the other,
its FFN to the other from that sum; the final norm and the head read both, 2·d_model wide).

Padding: a sequence longer than ``above`` tokens and not a whole number of ``multiple`` is padded up to one; the
layers and the final norm run over the padded positions, the head over the sequence's own (count.py scales the
layers' terms by padded / seq_len, as for prompt positions, Term.positions).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from .schema import NonNegative, Positive, SpecError


@dataclass(frozen=True)
class AxialPositions:
    """Axial position embeddings (ReformerModel's AxialPositionEmbeddings; axial_pos_shape, axial_pos_embds_dim):
    position p = (i, j) of an n₁ × n₂ grid takes the concatenation of row i's d₁ features and column j's d₂
    (d₁ + d₂ = d_model): one table per axis, n_k × d_k, added to the token's embedding."""

    shape: list[Positive]
    dims: list[Positive]

    def __post_init__(self) -> None:
        if len(self.shape) != len(self.dims):
            raise SpecError(("dims",), f"one width per axis: {len(self.shape)} axes, {len(self.dims)} widths")

    @property
    def numel(self) -> int:
        return sum(n * w for n, w in zip(self.shape, self.dims))

    def model_terms(self, e, model, seq_len: int) -> None:
        e.term("axial_positions.weights", "position", (self.numel,), elementwise=model.d_model)  # the add

    def layer_terms(self, e, model, positions: int) -> None:
        pass

    def model_module(self, model):
        return _modules()[0](self, model)


@dataclass(frozen=True)
class Padding:
    """The sequence padded to a whole number of ``multiple`` positions when longer than ``above`` (ReformerModel:
    the least common multiple of its layers' chunk lengths, above the least of them)."""

    multiple: Positive
    above: NonNegative = 0

    def positions(self, seq_len: int) -> int:
        if seq_len <= self.above or seq_len % self.multiple == 0:
            return seq_len
        return seq_len + self.multiple - seq_len % self.multiple

    def model_terms(self, e, model, seq_len: int) -> None:
        pass

    def layer_terms(self, e, model, positions: int) -> None:
        pass

    def model_module(self, model):
        return _modules()[1](self, model)


@cache
def _modules():
    import torch
    from torch import nn
    from torch.nn import functional as F

    class AxialModule(nn.Module):
        """One table per axis; position p's vector is row p // n₂ of the first and row p mod n₂ of the second."""

        def __init__(self, spec: AxialPositions, model):
            super().__init__()
            self.shape = spec.shape
            self.weights = nn.ParameterList(nn.Parameter(torch.empty(n, w)) for n, w in zip(spec.shape, spec.dims))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            p = torch.arange(x.shape[1], device=x.device)
            parts, stride = [], 1
            for n in reversed(self.shape):  # the last axis varies fastest
                parts.append((p // stride) % n)
                stride *= n
            rows = [w[i] for w, i in zip(self.weights, reversed(parts))]
            return x + torch.cat(rows, dim=-1).to(x.dtype)

    class PadModule(nn.Module):
        def __init__(self, spec: Padding, model):
            super().__init__()
            self.spec = spec

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return F.pad(x, (0, 0, 0, self.spec.positions(x.shape[1]) - x.shape[1]))

    return AxialModule, PadModule
