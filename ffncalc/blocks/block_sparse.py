"""Block-sparse softmax attention: grouped-query attention whose keys a small indexer selects block by block
(MiniMax-M3's lightning indexer: MiniMaxM3VLIndexer in transformers 5.23.0, models/minimax_m3_vl).

The indexer projects each token to index_n_heads query heads and one key of index_head_dim (q and k, no bias),
normalises each (an RMSNorm over index_head_dim), turns both by rotary positions, and scores every earlier key
for each query and index head. A key block's score is the best of its keys' (max-pooling, no arithmetic); the
index_local_blocks blocks ending at the query's own are always kept, and of the rest the highest-scoring, up to
index_topk_blocks blocks in all. Each attention head attends the blocks its group's index head chose.

Counted as executed by transformers' eager path (the ``exact`` view, which verify checks): the index scores
and the attention both over the full square, the selection a mask. The useful (``causal``) view attends what a
block-sparse kernel computes: the query's own block up to itself and at most index_topk_blocks − 1 whole
earlier blocks (Term: both a window of index_topk_blocks × index_block_size and a chunk of index_block_size),
while the index scores meet every earlier key.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.terms import ROTARY_OPS
from . import register
from .attention import Attention

UNSUPPORTED = ("gate", "sinks", "window", "chunk", "kv_shared", "k_eq_v", "v_norm", "sub_norm")


@register
@dataclass(frozen=True)
class BlockSparseAttention(Attention):
    """Grouped-query attention over the key blocks an indexer selects (MiniMax-M3)."""

    kind = "block_sparse"
    slot = "attention"
    summary = "softmax attention over key blocks a small indexer selects (MiniMax-M3's lightning indexer)"
    verify_note = (
        "block_sparse: executed dense, as transformers' eager path runs it (every key scored, the "
        "selection a mask); causal: the own block up to the query and the selected earlier blocks"
    )

    index_n_heads: Positive = 4  # the indexer's query heads (MiniMaxM3VLTextConfig.index_n_heads)
    index_head_dim: Positive = 128  # each index head's width, and the cached index key's
    index_block_size: Positive = 128  # keys per block
    index_topk_blocks: Positive = 16  # blocks a query attends, its own included
    index_local_blocks: Positive = 1  # the blocks ending at the query's own, always kept

    @property
    def reach(self) -> int:
        """The most keys a query attends: index_topk_blocks whole blocks."""
        return self.index_topk_blocks * self.index_block_size

    def check(self, d_model: int) -> None:
        super().check(d_model)
        for name in UNSUPPORTED:
            if getattr(self, name) not in (None, False, "none"):
                raise SpecError((name,), f"{name} is not an option of block-sparse attention")
        if self.softplus_gate != "none":
            raise SpecError(("softplus_gate",), "softplus_gate is not an option of block-sparse attention")
        if self.index_local_blocks > self.index_topk_blocks:
            raise SpecError(
                ("index_local_blocks",),
                f"{self.index_local_blocks} local blocks exceed the {self.index_topk_blocks} blocks a query attends",
            )
        heads = self.n_heads
        if heads % self.index_n_heads:
            raise SpecError(("index_n_heads",), f"{self.index_n_heads} index heads do not divide {heads} heads")

    def describe(self) -> str:
        return (
            super().describe() + f", indexer {self.index_n_heads} × {self.index_head_dim} → "
            f"{self.index_topk_blocks} blocks of {self.index_block_size}"
        )

    def terms(self, e, model, seq_len: int) -> None:
        """Attention's terms with the block-sparse reach on QKᵀ and AV, then MiniMaxM3VLIndexer: q (d_model ->
        index heads × index_head_dim) and k (d_model -> index_head_dim), no bias; q_norm and k_norm over
        index_head_dim; rotary over min(rotary_dim, index_head_dim) features of each index query and the key;
        the scores of every index head against every key (a "core" product)."""
        Attention.terms(replace(self, window=self.reach, chunk=self.index_block_size), e, model, seq_len)
        d, n, hi, di = model.d_model, e.n, self.index_n_heads, self.index_head_dim
        e.linear("attn.indexer.q", d, hi * di, False, n, heads=hi)
        e.linear("attn.indexer.k", d, di, False, n)
        e.norm("attn.indexer.q_norm", model.norm, di, n, total=hi * di)
        e.norm("attn.indexer.k_norm", model.norm, di, n)
        if model.positions == "rotary":
            e.op("attn.indexer.rotary", n * ROTARY_OPS * (hi + 1) * min(self.rotary_dim or self.head_dim, di))
        e.term("attn.indexer.scores", "core", (hi, seq_len, di), n, numel=0, macs=n * hi * seq_len * di)

    def cached_tokens(self, tokens: int) -> int:
        return tokens  # any earlier block may be selected: every key stays cached

    def cache_elements(self, model) -> int:
        """K and V of every KV head, and the index key (MiniMaxM3VLSparseCacheLayer.update_index)."""
        return super().cache_elements(model) + self.index_head_dim

    def kept_elements(self, model) -> int:
        """Attention's (a flash kernel's Q, K and V at their own heads, output and statistics) and the selection a
        block-sparse kernel reads in backward: for each index head, each query's index_topk_blocks chosen block ids,
        int64 (4 16-bit elements each; −1 where fewer blocks are visible); the indexer takes no gradient (its
        choice is a mask) and keeps nothing."""
        return super().kept_elements(model) + 4 * self.index_n_heads * self.index_topk_blocks

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import math

    import torch
    from torch import nn

    from ._torch import Linear, MatMul, lower_apply, lower_product, make_norm, rotate, softmax
    from .attention import _module as attention_module

    class Indexer(nn.Module):
        """MiniMaxM3VLIndexer: per index head, the blocks each query keeps, as block indices."""

        def __init__(self, spec: BlockSparseAttention, model, causal: bool):
            super().__init__()
            d, hi, di = model.d_model, spec.index_n_heads, spec.index_head_dim
            self.heads, self.dim, self.causal, self.positions = hi, di, causal, model.positions
            self.rotary = min(spec.rotary_dim or spec.head_dim, di)
            self.size, self.topk, self.local = spec.index_block_size, spec.index_topk_blocks, spec.index_local_blocks
            self.q = Linear(d, hi * di, bias=False)
            self.k = Linear(d, di, bias=False)
            self.q_norm = make_norm(model.norm, di)
            self.k_norm = make_norm(model.norm, di)
            self.scores = MatMul()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            """(B, index heads, s, blocks): each block's score for each query, the local blocks +inf, blocks
            with no visible key -inf."""
            b, s, _ = x.shape
            q = self.q_norm(self.q(x).view(b, s, self.heads, self.dim)).transpose(1, 2)  # (B, Hi, s, D)
            k = self.k_norm(self.k(x)).view(b, 1, s, self.dim)
            if self.positions == "rotary":
                q, k = rotate(q, self.rotary), rotate(k, self.rotary)
            k = k.expand(b, self.heads, s, self.dim)
            i = torch.arange(s, device=x.device)
            future = i[None, :] > i[:, None]
            if self.causal:  # every earlier key, the triangle only
                scores = lower_product(self.scores, q, k, max(1, math.isqrt(s)))
            else:
                scores = self.scores(q, k.transpose(-2, -1))
            scores = scores.masked_fill(future, float("-inf"))
            blocks = -(-s // self.size)
            scores = nn.functional.pad(scores, (0, blocks * self.size - s), value=float("-inf"))
            pooled = scores.view(b, self.heads, s, blocks, self.size).amax(dim=-1)  # (B, Hi, s, blocks)
            own = i // self.size
            for back in range(self.local):
                local = (own - back).clamp(min=0)
                pooled = pooled.scatter(-1, local.view(1, 1, s, 1).expand(b, self.heads, s, 1), float("inf"))
            return pooled

    class BlockSparse(attention_module()):
        """Grouped-query attention's projections, norms, rotation and output (blocks/attention.py), attending
        the blocks the indexer selects for each head's group."""

        def __init__(self, spec: BlockSparseAttention, model, causal: bool):
            super().__init__(spec, model, causal)
            self.size, self.topk = spec.index_block_size, spec.index_topk_blocks
            self.indexer = Indexer(spec, model, causal)

        fused_kv_heads = True  # inside ``_fused.fused()`` K and V come at their own heads

        def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            from . import _fused

            if _fused.active() and self.causal:  # a block-sparse kernel over each index head's chosen blocks
                with torch.no_grad():  # the selection takes no gradient: the indexer keeps nothing
                    pooled = self.indexer(x)  # (B, Hi, s, blocks)
                    top = pooled.topk(min(self.topk, pooled.shape[-1]), dim=-1)
                    chosen = torch.zeros_like(pooled, dtype=torch.bool).scatter(-1, top.indices, top.values > float("-inf"))
                    index = _fused.first_ids(chosen, self.topk)  # (B, Hi, s, topk)
                return _fused.select_attention(q, k, v, index, self.size)
            if k.shape[1] != self.heads:
                k = k.repeat_interleave(self.heads // k.shape[1], dim=1)
                v = v.repeat_interleave(self.heads // v.shape[1], dim=1)
            pooled = self.indexer(x)  # (B, Hi, s, blocks)
            pooled = pooled.repeat_interleave(self.heads // pooled.shape[1], dim=1)  # each head its group's
            q = q * (1.0 / math.sqrt(self.head_dim))
            return self._causal(q, k, v, pooled) if self.causal else self._dense(q, k, v, pooled)

        def _dense(self, q, k, v, pooled):
            """transformers' eager path: the full square, the unselected blocks and the future masked."""
            s, blocks = q.shape[2], pooled.shape[-1]
            top = pooled.topk(min(self.topk, blocks), dim=-1)
            chosen = torch.zeros_like(pooled, dtype=torch.bool).scatter(-1, top.indices, top.values > float("-inf"))
            keep = chosen.repeat_interleave(self.size, dim=-1)[..., :s]
            i = torch.arange(s, device=q.device)
            keep = keep & (i[None, :] <= i[:, None])
            scores = self.scores(q, k.transpose(-2, -1)).masked_fill(~keep, float("-inf"))
            return self.values(softmax(scores), v)

        def _causal(self, q, k, v, pooled):
            """A block-sparse kernel's work: query i of block c meets its block's keys up to itself (a triangle
            per block) and the whole earlier blocks it selected, at most index_topk_blocks − 1 of them."""
            b, h, s, dim = q.shape
            size, out = self.size, []
            for c, start in enumerate(range(0, s, size)):
                stop = min(start + size, s)
                qc, kc, vc = q[..., start:stop, :], k[..., start:stop, :], v[..., start:stop, :]
                n = stop - start
                own = lower_product(self.scores, qc, kc, max(1, math.isqrt(n)))
                upper = torch.arange(n, device=q.device)
                own = own.masked_fill(upper[None, :] > upper[:, None], float("-inf"))
                picks = min(c, self.topk - 1)
                if picks:
                    # of the earlier blocks (the local ones first, +inf), the best picks for each query
                    chosen = pooled[..., start:stop, :c].topk(picks, dim=-1).indices  # (B, H, n, picks)
                    index = (chosen.unsqueeze(-1) * size + torch.arange(size, device=q.device)).flatten(-2)
                    gather = index.unsqueeze(-1)  # (B, H, n, picks·size, 1)
                    ks = k.unsqueeze(2).expand(b, h, n, s, dim).gather(3, gather.expand(-1, -1, -1, -1, dim))
                    vs = v.unsqueeze(2).expand(b, h, n, s, v.shape[-1]).gather(3, gather.expand(-1, -1, -1, -1, v.shape[-1]))
                    earlier = self.scores(qc.unsqueeze(-2), ks.transpose(-2, -1)).squeeze(-2)  # (B, H, n, picks·size)
                    probs = softmax(torch.cat([earlier, own], dim=-1))
                    head, tail = probs[..., : earlier.shape[-1]], probs[..., earlier.shape[-1] :]
                    part = self.values(head.unsqueeze(-2), vs).squeeze(-2)
                    part = part + lower_apply(self.values, tail, vc, max(1, math.isqrt(n)))
                else:
                    part = lower_apply(self.values, softmax(own), vc, max(1, math.isqrt(n)))
                out.append(part)
            return torch.cat(out, dim=-2)

    return BlockSparse
