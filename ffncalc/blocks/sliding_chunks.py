"""Sliding-window attention in overlapping chunks (Beltagy et al. 2020, "Longformer: The Long-Document Transformer",
§3.1 and §4: the "sliding chunks" form), as transformers instantiates it (transformers 5.23.0,
models/longformer/modeling_longformer.py, ``LongformerSelfAttention`` without global tokens).

Each query meets the keys within w = attention_window / 2 on either side of it (2w + 1 of them). The sequence is
padded to a whole number of attention_window positions (``LongformerModel._pad_to_window_size``: the padding part,
parts/streams.py, scales the layers' work to the padded P), and the kernel computes:

    QKᵀ    the P / w − 1 chunks of 2w positions overlapping by w, each chunk's 2w queries against its 2w keys
           (``_sliding_chunks_query_key_matmul``: einsum "bcxd,bcyd->bcxy"): (P − w) · 4w query-key pairs a head
    AV     the P / w blocks of w queries, each against the 3w values of its own block and the blocks either side
           (``_sliding_chunks_matmul_attn_probs_value``: einsum "bcwd,bcdh->bcwh"): P · 3w pairs a head

Both are what the kernel executes, in every view (``select`` "pairs": a query standing for 2(P − w) / P of the
queries of 2w keys, and every query of 3w values), the pairs outside the band and the padding's being computed and
then masked. The padding's mask is added through the same chunked product with one head of width one, which torch's
einsum runs as an elementwise product (no matmul). The separate projections of global tokens (query_global,
key_global, value_global: d -> d with biases each) are held and idle while no token is global, as in a masked-LM
forward."""

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
    """Multi-head attention over a band of attention_window / 2 keys either side, in overlapping chunks (Longformer)."""

    kind = "sliding_chunks"
    slot = "attention"
    summary = "sliding-window attention in overlapping chunks, with idle global projections (Beltagy et al. 2020, Longformer)"
    verify_note = "sliding_chunks: QKᵀ over P / w − 1 chunks of 2w × 2w and AV over P / w blocks of w × 3w, P padded to whole windows"

    attention_window: Positive = 512  # LongformerConfig.attention_window: the band's keys, w on either side
    global_projections: bool = True  # query_global, key_global, value_global (held, idle without global tokens)

    @property
    def one_side(self) -> int:
        """w: the keys a query meets on either side (LongformerSelfAttention.one_sided_attn_window_size)."""
        return self.attention_window // 2

    def check(self, d_model: int) -> None:
        super().check(d_model)
        for name in UNSUPPORTED:
            if getattr(self, name) not in (None, False, "none"):
                raise SpecError((name,), f"{name} is not an option of Longformer's sliding-chunks attention")
        if self.qk_norm != "none" or self.softplus_gate != "none" or self.kv_heads != self.n_heads:
            raise SpecError(("n_kv_heads",), "Longformer's attention has as many key heads as query heads, and no norms")
        if self.attention_window % 2:
            raise SpecError(("attention_window",), f"the window of {self.attention_window} is not even: w keys either side")

    def describe(self) -> str:
        return f"{super().describe()}, sliding chunks of {self.attention_window} ({self.one_side} keys either side)"

    def chunk_tokens(self) -> int:
        """The whole window: the length the sequence is padded to a multiple of."""
        return self.attention_window

    def padded(self, seq_len: int) -> int:
        return -(-seq_len // self.attention_window) * self.attention_window

    def terms(self, e, model, seq_len: int) -> None:
        """Multi-head attention's projections and output; the global projections' parameters; QKᵀ and AV as the
        chunks execute them over the padded P = seq_len (the padding part states it), the softmax over each query's
        2w + 1 band scores."""
        start = len(e.out)
        super().terms(e, model, seq_len)
        w, p, d, n = self.one_side, self.padded(seq_len), model.d_model, e.n
        for i in range(start, len(e.out)):
            t = e.out[i]
            heads, _, dim = t.shape if t.role == "core" else (0, 0, 0)
            if t.name == "attn.scores":  # 2(P − w) queries of 2w keys: the chunks' (P / w − 1) · 2w · 2w pairs
                e.out[i] = replace(
                    t, shape=(heads, 2 * w, dim), macs=n * heads * 2 * w * dim, select="pairs", positions=Fraction(2 * (p - w), p)
                )
            elif t.name == "attn.values":  # every query against 3w values
                e.out[i] = replace(t, shape=(heads, 3 * w, dim), macs=n * heads * 3 * w * dim, select="pairs")
            elif t.name == "attn.softmax":  # per band score, 2w + 1 a query and head
                scores = n * self.n_heads * (2 * w + 1)
                e.out[i] = replace(t, elementwise=SOFTMAX_OPS * scores, scores=scores)
        if self.global_projections:  # held, no work without global tokens
            for name in ("attn.q_global", "attn.k_global", "attn.v_global"):
                e.term(f"{name}.weight", "weight", (d, d), n)
                e.term(f"{name}.bias", "bias", (d,), n)

    def cached_tokens(self, tokens: int) -> int:
        return tokens

    def kept_elements(self, model) -> int:
        """The input (for q, k and v's weight gradients) and the heads' output (for o's), d + h·head_dim a token; what
        the chunks keep of Q, K and V is the sequence's (score_bytes)."""
        return model.d_model + self.n_heads * self.head_dim

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        """What the chunked kernel keeps of a sequence padded to P, 16-bit (one form, flash or not): the chunks' copies
        of Q and K, 2(P − w) rows each (for QKᵀ's gradients); the band's softmax output, 2w + 1 a query (for its own);
        the probabilities spread over the 3w values around each block and the values' overlapping copies, 3P rows
        (for AV's), in every head: as autograd saves them in the reference module (what
        LongformerSelfAttention's einsums save, the scores in 16 bits)."""
        p, w, hd = self.padded(seq_len), self.one_side, self.head_dim
        return 2 * self.n_heads * (2 * 2 * (p - w) * hd + p * (2 * w + 1) + p * 3 * w + 3 * p * hd)

    def tensor_parallel(self, module, rank: int, tp: int):
        raise NotImplementedError("Longformer's sliding-chunks attention: no tensor-parallel form here")

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import torch
    from torch.nn import functional as F

    from ._fused import _MASKS
    from ._torch import Linear
    from .attention import _module as attention_module

    class SlidingChunks(attention_module()):
        """Multi-head attention whose ``attend`` runs the chunked band: the scores of each overlapping chunk of 2w
        queries and keys, placed in the band |i − j| ≤ w, a softmax over it, and each block of w queries against
        the 3w values around it. The input is padded to whole windows before the layers (the padding part)."""

        def __init__(self, spec: SlidingChunksAttention, model, causal: bool):
            super().__init__(spec, model, causal)
            self.w = spec.one_side
            if spec.global_projections:
                d = model.d_model
                self.q_global, self.k_global, self.v_global = Linear(d, d), Linear(d, d), Linear(d, d)

        def tables(self, p: int, device) -> tuple[torch.Tensor, ...]:
            """Where each band score comes from and goes to, for P positions: query i (block m = i // w) and key
            j = i + o, |o| <= w, from chunk m (keys of blocks m and m + 1; the last block's from chunk m − 1) or chunk
            m − 1 for keys before block m; the keys outside the sequence; and the place of each score among the 3w
            values around its block, (i mod w) + o + w. Index tables built once, kept with the kernels' mask tables
            (blocks/_fused.py), constants rather than activations."""
            w = self.w
            names = ("chunk", "query", "key", "outside", "spread")
            keys = [("sliding_chunks", name, p, w, str(device)) for name in names]
            if keys[0] not in _MASKS:
                i = torch.arange(p, device=device)[:, None]
                o = torch.arange(-w, w + 1, device=device)[None, :]
                j, m = i + o, i // w
                c = torch.where(j < m * w, m - 1, m.clamp(max=p // w - 2)).clamp(min=0)
                tables = (
                    c,
                    (i - c * w).expand(p, 2 * w + 1).contiguous(),
                    (j - c * w).clamp(0, 2 * w - 1),
                    (j < 0) | (j >= p),
                    ((i % w) + o + w).expand(p, 2 * w + 1).contiguous(),
                )
                _MASKS.update(zip(keys, tables))
            return tuple(_MASKS[key] for key in keys)

        def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            b, h, s, hd = q.shape
            w = self.w
            p = -(-s // (2 * w)) * 2 * w  # whole windows (the padding part has padded a model's sequence already)
            q, k, v = (F.pad(t, (0, 0, 0, p - s)) for t in (q, k, v))

            def overlapping(t: torch.Tensor, size: int) -> torch.Tensor:  # (B, h, chunks, size, hd), stride w
                return t.unfold(2, size, w).transpose(-2, -1)

            chunk, query, key, outside, spread = self.tables(p, q.device)
            chunks = self.scores(overlapping(q * hd**-0.5, 2 * w), overlapping(k, 2 * w).transpose(-2, -1))
            band = chunks[:, :, chunk, query, key]  # (B, h, P, 2w + 1)
            probs = band.masked_fill(outside, float("-inf")).softmax(dim=-1)
            # block m's queries against the 3w values from (m − 1)·w
            around = probs.new_zeros(b, h, p, 3 * w).scatter(-1, spread.expand(b, h, p, 2 * w + 1), probs)
            values = overlapping(F.pad(v, (0, 0, w, w)), 3 * w)  # (B, h, P / w, 3w, hd)
            return self.values(around.view(b, h, p // w, w, 3 * w), values).reshape(b, h, p, hd)[:, :, :s]

    return SlidingChunks
