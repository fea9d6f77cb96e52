"""Perceiver IO's masked-LM side of its latents (Jaegle et al. 2021, "Perceiver IO: A General Architecture for
Structured Inputs & Outputs", §2 and §4.1; transformers' PerceiverForMaskedLM), the spec's ``perceiver``. The model's
own layers are the self-attention layers over the latents (PerceiverEncoder.self_attends), at d_latents, over
``latents`` positions whatever the sequence's length; beside them:

- the input: the byte table, the learned positions (PerceiverTextPreprocessor, both ``width`` wide) and the latent
  array (PerceiverEmbeddings.latents, ``latents`` × d_latents);
- the encoder's cross-attention (PerceiverEncoder.cross_attention, a PerceiverLayer): LayerNorms over the latents
  (layernorm1) and over the tokens (layernorm2), queries from the latents (d_latents -> qk), keys and values from the
  tokens (width -> qk, width -> v), each with a bias, ``cross_heads`` heads, the output d_latents wide (v ->
  d_latents); a LayerNorm and an MLP (d_latents -> cross_ff -> d_latents, with biases);
- the decoder (PerceiverBasicDecoder): ``outputs`` learned position queries of ``width`` (max_position_embeddings:
  the decoder reads every one of them whatever the sequence's length, its logits ``outputs`` rows), one
  cross-attention layer of their own into the latents (queries width -> decoder_qk, keys d_latents -> decoder_qk,
  values d_latents -> width, the output width -> width, ``decoder_heads`` heads, no query residual), its LayerNorm and
  MLP (width -> width -> width);
- the head (PerceiverEmbeddingDecoder): the byte table's transpose and a bias of its own, over the decoder's
  ``outputs`` rows.

Per token of a sequence of s tokens, work over L rows is L / s of a position's (Term.positions): the layers over the
latents (``positions``), the encoder's queries over the latents, its keys and values over the tokens, the decoder's
queries over its ``outputs`` rows and its keys and values over the latents, the head over the decoder's rows
(``head_positions``). Cross-attention products are the whole queries × keys rectangle in every view.

Training memory counts the layers' activations over the latents; what the two cross-attention layers keep for backward
(over the bytes, the latents and the decoder's queries) is not counted yet.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS, Activation
from . import Part, register

PREFIX = "perceiver."  # its terms' names: its reference module's, under the part's key


@register
@dataclass(frozen=True)
class Perceiver(Part):
    """The spec's ``perceiver``: the latents, the encoder's cross-attention, the decoder's queries and its
    cross-attention around the model's layers (the self-attention over the latents)."""

    key = "perceiver"
    order = 15
    summary = (
        "Perceiver IO's latent array, its cross-attention from the tokens and its decoder's position queries (Jaegle et al. 2021)"
    )

    latents: Positive  # num_latents: the positions the layers run over
    width: Positive  # d_model: the tokens' width (the byte table's, the positions', the decoder's queries')
    outputs: Positive  # the decoder's queries (max_position_embeddings), its logits' rows
    cross_heads: Positive  # num_cross_attention_heads
    cross_qk: Positive  # the encoder cross-attention's query and key channels
    cross_v: Positive  # its value channels
    cross_ff: Positive  # its MLP's width (cross_attention_widening_factor × d_latents)
    decoder_heads: Positive = 8
    decoder_qk: Positive = 256  # PerceiverForMaskedLM: qk_channels 8 * 32
    activation: Activation = "gelu"

    @property
    def count_note(self) -> str:
        return (
            f"the layers over {self.latents} latents whatever the sequence's length; the decoder and the head over its "
            f"{self.outputs} position queries; training memory without the cross-attentions' activations"
        )

    def check(self, spec) -> None:
        for name, value, heads in (
            ("cross_qk", self.cross_qk, self.cross_heads),
            ("cross_v", self.cross_v, self.cross_heads),
            ("decoder_qk", self.decoder_qk, self.decoder_heads),
            ("width", self.width, self.decoder_heads),
        ):
            if value % heads:
                raise SpecError(("perceiver", name), f"{value} channels do not split into {heads} heads")

    def positions(self, n: int) -> int:
        return self.latents

    def table(self, shape: tuple[int, int]) -> tuple[int, int]:
        return (shape[0], self.width)

    def input_width(self, width: int) -> int:
        return self.width

    def head_width(self, width: int) -> int:
        return self.width

    def head_positions(self, seq_len: int, scale: Fraction) -> Fraction:
        return scale * Fraction(self.outputs, seq_len)

    def input_terms(self, e, model, seq_len: int) -> None:
        d, s = model.d_model, seq_len
        e.term(f"{PREFIX}latents", "position", (self.latents, d))
        self._layer(
            e,
            model,
            f"{PREFIX}cross",
            Fraction(self.latents, s),
            1,
            s,
            d,
            self.width,
            self.cross_heads,
            self.cross_qk,
            self.cross_v,
            self.cross_ff,
        )

    def sequence_terms(self, e, model, seq_len: int) -> None:
        d, w, s = model.d_model, self.width, seq_len
        e.term(f"{PREFIX}decoder.queries", "position", (self.outputs, w))
        self._layer(
            e,
            model,
            f"{PREFIX}decoder",
            Fraction(self.outputs, s),
            Fraction(self.latents, s),
            self.latents,
            w,
            d,
            self.decoder_heads,
            self.decoder_qk,
            w,
            w,
        )

    def _layer(
        self, e, model, name: str, queries, kv, keys: int, q_dim: int, kv_dim: int, heads: int, qk: int, v: int, ff: int
    ) -> None:
        """A PerceiverLayer with is_cross_attention: queries of q_dim on rows ``queries`` times the tokens, keys and
        values of kv_dim on rows ``kv`` times them, each query meeting ``keys`` keys."""
        norm = model.norm
        start = len(e.out)
        # layernorm1 (queries), layernorm2 (keys' and values' input), the MLP's layernorm
        e.term(f"{name}.norms", "norm", (q_dim,), 2, numel=q_dim * norm.params_per_feature, elementwise=2 * norm.ops(q_dim))
        e.term(
            f"{name}.norms_kv",
            "norm",
            (kv_dim,),
            1,
            numel=kv_dim * norm.params_per_feature,
            elementwise=norm.ops(kv_dim),
            component=f"{name}.norms",
        )
        e.linear(f"{name}.attn.q", q_dim, qk, True, 1)
        e.linear(f"{name}.attn.k", kv_dim, qk, True, 1)
        e.linear(f"{name}.attn.v", kv_dim, v, True, 1)
        e.term(f"{name}.attn.scores", "core", (heads, keys, qk // heads), 1, numel=0, macs=keys * qk, select="full")
        e.op(f"{name}.attn.softmax", SOFTMAX_OPS * heads * keys, 1, scores=heads * keys)
        e.term(f"{name}.attn.values", "core", (heads, keys, v // heads), 1, numel=0, macs=keys * v, select="full")
        e.linear(f"{name}.attn.o", v, q_dim, True, 1)
        e.linear(f"{name}.ffn.up", q_dim, ff, True, 1)
        e.op(f"{name}.ffn.act", ff * ACTIVATION_OPS[self.activation], 1)
        e.linear(f"{name}.ffn.down", ff, q_dim, True, 1)
        e.op(f"{name}.residual", 2 * q_dim, 1)
        on_kv = {f"{name}.norms_kv", f"{name}.attn.k.weight", f"{name}.attn.k.bias", f"{name}.attn.v.weight", f"{name}.attn.v.bias"}
        e.out[start:] = [replace(t, positions=kv if t.name in on_kv else queries, layers=None) for t in e.out[start:]]

    def embed_module(self, model):
        from torch import nn

        return nn.Embedding(model.vocab_size, self.width)  # the byte table, d_model (``width``) wide

    def model_module(self, model):
        return _module()(self, model)


@cache
def _module():
    import math

    import torch
    from torch import nn

    from ..blocks._torch import ACTIVATIONS, Linear, MatMul, make_norm

    class Cross(nn.Module):
        """A PerceiverLayer with is_cross_attention: queries of q_dim read keys and values of kv_dim."""

        def __init__(self, norm, act, q_dim, kv_dim, heads, qk, v, ff):
            super().__init__()
            self.heads, self.qk, self.v, self.act = heads, qk, v, ACTIVATIONS[act]
            self.norms = nn.ModuleList([make_norm(norm, q_dim), make_norm(norm, q_dim)])  # layernorm1, the MLP's
            self.norms_kv = make_norm(norm, kv_dim)  # layernorm2
            self.attn = nn.Module()
            self.attn.q, self.attn.k, self.attn.v = Linear(q_dim, qk), Linear(kv_dim, qk), Linear(kv_dim, v)
            self.attn.o = Linear(v, q_dim)
            self.attn.scores, self.attn.values = MatMul(), MatMul()
            self.ffn = nn.Module()
            self.ffn.up, self.ffn.down = Linear(q_dim, ff), Linear(ff, q_dim)

        def forward(self, queries: torch.Tensor, inputs: torch.Tensor, residual: bool) -> torch.Tensor:
            b, n, m, h = queries.shape[0], queries.shape[1], inputs.shape[1], self.heads
            x, kv = self.norms[0](queries), self.norms_kv(inputs)
            q = self.attn.q(x).view(b, n, h, self.qk // h).transpose(1, 2)
            k = self.attn.k(kv).view(b, m, h, self.qk // h).transpose(1, 2)
            v = self.attn.v(kv).view(b, m, h, self.v // h).transpose(1, 2)
            probs = (self.attn.scores(q, k.transpose(-2, -1)) / math.sqrt(self.qk // h)).softmax(-1)
            out = self.attn.o(self.attn.values(probs, v).transpose(1, 2).reshape(b, n, self.v))
            if residual:  # use_query_residual: the encoder's; the decoder's queries are positions, not added
                out = out + queries
            return out + self.ffn.down(self.act(self.ffn.up(self.norms[1](out))))

    class PerceiverModule(nn.Module):
        """``enter``: the tokens' embeddings cross-attended into the latents; ``collapse``: the decoder's queries
        cross-attending the latents, its rows the head's (ctx["rows"])."""

        def __init__(self, spec: Perceiver, model):
            super().__init__()
            d, w, act = model.d_model, spec.width, spec.activation
            self.latents = nn.Parameter(torch.empty(spec.latents, d))
            self.cross = Cross(model.norm, act, d, w, spec.cross_heads, spec.cross_qk, spec.cross_v, spec.cross_ff)
            self.decoder = Cross(model.norm, act, w, d, spec.decoder_heads, spec.decoder_qk, w, w)
            self.decoder.queries = nn.Parameter(torch.empty(spec.outputs, w))

        def enter(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            return self.cross(self.latents.expand(x.shape[0], -1, -1), x, True)

        def collapse(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            ctx["rows"] = self.decoder.queries.shape[0]
            return self.decoder(self.decoder.queries.expand(x.shape[0], -1, -1), x, False)

    return PerceiverModule
