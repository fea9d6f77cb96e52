"""The Funnel Transformer's encoder (Dai et al. 2020, "Funnel-Transformer: Filtering out Sequential Redundancy for
Efficient Language Processing", §2.2 and §2.3; transformers' FunnelEncoder and FunnelDecoder), the spec's
``funnel_encoder``. The model's own layers are its decoder, at the sequence's full length; beside them:

- the encoder's blocks of layers (block_sizes), each at its own length: block 0 over the s tokens, each later block
  over its input mean-pooled by 2, the first position apart (separate_cls, truncate_seq: ⌈L / 2⌉ of L, as
  blocks/rel_shift.py's ``pooled_length``; transformers pools only an input longer than 2). Its first layer
  (pool_q_only) pools the queries alone: its attention reads the previous length's keys and values, and its FFN,
  norms and residual adds run at the pooled length (``RelShiftAttention.pooled``);
- the decoder's input: the last block's output repeated back to s positions (upsample, the first position apart) plus
  the first block's output, an add a position.

Every layer is the model's layer (its relative-shift attention, FFN and post-norms), with its own parameters; with
block_repeats (``repeats``) each layer of a block runs that many times in a row, its parameters stored once
(Term.stored) and its work charged at every run, the first run of a pooled block's first layer alone pooling. Per token
of the sequence, a block's work over L positions is L / s of a position's (Term.positions); the encoder's terms are
model-level components (``encoder.…``), its products the whole square in every view.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

from ..blocks.rel_shift import pooled_length
from ..model.norms import norm_terms
from ..model.schema import Positive, SpecError
from ..model.stacks import Stack
from ..model.terms import RESIDUAL_ADDS, Emitter
from . import Part, register

PREFIX = "encoder."


def _pooled(attn):
    """A pooled block's first layer's attention, its queries pooled: set here alone (a spec cannot state it)."""
    return replace(attn, pooled=True)


@register
@dataclass(frozen=True)
class FunnelEncoder(Part):
    """The spec's ``funnel_encoder``: blocks of layers at lengths halved from block to block, before the model's own
    layers (the decoder)."""

    key = "funnel_encoder"
    prefix = "encoder"  # its modules' name: its terms' (encoder.attn.q, …)
    order = 15
    summary = "the Funnel Transformer's encoder: blocks of layers, each over its input pooled by 2 (Dai et al. 2020)"

    blocks: list[Positive]  # block_sizes: layers of each block
    # block_repeats: each layer of a block run this many times in a row with its own parameters (default 1); the
    # first run of a pooled block's first layer pools, its later runs are over the pooled length
    repeats: list[Positive] | None = None
    length: Positive | None = None  # the sequence's length a training plan sizes the blocks' activations for

    def sized(self, positions: int) -> FunnelEncoder:
        return self if self.length else replace(self, length=positions)

    def stacks(self, model) -> tuple[tuple[object, int, int, int], ...]:
        """Each block's layers over its length, as a training step keeps their activations; the first layer of a
        pooled block over its keys' length, the longer (its queries', FFN's and norms' are half of it: an upper
        bound)."""
        if not self.length:
            return ()
        attn, ffn = self._layers(model)
        out = []
        for b, (n, m) in enumerate(self.lengths(self.length)):
            plain = self.runs(b) - (m != n)
            if m != n:
                out.append((Stack(model.d_model, 1, _pooled(attn), ffn, mask="bidirectional").resolve(model), n, 0, 0))
            if plain:
                out.append((Stack(model.d_model, plain, attn, ffn, mask="bidirectional").resolve(model), m, 0, 0))
        return tuple(out)

    def runs(self, b: int) -> int:
        """Layers block b runs: each of its layers as many times as it repeats."""
        return self.blocks[b] * (self.repeats[b] if self.repeats else 1)

    @property
    def count_note(self) -> str:
        each = [f"{n}×{r}" if r != 1 else f"{n}" for n, r in zip(self.blocks, self.repeats or [1] * len(self.blocks))]
        return f"encoder blocks of {', '.join(each)} layers, each over its input pooled by 2"

    def check(self, spec) -> None:
        if not self.blocks:
            raise SpecError(("funnel_encoder", "blocks"), "the encoder has at least one block")
        if self.repeats is not None and len(self.repeats) != len(self.blocks):
            raise SpecError(("funnel_encoder", "repeats"), f"one repeat count a block: {len(self.blocks)}, not {len(self.repeats)}")
        if spec.attention.kind != "rel_shift":
            raise SpecError(("funnel_encoder",), "the Funnel encoder's layers are the model's, of relative-shift attention")

    def lengths(self, seq_len: int) -> list[tuple[int, int]]:
        """Each block's (input length, length): transformers pools a block's input only where it is longer than 2
        (FunnelEncoder.forward: pooling_flag)."""
        out, n = [], seq_len
        for b in range(len(self.blocks)):
            m = pooled_length(n) if b else n
            out.append((n, m))
            n = m
        return out

    def _layers(self, model):
        """The model's layer blocks: the attention and the FFN every encoder layer has."""
        layer = model.layers[0]
        return layer.attention, layer.ffn

    def input_terms(self, e, model, seq_len: int) -> None:
        attn, ffn = self._layers(model)
        d, s = model.d_model, seq_len
        out = []
        for b, (n, m) in enumerate(self.lengths(s)):
            plain, stored = self.runs(b), self.blocks[b]
            if m != n:  # the first layer's queries pooled: its attention over the n keys, the rest of it over m
                plain, stored = plain - 1, stored - 1
                inner = Stack(d, 1, _pooled(attn), ffn, mask="bidirectional").resolve(model)
                layer = inner.layers[0]
                keys, rows = Emitter("layers", (0, 1)), Emitter("layers", (0, 1))
                norm_terms(rows, inner, layer)
                keys.slot, rows.slot = "attention", "ffn"
                layer.attention.terms(keys, inner, n)
                layer.ffn.terms(rows, inner, m)
                rows.slot = ""
                rows.op("residual", RESIDUAL_ADDS * d)
                out += [self._placed(t, Fraction(n, s)) for t in keys.out]
                out += [self._placed(t, Fraction(m, s)) for t in rows.out]
            if plain:
                terms = Stack(d, plain, attn, ffn, mask="bidirectional").terms(model, PREFIX, m, Fraction(m, s))
                # a repeated layer's parameters stored once, its work charged at every run (model/shared.py's Term.stored)
                out += [replace(t, stored=t.count // plain * stored) if t.numel and stored != plain else t for t in terms]
        # the decoder's input: the last block's output repeated to every position, plus the first block's output
        up = Emitter("layers")
        up.op("decoder.upsample", d)
        out += [replace(t, layers=None) for t in up.out]
        e.out.extend(out)

    @staticmethod
    def _placed(t, scale: Fraction):
        """A term of a layer of the encoder as a model-level one, over ``scale`` positions a token (as Stack.terms)."""
        return replace(
            t,
            name=PREFIX + t.name,
            component=PREFIX + t.component,
            layers=None,
            positions=scale * t.positions,
            select="full" if t.role == "core" and t.select != "pairs" else t.select,
        )

    def model_module(self, model):
        return _module()(self, model)


@cache
def _module():
    import torch
    from torch import nn

    from ..blocks._torch import make_norm

    class Layer(nn.Module):
        """One encoder layer: its attention, a norm on the residual sum at the queries' length, its FFN and a norm."""

        def __init__(self, model, attn, ffn):
            super().__init__()
            d = model.d_model
            self.attn = attn.torch_module(model, False)
            self.ffn = ffn.torch_module(model, False)
            self.norms = nn.ModuleList([make_norm(model.norm, d), make_norm(model.norm, d)])

        def forward(self, x: torch.Tensor, pooled: bool) -> torch.Tensor:
            h = self.norms[0](self.attn.pool(x, pooled) + self.attn(x, pooled))
            return self.norms[1](h + self.ffn(h))

    class Encoder(nn.Module):
        """``enter``: the embeddings through every block, the decoder's input returned."""

        def __init__(self, spec: FunnelEncoder, model):
            super().__init__()
            attn, ffn = spec._layers(model)
            pooled = _pooled(attn)
            inner = Stack(model.d_model, 1, attn, ffn, mask="bidirectional").resolve(model)
            self.layers = nn.ModuleList()
            for b, size in enumerate(spec.blocks):
                for i in range(size):
                    self.layers.append(Layer(inner, pooled if b and not i else attn, ffn))
            self.blocks = spec.blocks
            self.repeats = spec.repeats or [1] * len(spec.blocks)

        def enter(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            s = x.shape[1]
            hidden, first, k = x, None, 0
            for b, (size, repeats) in enumerate(zip(self.blocks, self.repeats)):
                for i in range(size):  # each layer run ``repeats`` times in a row; the first run of the first pools
                    for r in range(repeats):
                        hidden = self.layers[k](hidden, bool(b) and not i and not r)
                    k += 1
                if first is None:
                    first = hidden
            stride = 2 ** (len(self.blocks) - 1)  # upsample: the first position apart, each other repeated
            if stride > 1:
                rest = torch.repeat_interleave(hidden[:, 1:], stride, dim=1)
                rest = nn.functional.pad(rest, (0, 0, 0, stride - 1))[:, : s - 1]
                hidden = torch.cat([hidden[:, :1], rest], dim=1)
            return hidden + first

    return Encoder
