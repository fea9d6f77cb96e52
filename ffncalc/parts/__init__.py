"""The parts a model has beside its layers' blocks, one module per part (or per family's set of them), and the
registry that maps a spec key to a part.

A part is a frozen dataclass: its fields are its spec (what a user writes under its key at the top of a spec), and its
methods answer everything the part adds: its terms at each place of the forward pass, what it changes of the
positions the layers run over and of the widths around the head, the conflicts it has with the rest of the spec, and
its reference torch modules with the hooks the reference model calls. The model spec holds a tuple of parts; ``count``,
``stack``, ``reference`` and planning walk it and never name a part. A new part is one new module that subclasses
``Part`` and is decorated with ``@register``.

Where a part's terms come: ``lookup_terms`` right after the token table's lookup; ``input_terms`` after the positions
and the embedding norm (the model's input); ``layer_terms`` in each run of identical layers (slot "", beside the
layer's norms); ``final_terms`` before the final norm; ``top_terms`` after it; ``head_terms`` in the head, before the
unembedding; ``sequence_terms`` once a sequence, after the final norm (a pooler). Parts write theirs in the order of
``order`` (``input_order`` where it differs at the input).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from ..model.stack import Layer, Model
    from ..model.terms import Emitter

_REGISTRY: dict[str, type[Part]] = {}
_VERSION = [0]
MODULES = (
    "vision",
    "audio",
    "phi4_audio",
    "gemma3n_audio",
    "vibevoice_audio",
    "muse_audio",
    "phi4_vision",
    "molmo2_vision",
    "audio_codes",
    "waveform_audio",
    "hmlp_vision",
    "encoder",
    "document",
    "cross_attention",
    "protein",
    "embedding",
    "char_features",
    "token_types",
    "sine_table",
    "layout",
    "relative_embeddings",
    "pooler",
    "streams",
    "prompts",
    "ngram",
    "latent",
    "funnel",
    "per_layer_inputs",
    "altup",
    "laurel",
    "hyper",
    "residual_scale",
    "residual_gate",
    "language_adapters",
    "block_residuals",
    "cycles",
    "prediction_head",
    "contact_head",
    "entities",
    "shared",
    "codec",
    "talker",
    "token2wav",
    "moe_talker",
    "code2wav",
    "ada_norm",
    "perceiver",
    "patch_stem",
    "value_embeddings",
    "initial_mix",
    "action_expert",
    "block_diffusion",
)  # the shipped parts' modules


@dataclass(frozen=True)
class LayerKept:
    """What a part keeps for backward in one layer of a training forward (``Part.layer_kept``)."""

    elements: int = 0  # 16-bit elements a token, split over tp
    bytes: int = 0  # bytes a token beside them (dropout masks, the attention kernel's log-sum-exp), split over tp
    whole: int = 0  # of ``elements``, those tensor parallelism leaves whole on every device without sequence parallelism
    sequence: int = 0  # bytes a sequence whatever its length, split over tp by heads (K and V of its images' rows)
    forward: int = 0  # bytes a forward whatever its sequences, whole (a vector gate's tanh)


class Part:
    """The protocol every part answers; the defaults add nothing."""

    key: ClassVar[str]  # the spec's key
    order: ClassVar[int] = 50  # where its terms and modules come among the parts'
    input_order: ClassVar[int | None] = None  # where its input terms come, where that differs
    prefix: ClassVar[str | None] = None  # its torch modules' name in the model and in each layer (default: key)
    summary: ClassVar[str] = ""  # one line on what it is, with its source
    unplanned: ClassVar[str | None] = None  # why train, infer and fit cannot plan a model with it yet, if they cannot

    # --- reading: what a spec states under ``key`` -------------------------------------------------------------
    @classmethod
    def annotation(cls) -> Any:
        """The type of what a spec states under the key (default: the part's own fields, a mapping)."""
        return cls

    @classmethod
    def read(cls, value) -> Part | None:
        """The part from what was built of the stated value (None: the spec has none)."""
        return value

    def check(self, spec) -> None:
        """Raise SpecError (a path from the spec's top) where the rest of the spec does not allow this part."""

    def holds(self, name: str) -> bool:
        """Whether it holds the weight-shared block a layer group names (``shared: name``)."""
        return False

    # --- resolving ---------------------------------------------------------------------------------------------
    def resolve_layers(self, spec, layers: list[Layer], groups: list) -> list[Layer]:
        """The resolved layers, with what this part records in them (``Layer.marks``); ``groups``: each layer's
        layer group."""
        return layers

    count_note: ClassVar[str | None] = None  # what a count must say about its figures, if anything
    # a tower or a generator beside the language model (an image's, audio's or protein's encoder, a talker, an action
    # expert): what a text-only class (--text-only) leaves out
    beside: ClassVar[bool] = False

    # --- what a request brings beside its tokens ----------------------------------------------------------------
    takes: ClassVar[tuple[str, ...]] = ()  # the per-request inputs it reads, by option name (images, image_size)

    def given(self, **inputs) -> Part:
        """This part with the per-request inputs it takes (``takes``) set; the others are not its own."""
        return self

    def request_tokens(self) -> int:
        """Tokens of the language model its per-request inputs add to each sequence (an image's)."""
        return 0

    def unplaced_tokens(self) -> int:
        """Of those, the tokens that take no row of the model's learned position table (GIT's image positions)."""
        return 0

    def image_sizes(self, spec, limit: int):
        """(pixels a side, tokens of the language model) of one image at each size up to ``limit`` it takes, smallest
        first (``--image-tokens``): none unless it takes ``image_size``."""
        return iter(())

    def image_tokens(self) -> int:
        """Of those, the tokens that take positions of the sequence as its images' (an isolated mixture runs them
        apart, blocks/isolated_moe.py): none where they are not an image's."""
        return 0

    def note(self, spec) -> str | None:
        """What a count of ``spec`` must say about its figures (default: ``count_note``)."""
        return self.count_note

    # --- shapes ------------------------------------------------------------------------------------------------
    def positions(self, n: int) -> int:
        """Positions the layers run over for ``n`` (parts apply theirs in order)."""
        return n

    prompt_length: int = 0  # positions before the sequence's own, which the head does not read

    def table(self, shape: tuple[int, int]) -> tuple[int, int]:
        """The token embedding table's (rows, width)."""
        return shape

    def input_width(self, width: int) -> int:
        """The width of the embedding side: the token table's rows as looked up, the position and token-type tables
        added to them and the embedding norm (a factorised embedding's, projected to d_model after the norm)."""
        return width

    def final_width(self, width: int) -> int:
        """What the final norm reads."""
        return width

    def head_width(self, width: int) -> int:
        """What the head reads."""
        return width

    def head_positions(self, seq_len: int, scale: Fraction) -> Fraction:
        """Rows the head reads per token of a sequence of ``seq_len`` (``scale``: the earlier parts'): one a token
        by default; Perceiver IO's decoder its fixed count of position queries."""
        return scale

    # --- memory ------------------------------------------------------------------------------------------------
    def kept_elements(self, model: Model) -> int:
        """16-bit elements per token a layer's share of it keeps for backward in training, beside its blocks'."""
        return 0

    # --- planning: what training and serving ask of it beyond the layers' blocks -----------------------------------
    unsplit: ClassVar[str | None] = None  # why pipeline stages and context parallelism cannot place it, if they cannot

    def sized(self, positions: int) -> Part:
        """This part in a plan whose sequences are ``positions`` tokens: what it leaves to the sequence's length
        fixed there (an encoder's source, as long as the sequence unless stated)."""
        return self

    def source_tokens(self) -> int:
        """Tokens of a sequence's source beside the sequence itself (an encoder's), 0 for none."""
        return 0

    def stacks(self, model: Model) -> tuple[tuple[Model, int, int, int], ...]:
        """Stacks of its own a training step runs beside the layers, each as (a model of its own, the positions a
        sequence runs it over, 16-bit elements a position keeps beside its layers split over tp, and kept whole):
        training keeps their layers' activations as the model's own (an encoder's over its source)."""
        return ()

    def kept_bytes(self, model: Model, kernel: str) -> int:
        """Bytes per token a layer's share of it keeps beside ``kept_elements``: dropout masks, and what the attention
        kernel keeps of its scores (``kernel``: "flash", "eager", or "recomputed", eager scores selective
        recomputation drops)."""
        return 0

    def layer_kept(self, model: Model, layer: Layer, kernel: str) -> LayerKept:
        """What its share of ``layer`` keeps for backward in a training forward (``kernel`` as for ``kept_bytes``):
        every layer's ``kept_elements`` and ``kept_bytes`` by default; a part whose share is in some layers alone says
        which, and what those keep a sequence whatever its length (cross-attention layers reading images)."""
        return LayerKept(self.kept_elements(model), self.kept_bytes(model, kernel))

    def kept_module(self, model: Model, layer: Layer) -> Any:
        """A torch module whose forward over a layer's input (B, s, d) runs its share of ``layer`` alone, the layer's
        blocks and norms as identities, for verify --memory to hold ``layer_kept`` against what autograd saves; None
        where it keeps nothing of its own there. Imports torch."""
        return None

    def cached_elements(self, model: Model) -> int:
        """Elements each layer caches a sequence for decoding whatever its length, split over tp by heads (an
        encoder-decoder's cross-attention K and V of every source token)."""
        return 0

    def cached_in(self, model: Model, index: int) -> int:
        """What layer ``index`` caches a sequence whatever its length (default: every layer's ``cached_elements``;
        a part whose cache is in some layers alone says which: cross-attention layers reading images)."""
        return self.cached_elements(model)

    # --- terms -------------------------------------------------------------------------------------------------
    def lookup_terms(self, e: Emitter, model: Model) -> None:
        """Right after the token table's lookup, before the positions are added."""

    def input_terms(self, e: Emitter, model: Model, seq_len: int) -> None:
        """The model's input, after the positions and the embedding norm."""

    def layer_terms(self, e: Emitter, model: Model, positions: int) -> None:
        """Each run of ``e.n`` identical layers, over ``positions`` positions."""

    def final_terms(self, e: Emitter, model: Model) -> None:
        """Before the final norm."""

    def top_terms(self, e: Emitter, model: Model) -> None:
        """After the final norm."""

    def head_terms(self, e: Emitter, model: Model) -> None:
        """In the head, before the unembedding."""

    def sequence_terms(self, e: Emitter, model: Model, seq_len: int) -> None:
        """After the final norm, work done once a sequence of ``seq_len`` tokens rather than per token (a pooler over
        its first position): terms marked ``per_sequence``, their positions 1 / seq_len."""

    # --- the reference torch model (imports torch only when called) ---------------------------------------------
    def embed_module(self, model: Model):
        """The token embedding's module where the part makes it (``forward(tokens)``, ``weight``; ``out(x)``)."""
        return None

    def model_module(self, model: Model):
        """Its model-level module, or None. The reference model calls whichever of these methods it has, in the
        parts' order: ``lookup(x, ctx)`` on the token table's rows (before the positions and the embedding norm),
        ``enter(x, ctx)`` on the input (the sequence as the layers will read it), ``expand(x, ctx)``
        into the residual streams, ``run(x, run)`` around the layers (``run(indices, x)`` runs the model's layers),
        ``collapse(x, ctx)`` back into one before the final norm, ``top(x)`` after it. ``ctx`` is a dict of the
        forward pass: ``tokens``, ``embeddings`` (the layers' input before any streams), and what parts put there
        (``rows``: the rows the head reads, where they are not the sequence's: Perceiver IO's decoder queries)."""
        return None

    def layer_module(self, model: Model, layer: Layer):
        """Its module in a layer, or None. The layer calls whichever of these it has: ``body(layer, x, ctx, k)``
        runs the whole layer instead of the usual sublayers (one part a layer); ``around(run, x, ctx, k)`` wraps the
        layer (parts later in order outside); ``add(x, out, slot, normed)`` makes sublayer ``slot``'s residual add
        (``normed``: its first norm's output)."""
        return None


def register(cls: type[Part]) -> type[Part]:
    """Make a part class available under its ``key``."""
    if cls.key in _REGISTRY and _REGISTRY[cls.key] is not cls:
        raise ValueError(f"two parts are registered under {cls.key!r}")
    _REGISTRY[cls.key] = cls
    _VERSION[0] += 1
    return cls


def unregister(key: str) -> None:
    """Remove a part registered under ``key`` (a user's own, registered for a while)."""
    if _REGISTRY.pop(key, None) is not None:
        _VERSION[0] += 1


def registry_version() -> int:
    """Changes whenever a part is registered (schema caches its generated models by it)."""
    return _VERSION[0]


def registry() -> dict[str, type[Part]]:
    """Every registered part by its key, the shipped ones first imported."""
    for name in MODULES:
        importlib.import_module(f"{__name__}.{name}")
    return _REGISTRY


def ordered(parts, phase: str = "") -> list[Part]:
    """``parts`` in the order their terms and modules come (``phase`` "input": by ``input_order`` where set)."""

    def rank(p):
        return p.input_order if phase == "input" and p.input_order is not None else p.order

    return sorted(parts, key=rank)


def module_name(part: Part) -> str:
    return part.prefix or part.key
