"""What a user may write: the model-level spec fields. Each block kind declares its own in ``blocks/``.

A spec describes shapes only. ``stack.resolve`` turns it into the per-layer stack every analysis walks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Annotated, Literal

from .reuse import check as check_reuse
from .schema import LIMIT, Layers, NonNegative, Positive, PositiveFloat, Slot, SpecError

Mixer = Annotated[object, Slot("attention", default="mha")]  # the block that mixes tokens
FFN = Annotated[object, Slot("ffn")]  # the block that transforms each token


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
    """A stated hidden width, or the one a rule derives from ``d_model``, which must be a width: positive and within
    the bound every stated width meets."""
    if not hasattr(d_ff, "resolve"):
        return d_ff
    derived = d_ff.resolve(d_model)
    if not 0 < derived <= LIMIT:
        raise SpecError(
            ("d_ff",),
            f"the {d_ff.rule} rule gives a width of {derived:,} at d_model {d_model:,}"
            + (f" with multiplier {d_ff.multiplier:g}" if d_ff.multiplier is not None else "")
            + (": a width must be positive" if derived <= 0 else f", beyond the limit of {LIMIT:,} (2^40)"),
        )
    return derived


def check_block(block, d_model: int) -> None:
    """What a block needs of the model it sits in (``Block.check``), and that every width it derives from
    ``d_model`` is one (``Block.resolve``: a rule's width is positive and within the bound)."""
    block.check(d_model)
    block.resolve(d_model)


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
# low-rank gate (Norm.gate_rank); none, an identity (ModernBERT's first layer has no norm before attention); or bare,
# the model's norm without its weight or bias (MUSE Spark's post_attention_layernorm, MuseSparkRMSNorm(with_scale=False)).
NormUse = Literal["norm", "gated", "none", "bare"]


@dataclass(frozen=True)
class LayerGroup:
    """``repeat`` consecutive layers; attention, ffn or norms left out means the model's default."""

    repeat: Layers
    attention: Mixer | None = None
    ffn: FFN | None = None
    norms: list[NormUse] | None = None
    shared: str | None = None  # the weight-shared block (shared_blocks) these layers also run
    name: str | None = None  # what a later group's ``reuses`` calls this group
    reuses: str | None = None  # an earlier group whose layers these run again, with its parameters (model/reuse.py)


# sinusoidal: a fixed table of sines and cosines added to the embeddings (Vaswani et al. 2017 §3.5; XGLM, CTRL):
# no parameters, one add per model-width element
Positions = Literal["learned", "rotary", "alibi", "sinusoidal", "none"]


def _parts():
    from ..parts import registry

    return registry()


@dataclass(frozen=True)
class ModelSpec:
    """A transformer language model: a decoder (causal), or an encoder (``mask: bidirectional``)."""

    vocab_size: Positive
    d_model: Positive
    n_layers: Layers
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
    # that norm's learned weight (MUSE Glimmer's embed_norm, an RMSNorm without one; false: square, add, scale alone)
    embedding_norm_affine: bool = True
    # learned or sinusoidal positions start at this row (OPT, XGLM: 2), a learned table that much longer
    position_offset: NonNegative = 0
    # the layers' attention mask: causal (a decoder: each query meets the keys up to its own), or bidirectional (an
    # encoder, BERT and its kin: every query meets every key, so every view counts the whole square, and nothing is
    # generated token by token)
    mask: Literal["causal", "bidirectional"] = "causal"
    # multi-token prediction modules a checkpoint carries beside the causal LM (DeepSeek-V3 §2.2): each a
    # layer like the model's last, a projection of [h; emb] (2·d -> d) and three norms; counted apart
    mtp_layers: NonNegative = 0
    # the transformers model_type the model is built as (a config.json states its own): its module names, which
    # fine-tuning's adapters target (analysis/adapters.py: peft's names, fused modules, MoE conversion)
    model_type: str | None = None
    # each of a layer's norm.per_layer norms (NormUse); default: every one the model's norm
    norms: list[NormUse] | None = None
    # the parts beside the layers' blocks (ffncalc/parts/), each stated under its own key at the spec's top and
    # collected here in their order; not a key a spec states
    parts: tuple = field(default=(), metadata={"registry": _parts})

    def __post_init__(self) -> None:
        if self.layers is not None:
            total = sum(g.repeat for g in self.layers)
            if total != self.n_layers:
                raise SpecError(("layers",), f"layer groups repeat {total} layers in all, but n_layers is {self.n_layers}")
        for path, uses in [(("norms",), self.norms)] + [(("layers", i, "norms"), g.norms) for i, g in enumerate(self.layers or ())]:
            if uses is None:
                continue
            if len(uses) != self.norm.per_layer:
                raise SpecError(path, f"{len(uses)} norms stated, but a layer has norm.per_layer = {self.norm.per_layer}")
            if "gated" in uses and not self.norm.gate_rank:
                raise SpecError(path, "a gated norm needs norm.gate_rank")
        for i, group in enumerate(self.layers or ()):  # a weight-shared block a part holds (parts/shared.py)
            if group.shared is not None and not any(p.holds(group.shared) for p in self.parts):
                raise SpecError(("layers", i, "shared"), f"no shared block named {group.shared!r} in shared_blocks")
        check_reuse(self.layers or ())
        for path, block in self._blocks():
            try:
                check_block(block, self.d_model)
            except SpecError as exc:
                raise exc.within(*path) from None
        if self.parallel and (self.norm.per_layer > 2 or self.norm.placement != "pre"):
            raise SpecError(("parallel",), "parallel sublayers take one shared norm or one pre-norm each")
        for part in self.parts:  # what each part needs of the rest
            part.check(self)

    def has(self, *keys: str) -> bool:
        """Whether any of the parts ``keys`` is stated."""
        return any(p.key in keys for p in self.parts)

    def _blocks(self):
        yield ("attention",), self.attention
        yield ("ffn",), self.ffn
        for i, group in enumerate(self.layers or ()):
            for slot in ("attention", "ffn"):
                if getattr(group, slot) is not None:
                    yield ("layers", i, slot), getattr(group, slot)
