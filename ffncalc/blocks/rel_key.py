"""Multi-head attention with relative-position keys (Shaw et al. 2018, "Self-Attention with Relative Position
Representations", §3.1), as transformers' SpeechT5Attention computes it in SpeechT5's encoder: a table of 2·D rows of
head_dim (SpeechT5RelativePositionalEncoding.pe_k, held once by the encoder: parts/encoder.py relative_keys), the row of
each query-key pair's distance clipped to [−D, D), and each query multiplied by every key's row: a second product of
the scores' shape, S keys a query in every head, added to QKᵀ before the softmax."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.schema import Positive
from . import register
from .attention import Attention


@register
@dataclass(frozen=True)
class RelativeKeyAttention(Attention):
    """Multi-head attention whose scores add each query's product with its pairs' relative-position rows."""

    kind = "rel_key"
    slot = "attention"
    summary = "attention with relative-position keys, a query times every pair's distance row (SpeechT5's encoder)"

    max_distance: Positive = 160  # encoder_max_relative_position: distances clipped to [−D, D)

    def terms(self, e, model, seq_len: int) -> None:
        super().terms(e, model, seq_len)
        n, h, hd = e.n, self.n_heads, self.head_dim
        # matmul(q (S, h, hd), pe_k[pairs]ᵀ (S, hd, S)): S keys a query in every head, as QKᵀ
        e.term("attn.rel_scores", "core", (h, seq_len, hd), n, numel=0, macs=n * h * seq_len * hd)
        e.op("attn.rel_scores.add", n * h * seq_len)

    def kept_elements(self, model) -> int:
        """Multi-head attention's (d + 4·h·hd): the relative rows are gathered from the table, kept by index."""
        return super().kept_elements(model)
