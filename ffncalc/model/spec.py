"""What a user may write: the model-level spec fields. Each block kind declares its own in ``blocks/``.

A spec describes shapes only. ``stack.resolve`` turns it into the per-layer stack every analysis walks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Annotated, Literal

from .block_residuals import BlockResiduals
from .extras import AltUp, Embedding, HyperConnections, Laurel, PerLayerInputs, PredictionHead, ResidualScale
from .latent import ByteLatent
from .prompts import Prompts, RelativeBias, Segments
from .reuse import Cycles
from .reuse import check as check_reuse
from .schema import NonNegative, Positive, PositiveFloat, Slot, SpecError
from .streams import AxialPositions, Padding

Mixer = Annotated[object, Slot("attention", default="mha")]  # the block that mixes tokens
FFN = Annotated[object, Slot("ffn")]  # the block that transforms each token
Shared = Annotated[object, Slot("shared")]  # a weight-shared block several layers run (model/shared.py)


@dataclass(frozen=True)
class LlamaWidth:
    """Llama's FFN width rule, as in meta-llama's ``FeedForward.__init__``.

    h = 4·d_model; h = int(2h/3); if multiplier: h = int(multiplier·h); h = multiple_of·ceil(h/multiple_of).
    """

    multiple_of: Positive
    rule: Literal["llama"] = "llama"
    multiplier: PositiveFloat | None = None

    def resolve(self, d_model: int) -> int:
        return llama_ffn_width(d_model, multiple_of=self.multiple_of, multiplier=self.multiplier)


def llama_ffn_width(d_model: int, *, multiple_of: int, multiplier: float | None = None) -> int:
    """The gated FFN width Llama derives from ``d_model`` (meta-llama/llama ``model.py``, ``FeedForward``).

    The multiplier is applied in floating point, exactly as the reference code does.
    """
    hidden = 4 * d_model
    hidden = int(2 * hidden / 3)
    if multiplier is not None:
        hidden = int(multiplier * hidden)
    return multiple_of * math.ceil(hidden / multiple_of)


Width = Positive | LlamaWidth


def width(d_ff: int | LlamaWidth, d_model: int) -> int:
    """A stated hidden width, or the one a rule derives from ``d_model``."""
    return d_ff.resolve(d_model) if hasattr(d_ff, "resolve") else d_ff


@dataclass(frozen=True)
class Norm:
    """The normalisation layers: their kind, how many each layer has, and whether a final one follows."""

    kind: Literal["layernorm", "layernorm1p", "rmsnorm"] = "rmsnorm"  # layernorm1p: scales by 1 + w (Nemotron)
    # pre: each sublayer's first norm before it, any others after it (Gemma 2 has two each);
    # post: the norms after the sublayers only, on the sublayer's output before the residual add (OLMo 2);
    # residual: the norms after the residual add, on the sum (the original Transformer, GPT-1: x = norm(x + f(x))).
    placement: Literal["pre", "post", "residual"] = "pre"
    affine: bool = True  # a learned weight (microgpt's rmsnorm has none)
    bias: bool | None = None  # default: LayerNorm has one, RMSNorm has none
    # a bias on each layer's norms alone, not on the final one (xLSTM: xLSTMBlock's xLSTMRMSNorms with use_bias; its
    # out_norm has none)
    layer_bias: bool = False
    per_layer: NonNegative = 2
    final: bool = True
    # the rank r of a gated norm's gate: y = norm(x), y ⊙ σ(W₂ silu(W₁ y)) with W₁ d -> r, W₂ r -> d, no biases
    # (AXK2's GatedRMSNorm); which of a layer's norms are gated: the layer's norms (ModelSpec.norms)
    gate_rank: NonNegative = 0

    def __post_init__(self) -> None:
        # an RMSNorm may have a bias, added after its weight (xLSTM's xLSTMRMSNorm with use_bias)
        if (self.has_bias or self.layer_bias) and not self.affine:
            raise SpecError(("layer_bias" if self.layer_bias else "bias",), "a norm without affine parameters has no bias")

    @property
    def layer(self) -> Norm:
        """Each layer's norms: this norm, with a bias where only they have one (``layer_bias``)."""
        return replace(self, bias=True, layer_bias=False) if self.layer_bias else self

    @property
    def has_bias(self) -> bool:
        return self.bias if self.bias is not None else self.kind != "rmsnorm"

    @property
    def params_per_feature(self) -> int:
        return int(self.affine) + int(self.has_bias)

    def ops(self, width: int) -> int:
        """Elementwise FLOPs of one norm over ``width`` elements."""
        # LayerNorm: mean (add), centre (sub), variance (mul, add), scale (mul) = 5; RMSNorm: square, add, scale = 3.
        base = 3 if self.kind == "rmsnorm" else 5
        return width * (base + self.params_per_feature)


# Each of a layer's norms, in the order of the norm's placement: the model's norm; the model's norm with its
# low-rank gate (Norm.gate_rank); or none, an identity (ModernBERT's first layer has no norm before attention).
NormUse = Literal["norm", "gated", "none"]


@dataclass(frozen=True)
class LayerGroup:
    """``repeat`` consecutive layers; attention, ffn or norms left out means the model's default."""

    repeat: Positive
    attention: Mixer | None = None
    ffn: FFN | None = None
    norms: list[NormUse] | None = None
    shared: str | None = None  # the weight-shared block (shared_blocks) these layers also run
    name: str | None = None  # what a later group's ``reuses`` calls this group
    reuses: str | None = None  # an earlier group whose layers these run again, with its parameters (model/reuse.py)


# sinusoidal: a fixed table of sines and cosines added to the embeddings (Vaswani et al. 2017 §3.5; XGLM, CTRL):
# no parameters, one add per model-width element
Positions = Literal["learned", "rotary", "alibi", "sinusoidal", "none"]


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer language model."""

    vocab_size: Positive
    d_model: Positive
    n_layers: Positive
    context_length: Positive
    attention: Mixer
    ffn: FFN
    name: str | None = None
    layers: list[LayerGroup] | None = None  # for stacks whose layers differ, in order
    norm: Norm = field(default_factory=Norm)
    # Attention and FFN read the same input and their outputs are added (GPT-J, GPT-NeoX, phi-2).
    # With one norm per layer they share it; with two, each has its own.
    parallel: bool = False
    positions: Positions = "rotary"
    tie_embeddings: bool = False
    lm_head_bias: bool = False
    embedding_norm: bool = False  # a norm straight after the embeddings
    # learned or sinusoidal positions start at this row (OPT, XGLM: 2), a learned table that much longer
    position_offset: NonNegative = 0
    # multi-token prediction modules a checkpoint carries beside the causal LM (DeepSeek-V3 §2.2): each a
    # layer like the model's last, a projection of [h; emb] (2·d -> d) and three norms; counted apart
    mtp_layers: NonNegative = 0
    # beside every layer's two blocks (model/extras.py): Gemma 3n's and Gemma 4 E2B/E4B's per-layer inputs, Gemma
    # 3n's AltUp streams and LAuReL
    per_layer_inputs: PerLayerInputs | None = None
    altup: AltUp | None = None
    laurel: Laurel | None = None
    # the residual as several streams, mixed before each sublayer and at the end (DeepSeek-V4, HY-V4, Qwen4-Exp)
    hyper: HyperConnections | None = None
    residual_scale: ResidualScale | None = None  # scaled residual adds (ZAYA1)
    # learned queries mixing the embeddings and earlier blocks' sums before each sublayer and the final norm (Inkling 2)
    block_residuals: BlockResiduals | None = None
    # each of a layer's norm.per_layer norms (NormUse); default: every one the model's norm
    norms: list[NormUse] | None = None
    # a transform between the final norm and the unembedding (ModernBERT's prediction head)
    prediction_head: PredictionHead | None = None
    # a token embedding of its own width, projected to and from d_model (OPT-350m), or of its own vocabulary (BLT)
    embedding: Embedding | None = None
    # beside the token embedding (model/prompts.py): CPM-Ant's prompt positions prepended to every sequence, its
    # segment embeddings and its table of relative-position biases shared by every layer
    prompts: Prompts | None = None
    segments: Segments | None = None
    relative_bias: RelativeBias | None = None
    # Reformer (model/streams.py): two residual streams, each layer's attention adding to one from the other and its
    # FFN to the other from that sum, the final norm and the head reading both (2·d_model); axial position
    # embeddings; the sequence padded to whole attention chunks
    reversible: bool = False
    axial_positions: AxialPositions | None = None
    padding: Padding | None = None
    # weight-shared blocks by name (model/shared.py), each stored once and run by every layer whose group names it
    shared_blocks: dict[str, Shared] | None = None
    # the Hierarchical Reasoning Model's two states over its stack runs (model/reuse.py)
    cycles: Cycles | None = None
    # the Byte Latent Transformer (model/latent.py): the layers are its local decoder; beside them its hashed n-gram
    # embeddings, local encoder, global transformer over patches, cross-attentions and patcher
    byte_latent: ByteLatent | None = None

    def __post_init__(self) -> None:
        if self.layers is not None:
            total = sum(g.repeat for g in self.layers)
            if total != self.n_layers:
                raise SpecError(("layers",), f"layer groups repeat {total} layers in all, but n_layers is {self.n_layers}")
        for path, uses in [(("norms",), self.norms)] + [(("layers", i, "norms"), g.norms)
                                                        for i, g in enumerate(self.layers or ())]:
            if uses is None:
                continue
            if len(uses) != self.norm.per_layer:
                raise SpecError(path, f"{len(uses)} norms stated, but a layer has norm.per_layer = {self.norm.per_layer}")
            if "gated" in uses and not self.norm.gate_rank:
                raise SpecError(path, "a gated norm needs norm.gate_rank")
        for i, group in enumerate(self.layers or ()):
            if group.shared is not None and group.shared not in (self.shared_blocks or {}):
                raise SpecError(("layers", i, "shared"), f"no shared block named {group.shared!r} in shared_blocks")
        check_reuse(self.layers or ())
        if self.cycles is not None:
            try:
                self.cycles.check(self.n_layers)
            except SpecError as exc:
                raise exc.within("cycles") from None
            if self.parallel or self.reversible or self.altup or self.hyper or self.norm.final:
                raise SpecError(("cycles",), "cycles pass one residual stream between stack runs, the last run's norm "
                                             "the final one: no parallel sublayers, reversible or other streams, and "
                                             "norm.final false")
        for path, block in self._blocks():
            try:
                block.check(self.d_model)
            except SpecError as exc:
                raise exc.within(*path) from None
        if self.parallel and (self.norm.per_layer > 2 or self.norm.placement != "pre"):
            raise SpecError(("parallel",), "parallel sublayers take one shared norm or one pre-norm each")
        if self.residual_scale and (self.parallel or self.laurel or self.altup or self.hyper
                                    or self.norm.placement == "residual"):
            raise SpecError(("residual_scale",), "scaled residual adds are a sequential layer's two adds: no parallel "
                                                 "sublayers, LAuReL, AltUp, hyper-connections or norms after the add")
        if self.reversible and (self.tie_embeddings or self.parallel or self.norm.placement != "pre"
                                or self.norm.per_layer != 2 or self.altup or self.laurel or self.hyper
                                or self.residual_scale or self.prediction_head):
            raise SpecError(("reversible",), "reversible streams take sequential pre-norm layers of two norms and an "
                                             "untied head of 2·d_model, without other residual streams, scaled "
                                             "residual adds or a prediction head")
        if self.embedding and self.embedding.vocab_size not in (None, self.vocab_size) and self.tie_embeddings:
            raise SpecError(("embedding", "vocab_size"), "a tied head is the embedding's table: one vocabulary, "
                                                         f"vocab_size {self.vocab_size}")
        if self.embedding and self.embedding.width is not None and (self.reversible or self.mtp_layers
                                                                    or self.byte_latent):
            raise SpecError(("embedding", "width"), "an embedding of its own width is projected to one residual stream "
                                                    "of d_model: no reversible streams, multi-token prediction modules "
                                                    "or byte-latent parts, which read the embedding at d_model")
        if self.byte_latent and self.byte_latent.encoder.d_model != self.d_model:
            raise SpecError(("byte_latent", "encoder", "d_model"), "the local encoder's width is the embedding's, "
                                                                   f"d_model {self.d_model}")
        if self.laurel and (self.parallel or self.norm.placement != "pre" or not self.norm.per_layer):
            raise SpecError(("laurel",), "LAuReL reads the layer's first norm's output: sequential pre-norm layers")
        if self.hyper and (self.parallel or self.norm.placement != "pre" or self.altup or self.laurel):
            raise SpecError(("hyper",), "hyper-connections wrap sequential pre-norm sublayers, without AltUp or LAuReL")

        if self.block_residuals and (self.parallel or self.norm.placement != "pre" or self.altup or self.laurel
                                     or self.hyper or self.residual_scale or self.reversible or self.shared_blocks
                                     or self.per_layer_inputs or self.cycles
                                     or any(group.reuses for group in self.layers or ())):
            raise SpecError(("block_residuals",), "block attention residuals mix the inputs of sequential pre-norm "
                                                  "sublayers, without other residual streams, scaled adds, cycles or "
                                                  "reused layers")

    def _blocks(self):
        yield ("attention",), self.attention
        yield ("ffn",), self.ffn
        for i, group in enumerate(self.layers or ()):
            for slot in ("attention", "ffn"):
                if getattr(group, slot) is not None:
                    yield ("layers", i, slot), getattr(group, slot)
        for name, block in (self.shared_blocks or {}).items():
            yield ("shared_blocks", name), block
