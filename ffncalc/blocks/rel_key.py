"""Multi-head attention with relative-position keys (Shaw et al. 2018, "Self-Attention with Relative Position
Representations", §3.1), as transformers' SpeechT5Attention computes it in SpeechT5's encoder: a table of 2·D rows of
head_dim (SpeechT5RelativePositionalEncoding.pe_k, held once by the encoder: parts/encoder.py relative_keys), the row of
each query-key pair's distance clipped to [−D, D), and each query multiplied by every key's row: a second product of
the scores' shape, S keys a query in every head, added to QKᵀ before the softmax.

No fused kernel runs it: the eager module's saved tensors are what training keeps. SpeechT5's encoder gathers the
table's rows of every pair once (SpeechT5Encoder: position_bias = embed_positions(hidden_states)) and hands the same
tensor to every layer: the encoder's, not a layer's."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive, SpecError
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

    def check(self, d_model: int) -> None:
        super().check(d_model)
        for name in ("gate", "sinks", "window", "chunk", "kv_shared", "k_eq_v", "v_norm", "sub_norm"):
            if getattr(self, name) not in (None, False):
                raise SpecError((name,), f"{name} is not an option of relative-key attention")
        if self.n_kv_heads not in (None, self.n_heads) or self.qk_norm != "none":
            raise SpecError(("n_kv_heads",), "relative-key attention has one key and value head a query head, without q/k norms")

    def kept_elements(self, model) -> int:
        """As SpeechT5Attention saves them a token: the input (q_proj's, k_proj's and v_proj's), the scaled queries, the
        keys and the values each copied to (B·h, S, hd) by their reshape (bmm's operands; the relative product reads
        the queries' copy), the heads' output copied back to (B, S, d) (out_proj's input): d + 4·h·hd."""
        return super().kept_elements(model)

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        """No fused kernel runs it (one form, flash or not): the softmax's output, 16-bit, h·S² a sequence (bmm's
        operand for AV and the softmax's own; the relative rows are the encoder's, gathered once for every layer)."""
        return 2 * self.n_heads * seq_len * seq_len

    def tensor_parallel(self, module, rank: int, tp: int):
        raise NotImplementedError("relative-key attention: no tensor-parallel form here")

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import torch

    from . import _fused
    from ._torch import MatMul
    from .attention import _module as attention_module

    class RelativeKey(attention_module()):
        """Multi-head attention whose ``attend`` runs SpeechT5Attention's eager arithmetic: the queries scaled by
        hd^−½, queries, keys and values reshaped to (B·h, S, hd), QKᵀ by bmm plus each query against the rows of
        its pairs' clipped distances (``rel_scores``), softmax, AV. The table (``rel_keys``, 2·D rows of head_dim) is
        the encoder's (parts/encoder.py relative_keys): a buffer here, its gathered rows the encoder's tensor, built
        once before its layers, as SpeechT5Encoder builds position_bias."""

        def __init__(self, spec: RelativeKeyAttention, model, causal: bool):
            super().__init__(spec, model, causal)
            self.max_distance = spec.max_distance
            self.register_buffer("rel_keys", torch.randn(2 * spec.max_distance, spec.head_dim))
            self.rel_scores = MatMul()

        def pairs(self, s: int, dtype) -> torch.Tensor:
            """SpeechT5RelativePositionalEncoding: each pair's row, its distance i − j clipped to [−D, D): (S, S, hd);
            the encoder's tensor, shared by its layers (a table to this layer's measurement)."""
            key = ("rel_key", s, self.max_distance, dtype, self.rel_keys.data_ptr())
            if key not in _fused._MASKS:
                with torch.no_grad():
                    i = torch.arange(s, device=self.rel_keys.device)
                    distance = (i[:, None] - i[None, :]).clamp(-self.max_distance, self.max_distance - 1)
                    _fused._MASKS[key] = self.rel_keys.to(dtype)[distance + self.max_distance]
            return _fused._MASKS[key]

        def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            b, h, s, hd = q.shape
            q = q * hd**-0.5  # query_states = q_proj(x) · scaling
            q, k, v = (t.reshape(b * h, s, hd) for t in (q, k, v))  # bmm's operands, (B·h, S, hd)
            scores = self.scores(q, k.transpose(1, 2))
            rows = self.pairs(s, q.dtype)
            rel = self.rel_scores(q.transpose(0, 1), rows.transpose(-2, -1)).transpose(0, 1)  # (B·h, S, S)
            scores = scores + rel
            if self.causal and not self.both:
                i = torch.arange(s, device=q.device)
                scores = scores.masked_fill(i[None, :] > i[:, None], float("-inf"))
            return self.values(scores.softmax(-1), v).view(b, h, s, hd)

    return RelativeKey
