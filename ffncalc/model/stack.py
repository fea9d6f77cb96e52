"""The resolved model: one plain, frozen layer per layer of the network, which every analysis walks.

Any field may differ from layer to layer (mixer kind, heads, FFN kind and width, dense or MoE); nothing
takes one layer to stand for the rest. Runs of identical layers are found by comparing layers, so an
analysis may do the work of one and multiply.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator

from .reuse import reused
from .shared import SharedUse
from .spec import ModelSpec, Norm, Positions


@dataclass(frozen=True)
class Layer:
    """One layer: a token mixer (attention of some kind) then a per-token FFN, each a registered block; ``norms``:
    each of its norms where they are not all the model's norm ("norm", "gated", "none" or "bare", spec.NormUse)."""

    attention: object
    ffn: object
    norms: tuple[str, ...] | None = None
    shared: SharedUse | None = None  # a weight-shared block the layer also runs, before its blocks (model/shared.py)
    # what parts record of this layer, (part key, value) pairs (parts/block_residuals.py: the states each of its mixes
    # reads); layers whose marks differ differ
    marks: tuple[tuple[str, object], ...] = ()
    # the layer runs again, with its parameters, the layer this many places earlier, storing none (model/reuse.py)
    reuse: int | None = None

    def blocks(self) -> Iterator[tuple[str, object]]:
        """(slot, block) in forward order."""
        if self.shared is not None:
            yield "shared", self.shared.block
        yield "attention", self.attention
        yield "ffn", self.ffn

    def mark(self, key: str):
        """What part ``key`` recorded of this layer (None: nothing)."""
        return dict(self.marks).get(key)

    def marked(self, key: str, value) -> Layer:
        return replace(self, marks=self.marks + ((key, value),))

    def norm_uses(self, norm: Norm) -> tuple[str, ...]:
        """Each of the layer's ``norm.per_layer`` norms: "norm", "gated", "none" or "bare"."""
        return self.norms if self.norms is not None else ("norm",) * norm.per_layer


@dataclass(frozen=True)
class Run:
    """``stop - first`` consecutive identical layers."""

    first: int
    stop: int
    layer: Layer

    @property
    def n(self) -> int:
        return self.stop - self.first

    @property
    def span(self) -> tuple[int, int]:
        return (self.first, self.stop)


@dataclass(frozen=True)
class Model:
    """A language model, resolved: every block's widths are integers, every layer is listed."""

    name: str | None
    vocab_size: int
    d_model: int
    context_length: int
    norm: Norm
    parallel: bool
    positions: Positions
    tie_embeddings: bool
    lm_head_bias: bool
    embedding_norm: bool
    layers: tuple[Layer, ...]
    position_offset: int = 0
    notes: tuple[str, ...] = ()  # what the source says about what is and is not counted
    mtp_layers: int = 0  # multi-token prediction modules beside the model (DeepSeek-V3 §2.2), counted apart
    parts: tuple = ()  # beside the layers' blocks (ffncalc/parts/), in their order
    # what the source leaves unstated that the count needs beyond the parameters, each a line (a config.json's null
    # num_experts_per_tok): the parameters are counted, the active parameters and FLOPs are not (a stand-in holds
    # the block's place), and a question that needs them is refused with the line (analysis/count.py: tally)
    needs: tuple[str, ...] = ()
    mask: str = "causal"  # or "bidirectional": encoder-only (ModelSpec.mask)
    # the transformers model_type a config.json was read as (None: a preset or a spec file): its module names, which
    # adapters target (analysis/adapters.py)
    model_type: str | None = None
    embedding_norm_affine: bool = True  # the embedding norm's learned weight (ModelSpec.embedding_norm_affine)

    @property
    def embedding_norm_kind(self) -> Norm:
        """The norm after the embeddings: the model's, or without its weight and bias (embedding_norm_affine false)."""
        return self.norm if self.embedding_norm_affine else replace(self.norm, affine=False, bias=False, layer_bias=False)

    @property
    def bidirectional(self) -> bool:
        """Whether every query meets every key: an encoder-only model, which reads a sequence whole and generates
        nothing."""
        return self.mask == "bidirectional"

    def part(self, key: str):
        """The part stated under ``key``, or None."""
        return next((p for p in self.parts if p.key == key), None)

    def has(self, *keys: str) -> bool:
        return any(p.key in keys for p in self.parts)

    @property
    def prompt_length(self) -> int:
        """Positions before every sequence's own, which the layers run over and the head does not read."""
        return sum(p.prompt_length for p in self.parts)

    def layer_positions(self, seq_len: int) -> int:
        """Positions the layers run over for a sequence of ``seq_len`` tokens (padded to whole chunks, a prompt's
        before them: each part's in order)."""
        for p in self.parts:
            seq_len = p.positions(seq_len)
        return seq_len

    @property
    def input_width(self) -> int:
        """The embedding side's width (the table's rows, the positions, token types and embedding norm added to them):
        d_model, or what parts make of it (a factorised embedding, projected to d_model after its norm)."""
        width = self.d_model
        for p in self.parts:
            width = p.input_width(width)
        return width

    @property
    def final_width(self) -> int:
        """What the final norm reads: d_model, or what parts make of it (both reversible streams)."""
        width = self.d_model
        for p in self.parts:
            width = p.final_width(width)
        return width

    @property
    def head_width(self) -> int:
        """What the head reads: the final norm's width, or what parts make of it (an embedding's own width)."""
        width = self.final_width
        for p in self.parts:
            width = p.head_width(width)
        return width

    @property
    def embed_shape(self) -> tuple[int, int]:
        """The token embedding table: vocab_size × d_model, or what parts make of it (its own vocabulary, width)."""
        shape = (self.vocab_size, self.d_model)
        for p in self.parts:
            shape = p.table(shape)
        return shape

    @property
    def head_shape(self) -> tuple[int, int]:
        """The unembedding: vocab_size × head_width."""
        return self.vocab_size, self.head_width

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    def runs(self) -> list[Run]:
        """Runs of consecutive identical layers, in order."""
        out: list[Run] = []
        for i, layer in enumerate(self.layers):
            if out and out[-1].layer == layer:
                out[-1] = Run(out[-1].first, i + 1, layer)
            else:
                out.append(Run(i, i + 1, layer))
        return out

    def blocks(self) -> Iterator[object]:
        """Every block of every layer, in order (a run's block once per layer)."""
        for layer in self.layers:
            for _, block in layer.blocks():
                yield block

    def with_layers(self, layers) -> Model:
        return replace(self, layers=tuple(layers))

    def check_seq_len(self, seq_len: int | None, label: str) -> None:
        """Learned positions end at the context length: a longer sequence has no position to take."""
        if seq_len is not None and self.positions == "learned" and self.placed(seq_len) > self.context_length:
            from ..errors import InputError

            raise InputError(
                f"--seq-len {seq_len} exceeds context_length {self.context_length} of {label}, whose learned positions end there"
            )

    def placed(self, seq_len: int) -> int:
        """Of a sequence's positions, those that take a row of a learned position table: all but a part's tokens that
        take none (GIT's image positions)."""
        return seq_len - sum(p.unplaced_tokens() for p in self.parts)

    @classmethod
    def bare(cls, d_model: int) -> Model:
        """A model of width ``d_model`` and no layers: the context a lone block is sized in."""
        return cls(None, 1, d_model, 1, Norm(), False, "none", False, False, False, ())


def resolve(spec: ModelSpec) -> Model:
    """The spec's layer groups expanded to one entry per layer, each block resolved against d_model."""
    d = spec.d_model
    attention, ffn = spec.attention.resolve(d), spec.ffn.resolve(d)

    def norms(uses) -> tuple[str, ...] | None:  # every norm the model's: none stated, as a layer of any other model
        return tuple(uses) if uses is not None and any(u != "norm" for u in uses) else None

    layers: list[Layer] = []
    groups: list = []  # each layer's group (None: a reused layer)
    starts: dict[str, int] = {}  # a named group's first layer
    for group in spec.layers or ():
        if group.name is not None:
            starts[group.name] = len(layers)
        if group.reuses is not None:  # the named group's layers again, their parameters stored there
            layers += reused(layers, len(layers), starts[group.reuses], group.repeat)
            groups += [None] * group.repeat
            continue
        layer = Layer(
            group.attention.resolve(d) if group.attention is not None else attention,
            group.ffn.resolve(d) if group.ffn is not None else ffn,
            norms(group.norms if group.norms is not None else spec.norms),
        )
        layers += [layer] * group.repeat
        groups += [group] * group.repeat
    if not spec.layers:
        layers = [Layer(attention, ffn, norms(spec.norms))] * spec.n_layers
        groups = [None] * spec.n_layers
    for part in spec.parts:  # what parts record in the layers (shared blocks' uses, block residuals' mixes)
        layers = part.resolve_layers(spec, layers, groups)
    notes = tuple(dict.fromkeys(b.count_note for layer in layers for _, b in layer.blocks() if b.count_note))
    notes += tuple(n for p in spec.parts for n in [p.note(spec)] if n)  # their FLOP conventions (parts/latent.py)
    return Model(
        spec.name,
        spec.vocab_size,
        d,
        spec.context_length,
        spec.norm,
        spec.parallel,
        spec.positions,
        spec.tie_embeddings,
        spec.lm_head_bias,
        spec.embedding_norm,
        tuple(layers),
        spec.position_offset,
        notes=notes,
        mtp_layers=spec.mtp_layers,
        parts=spec.parts,
        mask=spec.mask,
        model_type=spec.model_type,
        embedding_norm_affine=spec.embedding_norm_affine,
    )
