"""ProphetNet's predicting streams (Qi et al. 2020, "ProphetNet: Predicting Future N-gram for Sequence-to-Sequence
Pre-training", §2.2: n-stream self-attention), as transformers' ProphetNetDecoder runs them: beside the main stream of
the decoder's T tokens, ``ngram`` predicting streams of T positions each, stream i's inputs its row of a table of
``ngram`` embeddings plus the next position's embedding; all (1 + ngram)·T rows run through every layer's projections,
cross-attention and FFN (the self-attention's products are the block's: blocks/ngram_attention.py), and the head reads
the ngram predicting streams (ProphetNetForConditionalGeneration: lm_head over ngram·T rows), not the main stream.

Per token of the decoder's sequence the layers' work is (1 + ngram) times a row's (``positions``); the head's ngram
times, its extra ngram − 1 here."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.schema import Positive
from . import Part, register


@register
@dataclass(frozen=True)
class NgramStreams(Part):
    key = "ngram_streams"
    order = 15
    summary = "predicting streams of future tokens beside the decoder's main stream (ProphetNet)"

    ngram: Positive = 2  # ProphetNetConfig.ngram: the future tokens predicted, a stream each

    def positions(self, n: int) -> int:
        return (1 + self.ngram) * n

    def input_terms(self, e, model, seq_len: int) -> None:
        # ngram_embeddings: a row a stream, added to its positions' embeddings (one add a feature and row)
        d = model.d_model
        e.term("ngram_embed.weight", "position", (self.ngram, d), elementwise=self.ngram * d)

    def head_terms(self, e, model) -> None:
        """The head over the ngram predicting streams: ngram − 1 more rows a token than the lm_head's own term."""
        if self.ngram > 1:
            v, w = model.head_shape
            macs = (self.ngram - 1) * v * w
            e.term("lm_head.streams", "head", (v, w), numel=0, macs=macs, component="lm_head")
