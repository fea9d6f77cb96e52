"""Parts of a model's input beside the token embedding (CPM-Ant: CpmAntModel): prompt positions prepended to every
sequence, segment embeddings, and one table of relative-position and segment-pair biases that every layer adds to
its attention scores.

Prompt positions: the layers and the final norm run over seq_len + length positions for every seq_len tokens (the
prompt first), the head over the seq_len tokens only. Per token of the sequence their work is (seq_len + length) /
seq_len times a position's, an exact fraction; ``analysis/count.py`` scales their terms by it (Term.positions).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import NonNegative, Positive
from . import Part, register


@register
@dataclass(frozen=True)
class Prompts(Part):
    """Learned prompt tokens (CPM-Ant: prompt_types × prompt_length rows of input_embedding after the vocabulary's,
    which the untied head does not share; CpmAntModel.forward prepends prompt_length of them to every sequence and
    drops their positions before the head). ``types`` sets of ``length`` rows; one set runs with each sequence."""

    key = "prompts"
    order = 12
    summary = "learned prompt positions prepended to every sequence (CPM-Ant)"

    length: Positive
    types: Positive = 1

    @property
    def rows(self) -> int:
        return self.types * self.length

    @property
    def prompt_length(self) -> int:
        return self.length

    def positions(self, n: int) -> int:
        return n + self.length

    def input_terms(self, e, model, seq_len: int) -> None:
        # rows of the input embedding beyond the head's vocabulary: the same transformers tensor (component "embed");
        # a lookup, as the token embedding (count.py: the one-hot matmul Chinchilla charges over the whole table)
        d = model.d_model
        e.term("prompts.embed.weight", "token", (self.rows, d), macs=self.rows * d, component="embed")

    def model_module(self, model):
        return _modules()[0](self, model)


@register
@dataclass(frozen=True)
class Segments(Part):
    """Segment embeddings (CPM-Ant: segment_embedding, segment_types × d): each position's segment's vector added to
    its token's embedding."""

    key = "segments"
    order = 13
    summary = "segment embeddings (CPM-Ant)"

    types: Positive

    def input_terms(self, e, model, seq_len: int) -> None:
        d = model.d_model
        e.term("segments.embed.weight", "position", (self.types, d), elementwise=d)  # one add per feature

    def model_module(self, model):
        return _modules()[1](self, model)


@register
@dataclass(frozen=True)
class RelativeBias(Part):
    """One table of attention-score biases shared by every layer (CPM-Ant: CpmAntSegmentPositionEmbedding's
    relative_attention_bias, (segment_types² + position_bias_num_buckets) × num_attention_heads): a query and a key
    of one segment take their relative position's bucket's row, of two segments their segment pair's. Its lookup
    is a gather (no multiply-adds); each layer adds it to every score: heads × keys adds per query."""

    key = "relative_bias"
    order = 14
    summary = "one table of relative-position biases every layer adds to its scores (CPM-Ant)"

    buckets: Positive
    heads: Positive
    segments: NonNegative = 1  # segment types: segments² pair rows before the buckets' (T5: none)
    per_layer: bool = False  # a table of its own in every layer's self-attention (UMT5), not one every layer reads

    @property
    def rows(self) -> int:
        return self.segments * self.segments + self.buckets

    def input_terms(self, e, model, seq_len: int) -> None:
        if not self.per_layer:
            e.term("relative_bias.weight", "position", (self.rows, self.heads))

    def layer_terms(self, e, model, positions: int) -> None:
        if self.per_layer:  # UMT5Attention: every layer's has_relative_attention_bias
            e.term("relative_bias.weight", "position", (self.rows, self.heads), e.n)
        e.op("relative_bias.add", e.n * self.heads * positions)

    def model_module(self, model):
        return None if self.per_layer else _modules()[2](self, model)

    def layer_module(self, model, layer):
        return _modules()[2](self, model) if self.per_layer else None


@cache
def _modules():
    import torch
    from torch import nn

    class PromptModule(nn.Module):
        """The prompt rows; ``enter`` prepends one set's ``length`` rows to every sequence."""

        def __init__(self, spec: Prompts, model):
            super().__init__()
            self.length = spec.length
            self.embed = nn.Embedding(spec.rows, model.d_model)

        def enter(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            ids = torch.arange(self.length, device=x.device)
            return torch.cat([self.embed(ids).expand(x.shape[0], -1, -1).to(x.dtype), x], dim=1)

    class SegmentModule(nn.Module):
        """Every position of segment 0: its vector added."""

        def __init__(self, spec: Segments, model):
            super().__init__()
            self.embed = nn.Embedding(spec.types, model.d_model)

        def enter(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            return x + self.embed(torch.zeros(x.shape[1], dtype=torch.long, device=x.device)).to(x.dtype)

    class BiasTable(nn.Module):
        """The table itself; the layers' attention modules here take no score bias (its lookup and adds have no
        multiply-adds for verify to count)."""

        def __init__(self, spec: RelativeBias, model):
            super().__init__()
            self.weight = nn.Parameter(torch.empty(spec.rows, spec.heads))

    return PromptModule, SegmentModule, BiasTable
