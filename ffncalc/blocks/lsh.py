"""Reformer's attention (Kitaev et al. 2020, "Reformer: The Efficient Transformer"; transformers' LSHSelfAttention
and LocalSelfAttention): chunked local attention, and LSH attention, whose queries are its keys (one shared
projection), hashed into buckets by random rotations and sorted, then attended chunk by chunk.

Both attend over chunks of ``chunk_length`` positions: each chunk's queries meet the keys of their own chunk and of
``chunks_before`` chunks before and ``chunks_after`` after it (wrapping around at the ends), K = chunk_length ·
(1 + chunks_before + chunks_after) keys a query, every product computed (the executed and the useful view alike). A
sequence no longer than one chunk is attended whole (the full square, as any softmax attention). Products per layer
and position, as LSHSelfAttention computes them (modeling_reformer.py: _hash_vectors, _attend):
  hashing  einsum('bmtd,mdhr->bmhtr') of each head's query-key vector with num_hashes × rotation/2 random rotations:
           heads · head_dim · num_hashes · rotation/2 multiply-adds (rotation: num_buckets, or the sum of its
           factors);
  QKᵀ, AV  for each of num_hashes rounds, heads · K · head_dim each.
num_buckets left unset is set from the sequence as _set_num_buckets does: 2^⌊log₂(2·⌊s / chunk_length⌋)⌋, factored in
two (2^⌊k/2⌋ and 2^(k - ⌊k/2⌋)) above 2·max(⌊√(max_position_embeddings / chunk_length)⌋, chunk_length).

Chunked products are counted with one key (shape heads·rounds × 1 × K·head_dim): the kernel computes them all, so
the useful view counts what the executed one does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

from ..model.schema import NonNegative, Positive, SpecError
from ..model.terms import SOFTMAX_OPS
from . import Block, register
from .attention import attention_core


@dataclass(frozen=True)
class _Chunked(Block):
    n_heads: Positive
    head_dim: Positive
    chunk_length: Positive
    chunks_before: NonNegative = 1
    chunks_after: NonNegative = 0

    @property
    def keys(self) -> int:
        """Keys a query of a chunk meets."""
        return self.chunk_length * (1 + self.chunks_before + self.chunks_after)

    def head_count(self) -> int:
        return self.n_heads

    def describe(self) -> str:
        return (
            f"{self.n_heads} heads × {self.head_dim}, chunks of {self.chunk_length} "
            f"(+{self.chunks_before} before, +{self.chunks_after} after)"
        )

    def facts(self) -> dict[str, object]:
        return {"heads": f"{self.n_heads}/{self.n_heads}"}

    def _products(self, e, model, seq_len: int, rounds: int) -> None:
        h, hd, n = self.n_heads, self.head_dim, e.n
        if seq_len <= self.chunk_length:  # one chunk: the whole sequence at once
            attention_core(e, model, h, hd, hd, seq_len, False)
            return
        k = self.keys
        e.term("attn.scores", "core", (h * rounds, 1, k * hd), n, numel=0, macs=n * h * rounds * k * hd, grows=False)
        e.op("attn.softmax", n * SOFTMAX_OPS * h * rounds * k, scores=n * h * rounds * k)
        e.term("attn.values", "core", (h * rounds, 1, k * hd), n, numel=0, macs=n * h * rounds * k * hd, grows=False)
        if rounds > 1:  # the rounds' outputs weighted by their softmax normalisers and summed
            e.op("attn.rounds", n * h * rounds * (hd + 2) + n * h * hd)
        e.linear("attn.o", h * hd, model.d_model, False, n)

    def cache_elements(self, model) -> int:
        """Reformer caches each layer's input hidden states (d_model a token) and recomputes keys from them."""
        return model.d_model

    def kept_elements(self, model) -> int:
        """What Reformer's attention keeps a token as its own module runs it (no fused kernel runs it: LSHSelfAttention
        and LocalSelfAttention attend in eager products, and so does the reference module): the input (d); the
        query, the scaled key and the value (3·h·d_h; LSH's query the shared projection's output and its key that
        output length-normalised, whose inverse RMS a head the product keeps: h more); the heads' output
        averaged over the rounds (o's input, h·d_h). What the chunked products keep is ``score_bytes``'s."""
        lsh = self.n_heads if self.kind == "lsh" else 0
        return model.d_model + 4 * self.n_heads * self.head_dim + lsh

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        """What the products over chunks keep a sequence, eager or not (no kernel): a sequence of one chunk the
        softmax's output (2 bytes × h × s²); a longer one, a token, the sort order (int64 a round and head for LSH;
        the positions, one int64, for local attention), the gathered queries (rounds × h·d_h), the keys and values
        of its chunk and its neighbours' (rounds × (1 + before + after) × h·d_h each) and the softmax's output
        (rounds × h × K keys)."""
        h, a = self.n_heads, self.n_heads * self.head_dim
        if seq_len <= self.chunk_length:
            return 2 * h * seq_len * seq_len
        rounds = getattr(self, "num_hashes", 1)
        order = 4 * h * rounds if self.kind == "lsh" else 4
        near = 1 + self.chunks_before + self.chunks_after
        return 2 * seq_len * (order + rounds * a + 2 * rounds * near * a + rounds * h * self.keys)

    def torch_module(self, model, causal: bool):
        return _module()(self, model)


@register
@dataclass(frozen=True)
class LSHAttention(_Chunked):
    """LSH attention: a shared query-key projection (query_key) and a value projection, buckets by random rotations."""

    kind = "lsh"
    slot = "attention"
    summary = "LSH attention: shared query-key projection, hashed buckets attended in chunks (Reformer)"

    num_hashes: Positive = 1
    num_buckets: Positive | list[Positive] | None = None  # None: set from the sequence length (module docstring)
    max_positions: Positive | None = None  # max_position_embeddings, which bounds an unset num_buckets

    def check(self, d_model: int) -> None:
        factors = self.num_buckets if isinstance(self.num_buckets, (list, tuple)) else [self.num_buckets or 2]
        if any(f % 2 for f in factors):
            raise SpecError(("num_buckets",), "buckets come in pairs (a rotation and its negation): even numbers only")

    def rotation(self, seq_len: int, context: int) -> int:
        """Random rotations a hashing round draws per head, times two (num_buckets, or the sum of its factors)."""
        buckets = self.num_buckets
        if buckets is None:
            power = (2 * (seq_len // self.chunk_length)).bit_length() - 1
            limit = 2 * max(int((context // self.chunk_length) ** 0.5), self.chunk_length)
            buckets = 2**power if 2**power <= limit else [2 ** (power // 2), 2 ** (power - power // 2)]
        return sum(buckets) if isinstance(buckets, (list, tuple)) else buckets

    def terms(self, e, model, seq_len: int) -> None:
        d, h, hd, n = model.d_model, self.n_heads, self.head_dim, e.n
        e.linear("attn.qk", d, h * hd, False, n, heads=h)
        e.linear("attn.v", d, h * hd, False, n, heads=h)
        e.op("attn.key_norm", n * 4 * h * hd)  # keys: length-normalised (square, mean, rsqrt, scale) and / √head_dim
        if seq_len > self.chunk_length:
            half = self.rotation(seq_len, self.max_positions or model.context_length) // 2
            e.term(
                "attn.hash",
                "core",
                (h, 1, hd * self.num_hashes * half),
                n,
                numel=0,
                macs=n * h * hd * self.num_hashes * half,
                grows=False,
            )
        self._products(e, model, seq_len, self.num_hashes if seq_len > self.chunk_length else 1)


@register
@dataclass(frozen=True)
class LocalAttention(_Chunked):
    """Chunked local attention: separate query, key and value projections."""

    kind = "local"
    slot = "attention"
    summary = "local attention in chunks, each meeting its neighbours' keys (Reformer)"

    def terms(self, e, model, seq_len: int) -> None:
        d, h, hd, n = model.d_model, self.n_heads, self.head_dim, e.n
        for name in ("q", "k", "v"):
            e.linear(f"attn.{name}", d, h * hd, False, n, heads=h)
        self._products(e, model, seq_len, 1)


@cache
def _module():
    import torch
    from torch import nn

    from ._torch import Linear, MatMul, softmax

    def adjacent(x: torch.Tensor, before: int, after: int) -> torch.Tensor:
        """(…, chunks, L, w) -> (…, chunks, K, w): each chunk with its neighbours', wrapping around."""
        parts = [torch.roll(x, -i, dims=-3) for i in range(-before, after + 1)]
        return torch.cat(parts, dim=-2)

    class ChunkedAttention(nn.Module):
        def __init__(self, spec: _Chunked, model):
            super().__init__()
            d, inner = model.d_model, spec.n_heads * spec.head_dim
            self.spec, self.context = spec, model.context_length
            self.lsh = spec.kind == "lsh"
            if self.lsh:
                self.qk = Linear(d, inner, bias=False)
                self.hash = MatMul()
            else:
                self.q, self.k = Linear(d, inner, bias=False), Linear(d, inner, bias=False)
            self.v = Linear(d, inner, bias=False)
            self.scores, self.values = MatMul(), MatMul()
            self.o = Linear(inner, d, bias=False)

        def _heads(self, x: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            return x.view(b, s, self.spec.n_heads, self.spec.head_dim).transpose(1, 2)  # (B, H, s, hd)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            spec, (b, s, _) = self.spec, x.shape
            h, hd, size = spec.n_heads, spec.head_dim, spec.chunk_length
            v = self._heads(self.v(x))
            if self.lsh:
                q = self._heads(self.qk(x))
                k = q * torch.rsqrt(q.pow(2).mean(-1, keepdim=True) + 1e-6)
            else:
                q, k = self._heads(self.q(x)), self._heads(self.k(x))
            k = k / math.sqrt(hd)
            if s <= size:
                return self.o(self.values(softmax(self.scores(q, k.transpose(-2, -1))), v).transpose(1, 2).reshape(b, s, -1))
            rounds = spec.num_hashes if self.lsh else 1
            if self.lsh:  # buckets: argmax over each round's rotations and their negations, then sorted
                half = spec.rotation(s, spec.max_positions or self.context) // 2
                rotations = torch.randn(h, hd, rounds * half, device=x.device, dtype=x.dtype)
                rotated = self.hash(q, rotations[None]).view(b, h, s, rounds, half)
                buckets = torch.cat([rotated, -rotated], -1).argmax(-1).transpose(-1, -2)  # (B, H, rounds, s)
                order = (buckets * s + torch.arange(s, device=x.device)).flatten(2).argsort(-1) % s
            else:
                order = torch.arange(s, device=x.device).expand(b, h, s)
            idx = order[..., None].expand(-1, -1, -1, hd)
            qs, ks, vs = (t.gather(2, idx).view(b, h, rounds * s // size, size, hd) for t in (q, k, v))
            ks, vs = adjacent(ks, spec.chunks_before, spec.chunks_after), adjacent(vs, spec.chunks_before, spec.chunks_after)
            out = self.values(softmax(self.scores(qs, ks.transpose(-2, -1))), vs).view(b, h, rounds, s, hd)
            unsorted = torch.zeros_like(out).scatter(3, order.view(b, h, rounds, s)[..., None].expand_as(out), out)
            return self.o(unsorted.mean(2).transpose(1, 2).reshape(b, s, -1))

    return ChunkedAttention
