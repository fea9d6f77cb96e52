"""Multi-resolution approximate attention, MRA-2 (Zeng et al. 2022, "Multi Resolution Analysis (MRA) for Approximate
Self-Attention", §4 and Algorithm 1), as transformers instantiates it (transformers 5.23.0, models/mra/modeling_mra.py:
``MraSelfAttention``, ``mra2_attention``, whose products run in the CUDA kernels of kernels-community/mra).

Per head, in fp32 (the kernels' dtype: the layer casts Q, K and V up), over s positions in nb = s / 32 blocks of 32
(the sequence padded to whole blocks), each head's features padded with zeros to 32 where narrower (d' = max(d_h, 32)):

    low resolution    each block's mean query and key (and value, "full"): nb × nb block scores, nb²·d' multiply-adds
    selection         the top K of those scores (K = min(max_position_embeddings / 32 · block_per_row,
                      (max_position_embeddings / 32)²), at most nb²): no gradient
    high resolution   each selected block's 32 × 32 scores (K·1024·d'), exponentiated against each query's running
                      maximum, times its 32 values (K·1024·d'), summed into its queries' rows with their normalisers
    "full" mode       the unselected blocks at low resolution: each block score's weight (times its 32 tokens) times
                      the block's mean value (nb²·d'), both halves rescaled to a common maximum and normalised together

so QKᵀ meets K·1024 + nb² pairs a head and AV K·1024 (+ nb² in "full" mode), per sequence (``select`` "pairs", the
same in every view). transformers' forward on a CPU returns zeros for the attention (mra2_attention without its kernel),
so these products are proven against this module's reference (verify), not against FlopCounterMode on its class."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache
from typing import Literal

from ..model.schema import Positive, SpecError
from ..model.terms import SOFTMAX_OPS
from . import register
from .attention import Attention

UNSUPPORTED = ("gate", "sinks", "window", "chunk", "kv_shared", "k_eq_v", "v_norm", "sub_norm")
BLOCK = 32  # mra2_attention's block_size (the kernels' warp): 32 positions a block, heads padded to 32 features
MEAN_OPS = 1  # a block mean: one add an element (the divide a row is negligible beside it; counted per element)


@register
@dataclass(frozen=True)
class MraAttention(Attention):
    """Multi-resolution approximate attention: block means pick the top blocks, computed at full resolution (MRA-2)."""

    kind = "mra"
    slot = "attention"
    summary = (
        "multi-resolution attention: block-mean scores pick the top blocks, computed at full resolution (MRA-2, Zeng et al. 2022)"
    )
    verify_note = "mra: the top blocks of 32 × 32 at full resolution, the rest at block means ('full'); sequences in whole blocks"

    blocks: Positive = 64  # MraSelfAttention.num_block: min(max_position_embeddings // 32 · block_per_row, (… // 32)²)
    approx_mode: Literal["full", "sparse"] = "full"

    def check(self, d_model: int) -> None:
        super().check(d_model)
        for name in UNSUPPORTED:
            if getattr(self, name) not in (None, False, "none"):
                raise SpecError((name,), f"{name} is not an option of MRA attention")
        if self.qk_norm != "none" or self.softplus_gate != "none" or self.kv_heads != self.n_heads:
            raise SpecError(("n_kv_heads",), "MRA attention has as many key heads as query heads, and no norms")
        if self.v_head_dim not in (None, self.head_dim or d_model // self.n_heads):
            raise SpecError(("v_head_dim",), "MRA attention's values are as wide as its keys")

    def describe(self) -> str:
        return f"{super().describe()}, MRA-2 ({self.approx_mode}): top {self.blocks} blocks of {BLOCK} at full resolution"

    @property
    def width(self) -> int:
        """Features a head as the kernels compute it: head_dim padded with zeros to a block (d')."""
        return max(self.head_dim, BLOCK)

    def selected(self, seq_len: int) -> int:
        """Blocks computed at full resolution over ``seq_len`` positions: K, at most every block (nb²; transformers'
        top-k refuses a sequence of fewer blocks than K)."""
        nb = seq_len // BLOCK
        return min(self.blocks, nb * nb)

    def pairs(self, seq_len: int) -> tuple[int, int, int]:
        """(high-resolution pairs K·1024, low-resolution block pairs nb², the low resolution's AV pairs) a head."""
        nb = seq_len // BLOCK
        return self.selected(seq_len) * BLOCK * BLOCK, nb * nb, nb * nb if self.approx_mode == "full" else 0

    def terms(self, e, model, seq_len: int) -> None:
        """Multi-head attention's projections and output; QKᵀ and AV as the pairs above a sequence (spread over its
        tokens), at d' features; the exponentials and normalisers as softmax's work over the scores; the block means
        (one add an element of Q and K, and V in "full" mode)."""
        start = len(e.out)
        super().terms(e, model, seq_len)
        if seq_len % BLOCK:
            raise SpecError(("seq_len",), f"MRA attention runs over whole blocks of {BLOCK} positions: pad the sequence")
        h, w, n = self.n_heads, self.width, e.n
        high, low, low_values = self.pairs(seq_len)
        share = Fraction(1, seq_len)  # the pairs are a sequence's
        for i in range(start, len(e.out)):
            t = e.out[i]
            if t.name in ("attn.scores", "attn.values"):
                keys = high + (low if t.name == "attn.scores" else low_values)
                e.out[i] = replace(t, shape=(h, keys, w), macs=n * h * keys * w, select="pairs", positions=share)
            elif t.name == "attn.softmax":
                scores = n * h * (high + low)
                e.out[i] = replace(t, elementwise=SOFTMAX_OPS * scores, scores=scores, positions=share)
        means = 3 if self.approx_mode == "full" else 2
        e.op("attn.block_means", n * MEAN_OPS * means * h * w)

    def cached_tokens(self, tokens: int) -> int:
        return tokens

    def kept_elements(self, model) -> int:
        """The input (for q, k and v) and the heads' output (for o), a token: Q, K and V are kept in fp32 (score_bytes)."""
        return model.d_model + self.n_heads * self.value_dim

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        """What autograd saves of the fp32 work in the reference module (one form: the kernels'), a head, 4 bytes an
        element: Q, K and V whole (their gathers' inputs, as the kernels keep the dense Q, K and V: 3·s·d'), the K
        selected blocks of each gathered (3·K·32·d'), the high-resolution weights (K·1024), the selected blocks' row
        and column ids (2·K int64: 4·K elements), the output rows and their normaliser (s·d' + s); in "full" mode
        the block means of Q and K (2·nb·d', the low resolution's scores take gradients there), the low-resolution
        weights and their copy times each block's 32 tokens (2·nb²), the block means of V (nb·d') and the two
        rescaling factors (2·s)."""
        h, w, s = self.n_heads, self.width, seq_len
        nb, k = s // BLOCK, self.selected(s)
        elements = 3 * s * w + 3 * k * BLOCK * w + k * BLOCK * BLOCK + 4 * k + s * w + s
        if self.approx_mode == "full":
            elements += 2 * nb * w + 2 * nb * nb + nb * w + 2 * s
        return 4 * h * elements

    def tensor_parallel(self, module, rank: int, tp: int):
        raise NotImplementedError("MRA attention: no tensor-parallel form here")

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import torch
    from torch.nn import functional as F

    from .attention import _module as attention_module

    class Mra(attention_module()):
        """Multi-head attention whose ``attend`` runs MRA-2 in fp32 (mra2_attention's steps, the kernels' products as
        gathers, batched matmuls and scatter-adds)."""

        def __init__(self, spec: MraAttention, model, causal: bool):
            super().__init__(spec, model, causal)
            self.spec = spec

        def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            spec = self.spec
            b, h, s, hd = q.shape
            w, nb, n = spec.width, s // BLOCK, spec.selected(s)
            dtype = q.dtype
            q, k, v = (F.pad(t, (0, w - hd)).float() for t in (q, k, v))  # MraSelfAttention pads, mra2 runs fp32
            qb, kb, vb = (t.view(b, h, nb, BLOCK, w) for t in (q, k, v))
            scale = w**-0.5
            with torch.set_grad_enabled(spec.approx_mode == "full" and torch.is_grad_enabled()):  # "sparse": no_grad
                low = self.scores(qb.mean(-2), kb.mean(-2).transpose(-2, -1)) * scale  # (b, h, nb, nb)
            with torch.no_grad():
                row_max = low.amax(-1, keepdim=True)
                top = (low - row_max).flatten(-2).topk(n, dim=-1).indices  # (b, h, n) of nb² blocks
                rows, cols = top // nb, top % nb

            def pick(t: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:  # (b, h, n, 32, w): the selected blocks
                return torch.gather(t, 2, idx[..., None, None].expand(b, h, n, BLOCK, w))

            high = self.scores(pick(qb, rows), pick(kb, cols).transpose(-2, -1)) * scale  # (b, h, n, 32, 32)
            with torch.no_grad():  # each query's maximum over its selected blocks (the kernels' index_max)
                best = high.amax(-1)
                peak = best.new_full((b, h, nb, BLOCK), float("-inf")).scatter_reduce(
                    2, rows[..., None].expand(b, h, n, BLOCK), best, "amax"
                )
                shift = torch.gather(peak, 2, rows[..., None].expand(b, h, n, BLOCK))
            weights = (high - shift[..., None]).exp()
            into = rows[..., None, None].expand(b, h, n, BLOCK, w)
            out = q.new_zeros(b, h, nb, BLOCK, w).scatter_add(2, into, self.values(weights, pick(vb, cols)))
            total = q.new_zeros(b, h, nb, BLOCK).scatter_add(2, into[..., 0], weights.sum(-1))
            if spec.approx_mode == "full":
                with torch.no_grad():
                    chosen = torch.zeros_like(low).flatten(-2).scatter(-1, top, 1.0).view_as(low)
                    gap = row_max - peak  # (b, h, nb, 32): the low half's maximum against the high half's
                    low_scale, high_scale = torch.exp(gap.clamp(max=0)), torch.exp((-gap).clamp(max=0))
                coarse = (low - row_max - 1e4 * chosen).exp() * BLOCK  # each block's weight, times its tokens
                low_out = self.values(coarse, vb.mean(-2))[:, :, :, None, :]  # (b, h, nb, 1, w)
                out = out * high_scale[..., None] + low_out * low_scale[..., None]
                total = total * high_scale + coarse.sum(-1, keepdim=True) * low_scale
            out = out / (total[..., None] + 1e-6)
            return out.reshape(b, h, s, w)[..., :hd].to(dtype)

    return Mra
