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
    verify_note = "ngram: no reference module (counted as ProphetNetNgramSelfAttention runs)"

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
        """Multi-head attention's a row (the input, Q, K, V and the heads' output: d + 4·h·hd), the gathered bucket
        scores keeping nothing beyond their indices."""
        return super().kept_elements(model)
