"""The Byte Latent Transformer's parts beside the model's layers (Pagnoni et al. 2024, "Byte Latent Transformer:
Patches Scale Better Than Tokens"; transformers' BltModel). The model's own layers, final norm and head are BLT's
local decoder over bytes; beside them (``ByteLatent``, the spec's ``byte_latent``):

- hashed n-gram embeddings: ``hash_tables`` tables of ``hash_vocab`` rows at the encoder's width, one lookup in each
  added to every byte's embedding (BltModel.encoder_hash_tok_embedding, one tensor of all the tables);
- the local encoder: its own layers over the bytes, then cross-attention in which each patch's ``cross_k`` rows
  (the max of the patch's byte states, projected d_e -> k·d_e by patch_embedding_projection) attend to the bytes,
  after its last layer or after every one;
- the global transformer: its own layers at its own width over the patches, each patch's k·d_e features projected
  to its width where they differ (token_embedding_projection); no final norm;
- the decoder's patch projection d_g -> k·d (patch_embedding_projection) and a cross-attention before its first
  layer or before every one, each byte attending to the k·n rows of the patches;
- the patcher: a small byte transformer of its own (embedding, layers, final norm, head) whose next-byte entropies
  cut the sequence into patches (BltPatcher).

A cross-attention (BltCrossAttention) normalises its queries and its keys' input (q_norm, k_norm, RMS over the
width), projects q, k, v and o like self-attention without positions, and its output is added twice: to its own
queries' input inside it, and by the caller.

FLOPs: where the patches fall depends on the data (the patcher's entropies). Counted here: every patch
``patch_size`` bytes, the last one shorter, n = ⌈s / patch_size⌉ patches for s bytes (transformers' forward with
``patch_lengths`` given); the patcher runs over every byte, as entropy patching runs it whatever it decides. Per
byte, each part's work over the rows it runs on is scaled by rows / s (Term.positions): the global layers by n / s,
the encoder's cross-attention queries by k·n / s, the decoder's cross-attention keys by k·n / s. Cross-attention
products are the full queries × keys rectangle in every view (the mask keeps each query to its own patch's keys,
which no causal kernel's triangle describes).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Literal

from ..model.schema import NonNegative, Positive, SpecError
from ..model.stacks import Stack
from ..model.terms import SOFTMAX_OPS, Emitter
from . import Part, register


@dataclass(frozen=True)
class Patcher:
    """BltPatcher: a byte transformer with an embedding, its layers, a final norm and an untied head."""

    vocab_size: Positive
    layers: Stack


@register
@dataclass(frozen=True)
class ByteLatent(Part):
    """The spec's ``byte_latent``: BLT's parts beside its local decoder (the model's layers)."""

    key = "byte_latent"
    order = 15
    summary = "the Byte Latent Transformer's hashed embeddings, local encoder, global transformer and patcher"

    encoder: Stack  # the local encoder's layers, at the model's width (its embedding is the model's)
    latent: Stack  # the global transformer's, over patches
    cross_k: Positive = 2  # rows per patch in the cross-attentions (cross_attn_k)
    encoder_cross: Literal["last", "all"] = "last"  # a cross-attention after the encoder's last layer or every one
    decoder_cross: Literal["first", "all"] = "all"  # before the decoder's first layer or every one
    hash_tables: NonNegative = 0  # hashed n-gram tables: hash functions × byte-group sizes
    hash_vocab: NonNegative = 0  # rows of each
    patcher: Patcher | None = None
    patch_size: Positive = 4  # the FLOP convention's bytes per patch

    @property
    def count_note(self) -> str:
        return (
            f"FLOPs with patches of a fixed {self.patch_size} bytes (the last shorter; BLT's entropy patching "
            "places them by the data)"
            + (", the patcher over every byte" if self.patcher else "")
            + "; cross-attention products over the whole patches × bytes rectangle"
        )

    def patches(self, seq_len: int) -> int:
        return -(-seq_len // self.patch_size)

    def input_terms(self, e, model, seq_len: int) -> None:
        d, k, s = model.d_model, self.cross_k, seq_len
        n = self.patches(s)
        per_patch, per_row = Fraction(n, s), Fraction(k * n, s)
        emb, layers, head = Emitter("embedding"), [], Emitter("head")
        if self.hash_tables:  # a lookup per table, as the token embedding (count.py); each added to the byte's
            rows = self.hash_tables * self.hash_vocab
            emb.term("hash_embed.weight", "token", (rows, d), macs=rows * d, elementwise=self.hash_tables * d)
        if self.patcher is not None:
            p = self.patcher
            w = p.layers.d_model
            emb.term("patcher.embed.weight", "token", (p.vocab_size, w), macs=p.vocab_size * w)
            layers += p.layers.terms(model, "patcher.", s, 1)
            fin = Emitter("layers")
            fin.norm("patcher.final_norm", model.norm, w, 1)
            layers += [replace(t, layers=None) for t in fin.out]
            head.term("patcher.lm_head.weight", "head", (p.vocab_size, w), macs=p.vocab_size * w)
        layers += self.encoder.terms(model, "encoder.", s, 1)
        x = Emitter("layers")
        uses = self.encoder.n_layers if self.encoder_cross == "all" else 1
        # each use: the patch's max over its bytes (one comparison per element), projected d -> k·d
        x.op("encoder.patch_reduce", uses * d, positions=1)
        x.term("encoder.patch_proj.weight", "weight", (k * d, d), macs=uses * d * k * d, positions=per_patch)
        self._cross(x, model, "encoder.cross", self.encoder.attention.resolve(d), d, uses, s, per_row, 1)
        g = self.latent.d_model
        if k * d != g:
            x.term("latent.embed_proj.weight", "weight", (g, k * d), macs=k * d * g, positions=per_patch)
        layers += x.out
        layers += self.latent.terms(model, "latent.", n, per_patch)
        y = Emitter("layers")
        y.term("decoder.patch_proj.weight", "weight", (k * d, g), macs=g * k * d, positions=per_patch)
        uses = model.n_layers if self.decoder_cross == "all" else 1
        self._cross(y, model, "decoder.cross", model.layers[0].attention, d, uses, k * n, 1, per_row)
        layers += y.out
        e.out.extend(emb.out + [replace(t, layers=None) for t in layers] + head.out)

    @staticmethod
    def _cross(e, model, name: str, attn, d: int, uses: int, keys: int, queries, kv) -> None:
        """``uses`` cross-attentions of width d with ``attn``'s heads (head_dim d / heads): queries and keys on
        rows that are ``queries`` and ``kv`` times the bytes; ``keys`` rows attended by each query."""
        h, g = attn.n_heads, attn.kv_heads
        hd = d // h
        e.norm(f"{name}.q_norm", model.norm, d, uses)
        e.out[-1] = replace(e.out[-1], positions=queries)
        e.norm(f"{name}.k_norm", model.norm, d, uses)
        e.out[-1] = replace(e.out[-1], positions=kv)
        e.term(f"{name}.q.weight", "weight", (h * hd, d), uses, macs=uses * d * h * hd, heads=h, positions=queries)
        for part in ("k", "v"):
            e.term(f"{name}.{part}.weight", "weight", (g * hd, d), uses, macs=uses * d * g * hd, heads=g, positions=kv)
        for part in ("scores", "values"):
            e.term(f"{name}.{part}", "core", (h, keys, hd), uses, numel=0, macs=uses * h * keys * hd, positions=queries, select="full")
        e.op(f"{name}.softmax", SOFTMAX_OPS * uses * h * keys, scores=uses * h * keys, positions=queries)
        e.term(f"{name}.o.weight", "weight", (d, h * hd), uses, macs=uses * h * hd * d, positions=queries)
        e.op(f"{name}.residual", 2 * uses * d, positions=queries)  # inside the module and by its caller

    def check(self, spec) -> None:
        if self.encoder.d_model != spec.d_model:
            raise SpecError(
                ("byte_latent", "encoder", "d_model"), f"the local encoder's width is the embedding's, d_model {spec.d_model}"
            )

    def model_module(self, model):
        raise NotImplementedError("the Byte Latent Transformer's parts have no reference torch modules")
