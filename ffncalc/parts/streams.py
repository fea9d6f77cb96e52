"""Reformer's parts (Kitaev et al. 2020, "Reformer: The Efficient Transformer"; transformers' ReformerModel): the
reversible residual streams, axial position embeddings and the sequence padded to whole attention chunks.

Reversible (the spec's ``reversible: true``): two streams of d_model, each layer's attention adding to one from the
other, its FFN to the other from that sum; the final norm and the head read both, 2·d_model wide.
Padding: a sequence longer than ``above`` tokens and not a whole number of ``multiple`` is padded up to one; the
layers and the final norm run over the padded positions, the head over the sequence's own (count.py scales the
layers' terms by padded / seq_len, as for prompt positions, Term.positions).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import NonNegative, Positive, SpecError
from . import Part, register


@register
@dataclass(frozen=True)
class Reversible(Part):
    """y₁ = x₁ + attention(norm(x₂)), y₂ = x₂ + ffn(norm(y₁)); the streams start equal."""

    key = "reversible"
    order = 16
    prefix = "rev"
    summary = "two reversible residual streams (Reformer)"

    @classmethod
    def annotation(cls):
        return bool

    @classmethod
    def read(cls, value):
        return cls() if value else None

    def check(self, spec) -> None:
        if (
            spec.tie_embeddings
            or spec.parallel
            or spec.norm.placement != "pre"
            or spec.norm.per_layer != 2
            or spec.has("altup", "laurel", "hyper", "residual_scale", "prediction_head")
        ):
            raise SpecError(
                ("reversible",),
                "reversible streams take sequential pre-norm layers of two norms and an "
                "untied head of 2·d_model, without other residual streams, scaled "
                "residual adds or a prediction head",
            )

    def final_width(self, width: int) -> int:
        return 2 * width

    def model_module(self, model):
        return _modules()[2]()

    def layer_module(self, model, layer):
        return _modules()[3]()


@register
@dataclass(frozen=True)
class AxialPositions(Part):
    """Axial position embeddings (ReformerModel's AxialPositionEmbeddings; axial_pos_shape, axial_pos_embds_dim):
    position p = (i, j) of an n₁ × n₂ grid takes the concatenation of row i's d₁ features and column j's d₂
    (d₁ + d₂ = d_model): one table per axis, n_k × d_k, added to the token's embedding."""

    key = "axial_positions"
    order = 10
    summary = "axial position embeddings (Reformer)"

    shape: list[Positive]
    dims: list[Positive]

    def __post_init__(self) -> None:
        if len(self.shape) != len(self.dims):
            raise SpecError(("dims",), f"one width per axis: {len(self.shape)} axes, {len(self.dims)} widths")

    @property
    def numel(self) -> int:
        return sum(n * w for n, w in zip(self.shape, self.dims))

    def input_terms(self, e, model, seq_len: int) -> None:
        e.term("axial_positions.weights", "position", (self.numel,), elementwise=model.d_model)  # the add

    def model_module(self, model):
        return _modules()[0](self, model)


@register
@dataclass(frozen=True)
class Padding(Part):
    """The sequence padded to a whole number of ``multiple`` positions when longer than ``above`` (ReformerModel:
    the least common multiple of its layers' chunk lengths, above the least of them)."""

    key = "padding"
    order = 11
    summary = "the sequence padded to whole attention chunks (Reformer)"

    multiple: Positive
    above: NonNegative = 0

    def positions(self, seq_len: int) -> int:
        if seq_len <= self.above or seq_len % self.multiple == 0:
            return seq_len
        return seq_len + self.multiple - seq_len % self.multiple

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

        def enter(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            p = torch.arange(x.shape[1], device=x.device)
            parts, stride = [], 1
            for n in reversed(self.shape):  # the last axis varies fastest
                parts.append((p // stride) % n)
                stride *= n
            rows = [w[i] for w, i in zip(self.weights, reversed(parts))]
            return x + torch.cat(rows, dim=-1).to(x.dtype)

    class PadModule(nn.Module):
        """To whole chunks; the head reads the sequence's own positions."""

        def __init__(self, spec: Padding, model):
            super().__init__()
            self.spec = spec

        def enter(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            return F.pad(x, (0, 0, 0, self.spec.positions(x.shape[1]) - x.shape[1]))

    class Streams(nn.Module):
        def expand(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            return torch.cat([x, x], dim=-1)

    class LayerStreams(nn.Module):
        def body(self, layer, x: torch.Tensor, ctx: dict, k: int) -> torch.Tensor:
            mixer, ffn = layer.sublayers()
            x1, x2 = x.chunk(2, dim=-1)
            y1 = x1 + mixer(layer.norms[0](x2))
            return torch.cat([y1, x2 + ffn(layer.norms[1](y1))], dim=-1)

    return AxialModule, PadModule, Streams, LayerStreams
