"""Stacks of layers. A model's own layers are its main stack; a stack beside them (``Stack``) has its own width,
depth and blocks, its own positions and its own attention mask: BLT's local encoder, global transformer and patcher
(parts/latent.py) today, an encoder, a vision or audio tower next. A part holds such stacks and says where their work
runs; a stack resolves into a ``Model`` of its own (no table, no head), whose runs of identical layers are counted
exactly as the main stack's (``run_terms``).

Mask: ``causal``, each query meets the keys up to its own (the causal view counts the triangle); ``bidirectional``,
every query meets every key, in every view (``Term.select`` "full"), or within its window ("both").
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Annotated, Literal

from .norms import norm_terms
from .schema import NonNegative, Positive, Slot, SpecError, StackLayers
from .spec import Norm, check_block
from .terms import RESIDUAL_ADDS, Emitter, Term

Mixer = Annotated[object, Slot("attention", default="mha")]
FFN = Annotated[object, Slot("ffn")]
Mask = Literal["causal", "bidirectional"]
StackPositions = Literal["learned", "rotary", "alibi", "sinusoidal", "none"]


def run_terms(e: Emitter, model, layer, positions: int) -> None:
    """A run of ``e.n`` identical layers of ``model`` over ``positions`` positions: the layer's norms, its blocks in
    forward order, the parts' terms in a layer and the two residual adds."""
    # a layer that runs an earlier one's parameters again stores none of its tensors (model/reuse.py)
    reused = (False, 0) if layer.reuse else None
    e.shared = reused
    norm_terms(e, model, layer)
    for slot, block in layer.blocks():
        e.slot = slot
        use = layer.shared if slot == "shared" else None  # stored at its first use (model/shared.py)
        e.shared = (use.first, use.uses) if use else reused
        block.terms(e, model, positions)
    e.slot, e.shared = "", reused
    for part in model.parts:
        part.layer_terms(e, model, positions)
    e.op("residual", e.n * RESIDUAL_ADDS * model.d_model)


@dataclass(frozen=True)
class Stack:
    """Layers at a width of their own, each a mixer and an FFN with the model's norms (pre-norm, two a layer)."""

    d_model: Positive
    n_layers: StackLayers  # 0: none (parts/encoder.py, an image source)
    attention: Mixer
    ffn: FFN
    positions: StackPositions | None = None  # default: the model's
    mask: Mask = "causal"
    norm: Norm | None = None  # its norms where they are not the model's (a vision tower's LayerNorms)
    # another FFN in every sparse_step-th layer from the second, layer i where i % sparse_step == 1 (every layer at
    # 1): Switch Transformers' sparse layers (SwitchTransformersStack: is_sparse)
    sparse_ffn: FFN | None = None
    sparse_step: NonNegative = 0
    # the residue of a sparse layer's index where it is not 1: NLLB-MoE's every sparse_step-th layer from the
    # sparse_step-th, (i + 1) % sparse_step == 0 (NllbMoeEncoder), is residue sparse_step - 1
    sparse_phase: NonNegative = 1
    # each layer's window in a bidirectional stack, the keys it meets on each side (|i − j| ≤ W), and the keys after
    # the query where fewer (Moonshine Streaming's per-layer sliding_windows: [16, 4] is 15 and 3): one each a layer
    windows: tuple[Positive, ...] = ()
    aheads: tuple[NonNegative, ...] = ()

    def __post_init__(self) -> None:
        for slot in ("attention", "ffn", "sparse_ffn"):
            if getattr(self, slot) is None:
                continue
            try:
                check_block(getattr(self, slot), self.d_model)
            except SpecError as exc:
                raise exc.within(slot) from None
        for key in ("windows", "aheads"):
            if getattr(self, key) and len(getattr(self, key)) != self.n_layers:
                raise SpecError((key,), f"one for each of the stack's {self.n_layers} layers")
        if self.aheads and not self.windows:
            raise SpecError(("aheads",), "aheads bound the keys after a query within each layer's window: give windows too")

    def sparse(self, i: int) -> bool:
        """Whether layer i runs ``sparse_ffn``."""
        step = self.sparse_step
        return self.sparse_ffn is not None and step > 0 and (step == 1 or i % step == self.sparse_phase)

    def mixer(self, mixer, i: int):
        """Layer i's mixer: with its own window and keys ahead where the stack states them."""
        if not self.windows:
            return mixer
        return replace(mixer, window=self.windows[i], ahead=self.aheads[i] if self.aheads else None)

    def resolve(self, model):
        """The stack as a model of its own: its width and layers, the model's norms, its positions."""
        from .stack import Layer, Model

        mixer = self.attention.resolve(self.d_model)
        dense, sparse = self.ffn.resolve(self.d_model), (self.sparse_ffn or self.ffn).resolve(self.d_model)
        layers = tuple(Layer(self.mixer(mixer, i), sparse if self.sparse(i) else dense) for i in range(self.n_layers))
        return replace(
            Model.bare(self.d_model),
            positions=self.positions or model.positions,
            norm=self.norm or model.norm,
            layers=layers,
        )

    def terms(self, model, prefix: str, seq_len: int, positions: Fraction | int) -> list[Term]:
        """The layers' terms over ``seq_len`` positions, named under ``prefix``, model-level (no layer span), each
        scaled by ``positions`` (the rows it runs over per token of the model's sequence)."""
        inner = self.resolve(model)
        out: list[Term] = []
        for run in inner.runs():
            e = Emitter("layers", run.span)
            run_terms(e, inner, run.layer, seq_len)
            out += e.out
        full = self.mask == "bidirectional"
        return [
            replace(
                t,
                name=prefix + t.name,
                component=prefix + t.component,
                layers=None,
                positions=positions * t.positions,  # a block's own scale kept (blocks/local_attention.py: its padding)
                # a product written as its pairs (block-local attention's) meets them in every view as it is
                select=("both" if t.window else "full") if full and t.role == "core" and t.select != "pairs" else t.select,
            )
            for t in out
        ]
