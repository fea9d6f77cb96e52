"""The resolved model: one plain, frozen layer per layer of the network, which every analysis walks.

Any field may differ from layer to layer (mixer kind, heads, FFN kind and width, dense or MoE); nothing
takes one layer to stand for the rest. Runs of identical layers are found by comparing layers, so an
analysis may do the work of one and multiply.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator

from .block_residuals import BlockResiduals
from .extras import AltUp, Embedding, HyperConnections, Laurel, PerLayerInputs, PredictionHead, ResidualScale
from .latent import ByteLatent
from .prompts import Prompts, RelativeBias, Segments
from .reuse import Cycles, reused
from .shared import SharedUse, uses
from .spec import ModelSpec, Norm, Positions
from .streams import AxialPositions, Padding


@dataclass(frozen=True)
class Layer:
    """One layer: a token mixer (attention of some kind) then a per-token FFN, each a registered block; ``norms``:
    each of its norms where they are not all the model's norm ("norm", "gated" or "none", spec.NormUse)."""

    attention: object
    ffn: object
    norms: tuple[str, ...] | None = None
    shared: SharedUse | None = None  # a weight-shared block the layer also runs, before its blocks (model/shared.py)
    # block attention residuals (model/block_residuals.py): the states attention_input mixes (0: none), its queries,
    # and the states mlp_input mixes
    mixes: tuple[int, int, int] | None = None
    # the layer runs again, with its parameters, the layer this many places earlier, storing none (model/reuse.py)
    reuse: int | None = None

    def blocks(self) -> Iterator[tuple[str, object]]:
        """(slot, block) in forward order."""
        if self.shared is not None:
            yield "shared", self.shared.block
        yield "attention", self.attention
        yield "ffn", self.ffn

    def norm_uses(self, norm: Norm) -> tuple[str, ...]:
        """Each of the layer's ``norm.per_layer`` norms: "norm", "gated" or "none"."""
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
    """A decoder-only language model, resolved: every block's widths are integers, every layer is listed."""

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
    per_layer_inputs: PerLayerInputs | None = None  # beside every layer's blocks (model/extras.py)
    altup: AltUp | None = None
    laurel: Laurel | None = None
    hyper: HyperConnections | None = None
    prediction_head: PredictionHead | None = None  # between the final norm and the unembedding
    residual_scale: ResidualScale | None = None
    prompts: Prompts | None = None  # beside the token embedding (model/prompts.py)
    segments: Segments | None = None
    relative_bias: RelativeBias | None = None
    reversible: bool = False  # Reformer's two residual streams (model/streams.py)
    axial_positions: AxialPositions | None = None
    padding: Padding | None = None
    block_residuals: BlockResiduals | None = None
    cycles: Cycles | None = None  # HRM's two states over its stack runs (model/reuse.py)
    byte_latent: ByteLatent | None = None  # BLT's parts beside its local decoder (model/latent.py)
    embedding: Embedding | None = None  # a token embedding of its own width or vocabulary (model/extras.py)

    def extras(self) -> tuple:
        """The parts beside every layer's blocks, in the order their terms and modules come."""
        return tuple(x for x in (self.altup, self.laurel, self.per_layer_inputs, self.hyper, self.residual_scale,
                                 self.block_residuals) if x is not None)

    def input_parts(self) -> tuple:
        """The parts beside the token embedding (model/prompts.py), in the order their terms and modules come."""
        return tuple(x for x in (self.axial_positions, self.prompts, self.segments, self.relative_bias, self.padding,
                                self.byte_latent) if x is not None)

    @property
    def prompt_length(self) -> int:
        """Positions prepended to every sequence, which the layers run over and the head does not."""
        return self.prompts.length if self.prompts is not None else 0

    def layer_positions(self, seq_len: int) -> int:
        """Positions the layers run over for a sequence of ``seq_len`` tokens: padded to whole chunks, the prompt's
        before them."""
        return (self.padding.positions(seq_len) if self.padding is not None else seq_len) + self.prompt_length

    @property
    def final_width(self) -> int:
        """What the final norm reads: both reversible streams, or the one."""
        return 2 * self.d_model if self.reversible else self.d_model

    @property
    def head_width(self) -> int:
        """What the head reads: the embedding's own width (after its project_out), else the final norm's."""
        return self.embedding.width if self.embedding and self.embedding.width else self.final_width

    @property
    def embed_shape(self) -> tuple[int, int]:
        """The token embedding table: its own vocabulary and width where it has them, else vocab_size × d_model."""
        e = self.embedding
        return ((e.vocab_size if e and e.vocab_size else self.vocab_size),
                (e.width if e and e.width else self.d_model))

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
        if seq_len is not None and self.positions == "learned" and seq_len > self.context_length:
            from ..errors import InputError

            raise InputError(f"--seq-len {seq_len} exceeds context_length {self.context_length} of {label}, "
                             "whose learned positions end there")

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
    names: list[str | None] = []
    starts: dict[str, int] = {}  # a named group's first layer
    for group in spec.layers or ():
        if group.name is not None:
            starts[group.name] = len(layers)
        if group.reuses is not None:  # the named group's layers again, their parameters stored there
            layers += reused(layers, len(layers), starts[group.reuses], group.repeat)
            names += [None] * group.repeat
            continue
        layer = Layer(group.attention.resolve(d) if group.attention is not None else attention,
                      group.ffn.resolve(d) if group.ffn is not None else ffn,
                      norms(group.norms if group.norms is not None else spec.norms))
        layers += [layer] * group.repeat
        names += [group.shared] * group.repeat
    if not spec.layers:
        layers = [Layer(attention, ffn, norms(spec.norms))] * spec.n_layers
    if spec.shared_blocks:  # each layer's use of its shared block, numbered: a use is a layer of its own
        shared = {name: block.resolve(d) for name, block in spec.shared_blocks.items()}
        layers = [replace(layer, shared=use) if use else layer for layer, use in zip(layers, uses(names, shared))]
    if spec.block_residuals:  # each layer's mixes: layers of different blocks differ
        layers = [replace(layer, mixes=spec.block_residuals.layer_mixes(i, layer.attention.inputs))
                  for i, layer in enumerate(layers)]
    notes = tuple(dict.fromkeys(b.count_note for layer in layers for _, b in layer.blocks() if b.count_note))
    if spec.byte_latent is not None:  # its FLOP convention (model/latent.py)
        notes += (spec.byte_latent.count_note,)
    return Model(spec.name, spec.vocab_size, d, spec.context_length, spec.norm, spec.parallel, spec.positions,
                 spec.tie_embeddings, spec.lm_head_bias, spec.embedding_norm, tuple(layers), spec.position_offset,
                 notes=notes, mtp_layers=spec.mtp_layers, per_layer_inputs=spec.per_layer_inputs,
                 altup=spec.altup, laurel=spec.laurel, hyper=spec.hyper, prediction_head=spec.prediction_head,
                 residual_scale=spec.residual_scale, prompts=spec.prompts, segments=spec.segments,
                 relative_bias=spec.relative_bias, reversible=spec.reversible, axial_positions=spec.axial_positions,
                 padding=spec.padding, block_residuals=spec.block_residuals, cycles=spec.cycles,
                 byte_latent=spec.byte_latent, embedding=spec.embedding)
