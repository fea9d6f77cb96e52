"""N-stream self-attention (Qi et al. 2020, "ProphetNet", §2.2), as transformers' ProphetNetNgramSelfAttention computes
it over the decoder's (1 + ngram)·T rows (parts/ngram.py: the main stream's T and each predicting stream's T):

- q, k, v and out_proj over every row (biases on each);
- the main stream's queries against its own T keys: T·T pairs (eager: the masked square);
- each predicting stream's queries against the main stream's T keys and its own T: ngram·T·2T pairs;
- relative_pos_embeddings (d → num_buckets × heads, a bias) over every row, gathered into the scores by each query-key
  pair's relative-position bucket (a gather: no multiply-adds);
- AV the same pairs.

The products are those executed, in every view (``select`` "pairs"): (1 + 2·ngram)·T² pairs a head, per token of the
T."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.terms import SOFTMAX_OPS
from . import register
from .attention import Attention

UNSUPPORTED = ("gate", "sinks", "window", "chunk", "kv_shared", "k_eq_v", "v_norm", "sub_norm")


@register
@dataclass(frozen=True)
class NgramAttention(Attention):
    """The main stream's causal self-attention and each predicting stream's over the main stream and itself, with a
    relative-position bucket table projected from every row (ProphetNet)."""

    kind = "ngram"
    slot = "attention"
    summary = "n-stream self-attention: a main stream and predicting streams of future tokens (ProphetNet)"
    verify_note = "ngram: the reference module's rows are the main stream's T, then each predicting stream's T"

    ngram: Positive = 2  # ProphetNetConfig.ngram: the predicting streams
    buckets: Positive = 32  # num_buckets: relative_pos_embeddings' outputs a head

    def check(self, d_model: int) -> None:
        super().check(d_model)
        for name in UNSUPPORTED:
            if getattr(self, name) not in (None, False):
                raise SpecError((name,), f"{name} is not an option of n-stream attention")
        if self.n_kv_heads not in (None, self.n_heads) or self.qk_norm != "none":
            raise SpecError(("n_kv_heads",), "n-stream attention has one key and value head a query head, without q/k norms")

    def describe(self) -> str:
        return f"{self.n_heads} heads × {self.head_dim}, {self.ngram} predicting streams, {self.buckets} buckets"

    def terms(self, e, model, seq_len: int) -> None:
        """Over ``seq_len`` = (1 + ngram)·T rows: the projections and relative_pos_embeddings over every row; QKᵀ, the
        softmax and AV over (1 + 2·ngram)·T² pairs a head, as (1 + 2·ngram)·T keys for each of T queries."""
        start = len(e.out)
        super().terms(e, model, seq_len)
        n, h, hd = e.n, self.n_heads, self.head_dim
        tokens = Fraction(seq_len, 1 + self.ngram)
        keys = int((1 + 2 * self.ngram) * tokens) or 1
        scale = Fraction(tokens * (1 + 2 * self.ngram) * tokens, keys * seq_len)  # the pairs, per row
        for i in range(start, len(e.out)):
            t = e.out[i]
            if t.name in ("attn.scores", "attn.values"):
                e.out[i] = replace(t, shape=(h, keys, hd), macs=n * h * keys * hd, select="pairs", positions=scale)
            elif t.name == "attn.softmax":
                scores = n * h * keys
                e.out[i] = replace(t, elementwise=SOFTMAX_OPS * scores, scores=scores, positions=scale)
        e.linear("attn.rel", model.d_model, self.buckets * h, True, n)

    def kept_elements(self, model) -> int:
        """Multi-head attention's a row (the input, Q as scaled, K, V and the heads' output: d + 4·h·hd) and
        relative_pos_embeddings' output, buckets × heads a row, which the gathers of the bucket scores save."""
        return super().kept_elements(model) + self.buckets * self.n_heads

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        """No fused kernel runs it (one form, flash or not): what the reference module saves, 16-bit, per head, over
        T = seq_len / (1 + ngram) tokens: the main stream's softmax (T² scores), each predicting stream's (T × 2T) and
        the keys and values it reads, the main stream's and its own gathered together (2T rows of head_dim each)."""
        t, n, hd = seq_len // (1 + self.ngram), self.ngram, self.head_dim
        return 2 * self.n_heads * (t * t + n * t * 2 * t + 2 * n * 2 * t * hd)

    def tensor_parallel(self, module, rank: int, tp: int):
        raise NotImplementedError("n-stream attention: no tensor-parallel form here")

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import torch

    from ._fused import _MASKS
    from ._torch import Linear
    from .attention import _module as attention_module

    class Ngram(attention_module()):
        """Multi-head attention whose ``attend`` runs ProphetNetNgramSelfAttention's streams over its input's rows (the
        main stream's T, then each predicting stream's T): the main stream causally over itself, each predicting
        stream over the main stream's keys before it and its own at its position, with relative_pos_embeddings'
        bucket scores gathered into each (buckets by clipped distance: which bucket changes no count)."""

        def __init__(self, spec: NgramAttention, model, causal: bool):
            super().__init__(spec, model, causal)
            self.ngram, self.buckets = spec.ngram, spec.buckets
            self.rel = Linear(model.d_model, spec.buckets * spec.n_heads, bias=True)

        def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            b, h, s, hd = q.shape
            n = self.ngram
            t = s // (1 + n)
            if t * (1 + n) != s:
                raise NotImplementedError(f"{s} rows: not 1 + ngram = {1 + n} streams of equal length")
            key = ("ngram", t, self.buckets, str(q.device))
            if (*key, 0) not in _MASKS:  # the bucket ids and masks, built once, kept with the kernels' mask tables
                i = torch.arange(t, device=q.device)
                dist = (i[:, None] - i[None, :]).clamp(0, self.buckets - 1)
                tables = (
                    dist,
                    torch.cat([dist, dist], dim=1),
                    i[None, :] > i[:, None],  # the main stream: keys after the query masked
                    torch.cat([i[None, :] > i[:, None] - 1, i[None, :] != i[:, None]], dim=1),  # before it; its own
                )
                for j, table in enumerate(tables):
                    _MASKS[(*key, j)] = table
            main_ids, stream_ids, main_mask, stream_mask = (_MASKS[(*key, j)] for j in range(4))
            main_ids, stream_ids = main_ids.expand(b, h, t, t), stream_ids.expand(b, h, t, 2 * t)
            q = q * hd**-0.5
            rel = self.rel(x).view(b, s, h, self.buckets).transpose(1, 2)  # (B, h, s, buckets)
            qs, ks, vs, rs = (z.split(t, dim=2) for z in (q, k, v, rel))
            scores = self.scores(qs[0], ks[0].transpose(-2, -1)) + rs[0].gather(-1, main_ids)
            probs = scores.masked_fill(main_mask, float("-inf")).softmax(dim=-1)
            outs = [self.values(probs, vs[0])]
            for j in range(1, n + 1):
                keys, values = torch.cat([ks[0], ks[j]], dim=2), torch.cat([vs[0], vs[j]], dim=2)
                scores = self.scores(qs[j], keys.transpose(-2, -1)) + rs[j].gather(-1, stream_ids)
                probs = scores.masked_fill(stream_mask, float("-inf")).softmax(dim=-1)
                outs.append(self.values(probs, values))
            return torch.cat(outs, dim=2)

    return Ngram
