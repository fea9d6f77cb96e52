"""Sliding-window attention in overlapping chunks (Beltagy et al. 2020, "Longformer: The Long-Document Transformer",
§3.1 and §3.2 "Implementation"), as transformers' LongformerSelfAttention and LEDEncoderSelfAttention compute it: each
query meets the keys within one_sided = window / 2 positions either side of it (2·one_sided + 1 keys), over a
sequence its model pads to whole windows (LEDEncoder._pad_to_window_size).

The products are those the chunked kernel executes (``_sliding_chunks_query_key_matmul`` and
``_sliding_chunks_matmul_attn_probs_value``), in every view (``select`` "pairs"), over a padded sequence of L
positions and w = one_sided:

- QKᵀ: L / w − 1 overlapping chunks of 2w queries, each against its chunk's 2w keys: 2(L − w) query rows of 2w keys;
- AV: each block of w queries against the 3w values of its block and the blocks either side: L rows of 3w keys.

The padding mask goes onto the same diagonals through the same chunked product of ones and the mask (L, 1, 1), whose
contraction over a width of 1 torch.einsum runs as a broadcast multiply: elementwise, no multiply-adds.

Each layer also holds query_global, key_global and value_global (d → d, with biases), the projections of the tokens
a global_attention_mask names; with none named (a forward given no such mask) they run on nothing: parameters without
work."""

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
class SlidingChunksAttention(Attention):
    """Multi-head attention over a two-sided window, computed in overlapping chunks, with global projections beside."""

    kind = "sliding_chunks"
    slot = "attention"
    summary = "two-sided sliding-window attention in overlapping chunks, with global q/k/v projections (Longformer, LED)"

    attention_window: Positive = 512  # LEDConfig.attention_window: the window, one half either side of a query (even)
    global_projections: bool = True  # query_global, key_global and value_global beside q, k and v

    @property
    def one_sided(self) -> int:
        return self.attention_window // 2

    def padded(self, seq_len: int) -> int:
        """The sequence padded to whole windows (LEDEncoder._pad_to_window_size)."""
        return -(-seq_len // self.attention_window) * self.attention_window

    def check(self, d_model: int) -> None:
        super().check(d_model)
        if self.attention_window % 2:
            raise SpecError(("attention_window",), f"attention_window {self.attention_window} is not even")
        for name in UNSUPPORTED:
            if getattr(self, name) not in (None, False):
                raise SpecError((name,), f"{name} is not an option of sliding-chunks attention")
        if self.n_kv_heads not in (None, self.n_heads) or self.qk_norm != "none":
            raise SpecError(("n_kv_heads",), "sliding-chunks attention has one key and value head a query head, without q/k norms")

    def describe(self) -> str:
        return f"{self.n_heads} heads × {self.head_dim}, window {self.attention_window:,} in overlapping chunks"

    def terms(self, e, model, seq_len: int) -> None:
        """The projections as multi-head attention's, the global ones without work; QKᵀ, the mask's product, the
        softmax and AV as the chunked kernel executes them over the padded L positions, per token of the seq_len."""
        start = len(e.out)
        super().terms(e, model, seq_len)
        w, length, n, h, hd = self.one_sided, self.padded(seq_len), e.n, self.n_heads, self.head_dim
        rows = Fraction(2 * (length - w), seq_len)  # QKᵀ's query rows, per token
        for i in range(start, len(e.out)):
            t = e.out[i]
            if t.name == "attn.scores":
                e.out[i] = replace(t, shape=(h, 2 * w, hd), macs=n * h * 2 * w * hd, select="pairs", positions=rows)
            elif t.name == "attn.values":
                scale = Fraction(length, seq_len)
                e.out[i] = replace(t, shape=(h, 3 * w, hd), macs=n * h * 3 * w * hd, select="pairs", positions=scale)
            elif t.name == "attn.softmax":  # over each query's 2w + 1 scores
                scores = n * h * (2 * w + 1)
                e.out[i] = replace(t, elementwise=SOFTMAX_OPS * scores, scores=scores, positions=Fraction(length, seq_len))
        # the padding mask's diagonals: ones times the mask over the same chunks, a broadcast multiply (2w a row)
        e.op("attn.mask", n * 2 * w, positions=rows)
        if self.global_projections:  # the projections of the global tokens: none named, no work
            for part in ("q_global", "k_global", "v_global"):
                e.term(f"attn.{part}.weight", "weight", (h * hd, model.d_model), n, heads=h)
                e.term(f"attn.{part}.bias", "bias", (h * hd,), n)

    def cached_tokens(self, tokens: int) -> int:
        return min(tokens, self.attention_window + 1)

    def kept_elements(self, model) -> int:
        """Multi-head attention's (the input, Q, K, V and the heads' output: d + 4·h·hd), the global projections
        keeping nothing where they run on no token."""
        return super().kept_elements(model)

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        """Eager: the softmax output (2 bytes), its dropout mask (1) and the dropout's output (2) for each of the padded
        queries' 2w + 1 scores in every head (Korthikanti et al. 2022 §4.1); flash: an fp32 log-sum-exp a query and
        head."""
        rows = self.n_heads * self.padded(seq_len)
        return 4 * rows if flash else 5 * rows * (2 * self.one_sided + 1)

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import torch
    from torch.nn import functional as F

    from ._torch import Linear
    from .attention import _module as attention_module

    class SlidingChunksModule(attention_module()):
        """Multi-head attention whose ``attend`` runs the chunked kernel's products: QKᵀ in overlapping chunks of 2w,
        the padding mask's product over the same chunks, then each block of w queries against 3w values."""

        def __init__(self, spec: SlidingChunksAttention, model, causal: bool):
            super().__init__(spec, model, causal)
            self.w, self.window = spec.one_sided, None
            if spec.global_projections:
                width = spec.n_heads * spec.head_dim
                self.q_global = Linear(model.d_model, width, bias=True)
                self.k_global = Linear(model.d_model, width, bias=True)
                self.v_global = Linear(model.d_model, width, bias=True)

        def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            b, h, s, hd = q.shape
            w = self.w
            length = -(-s // (2 * w)) * 2 * w
            q, k, v = (F.pad(t, (0, 0, 0, length - s)) for t in (q, k, v))
            n = length // w - 1  # overlapping chunks of 2w, a stride of w

            def chunks(t: torch.Tensor) -> torch.Tensor:  # (B, h, n, 2w, width)
                return t.unfold(2, 2 * w, w).transpose(-1, -2)

            scores = self.scores(chunks(q) * hd**-0.5, chunks(k).transpose(-1, -2))  # (B, h, n, 2w, 2w)
            pad = torch.zeros(b, 1, length, 1, dtype=q.dtype, device=q.device)
            pad[:, :, s:] = torch.finfo(q.dtype).min  # the padding's keys
            masks = torch.ones_like(chunks(pad)) * chunks(pad).transpose(-1, -2)  # (B, 1, n, 2w, 2w): a broadcast multiply
            full = torch.full((b, h, length, length), float("-inf"), dtype=q.dtype, device=q.device)
            for c in range(n):
                span = slice(c * w, c * w + 2 * w)
                full[:, :, span, span] = scores[:, :, c] + masks[:, :, c]
            i = torch.arange(length, device=q.device)
            full = full.masked_fill((i[:, None] - i[None, :]).abs() > w, float("-inf")).softmax(dim=-1)
            # each block of w queries against the 3w keys of its block and those either side (zeros past either end)
            band = F.pad(full, (w, w)).view(b, h, length // w, w, length + 2 * w)
            probs = torch.stack([band[:, :, j, :, j * w : j * w + 3 * w] for j in range(length // w)], dim=2)
            values = F.pad(v, (0, 0, w, w)).unfold(2, 3 * w, w).transpose(-1, -2)  # (B, h, L / w, 3w, hd)
            return self.values(probs, values).reshape(b, h, length, hd)[:, :, :s]

    return SlidingChunksModule
