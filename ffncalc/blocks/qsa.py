"""Softmax attention over the keys a block indexer selects from mean-pooled key blocks (Qwen4-Exp's QSA:
Qwen4ExpTextQSAIndexer and Qwen4ExpTextAttention in transformers 5.23.0, models/qwen4_exp).

The indexer projects each token to index_n_heads query heads and one raw key of index_head_dim in one bias-free
projection (index_qk_proj), normalises each query head (q_layernorm over index_head_dim) and turns it by rotary
positions. For a query at position p (counting from 1) the ⌊p / C⌋ complete blocks of C = index_block_size visible
keys are each averaged into one pooled key, normalised (k_layernorm), turned by the rotary angle of the block's
first position, and scored Σ_heads ReLU(q · k̄) / √index_head_dim; the query keeps the best index_budget / C blocks
and the keys of its own incomplete block (the tail), and the attention attends those keys only.

Counted as transformers' eager path runs it (the ``exact`` view, which verify checks): the attention over the full
square with the selection a mask, the index scores over each query's complete blocks (the only ones that exist to
score). The useful (``causal``) view attends what a sparse kernel computes: min(p, index_budget + p mod C) keys for
the query at p (model/terms.py, attended_pairs, select "budget").
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.terms import ROTARY_OPS
from . import register
from .attention import Attention

UNSUPPORTED = ("sinks", "window", "chunk", "kv_shared", "k_eq_v", "v_norm", "sub_norm")


@register
@dataclass(frozen=True)
class SelectedAttention(Attention):
    """Grouped-query attention over the keys a mean-pooled block indexer selects (Qwen4-Exp's QSA)."""

    kind = "qsa"
    slot = "attention"
    summary = "softmax attention over the key blocks an indexer of mean-pooled keys selects (Qwen4-Exp's QSA)"
    verify_note = (
        "qsa: executed dense, as transformers' eager path runs it (every key scored, the selection a mask; "
        "the index scores over each query's complete blocks); causal: the selected blocks and the tail"
    )

    index_n_heads: Positive = 4  # the indexer's query heads (Qwen4ExpTextConfig.indexer_n_heads)
    index_head_dim: Positive = 128  # each index head's width, and the cached raw index key's
    index_budget: Positive = 2048  # keys of whole blocks a query keeps (indexer_budget)
    index_block_size: Positive = 4  # keys averaged into one pooled key (indexer_compress_ratio)

    def check(self, d_model: int) -> None:
        super().check(d_model)
        for name in UNSUPPORTED:
            if getattr(self, name) not in (None, False, "none"):
                raise SpecError((name,), f"{name} is not an option of QSA attention")
        if self.softplus_gate != "none":
            raise SpecError(("softplus_gate",), "softplus_gate is not an option of QSA attention")
        if self.qk_norm not in ("none", "head"):
            raise SpecError(("qk_norm",), "QSA attention takes a per-head query and key norm or none")
        if self.index_budget % self.index_block_size:
            raise SpecError(
                ("index_budget",), f"the budget of {self.index_budget} keys is not whole blocks of {self.index_block_size}"
            )

    def describe(self) -> str:
        return (
            super().describe() + f", QSA indexer {self.index_n_heads} × {self.index_head_dim} → "
            f"{self.index_budget:,} keys in blocks of {self.index_block_size}"
        )

    def terms(self, e, model, seq_len: int) -> None:
        """Attention's terms, QKᵀ and AV over the selected keys in the causal view; then the indexer: index_qk
        (d_model -> (index heads + 1) × index_head_dim, no bias), q_norm over each index query head, k_norm over
        each pooled key (at most one per token), rotary over min(rotary_dim, index_head_dim) features of each
        index query and pooled key, the mean pooling (an add per raw key feature), and the scores of every index
        head against each complete block up to the query (a "core" product, select "blocks"), with their ReLU,
        the sum over heads and the scale."""
        first = len(e.out)
        Attention.terms(self, e, model, seq_len)
        size = self.index_block_size
        for i in range(first, len(e.out)):
            if e.out[i].role == "core":
                e.out[i] = replace(e.out[i], window=self.index_budget, chunk=size, select="budget")
        d, n, hi, di = model.d_model, e.n, self.index_n_heads, self.index_head_dim
        e.linear("attn.indexer.qk", d, (hi + 1) * di, False, n)
        e.norm("attn.indexer.q_norm", model.norm, di, n, total=hi * di)
        e.norm("attn.indexer.k_norm", model.norm, di, n)
        if model.positions == "rotary":
            e.op("attn.indexer.rotary", n * ROTARY_OPS * (hi + 1) * min(self.rotary_dim or self.head_dim, di))
        e.op("attn.indexer.pool", n * di)
        e.term("attn.indexer.scores", "core", (hi, seq_len, di), n, numel=0, macs=n * hi * seq_len * di, chunk=size, select="blocks")
        e.op("attn.indexer.reduce", n * 3 * hi * seq_len)  # ReLU, the sum over heads, the scale, per pooled key

    def kept_elements(self, model) -> int:
        """Attention's (a flash kernel's Q, K and V at their own heads, output and statistics) and the selection a
        block-sparse kernel reads in backward: each query's chosen block ids, int64, index_budget / block size of
        them (4 16-bit elements each; −1 where fewer blocks are complete); the indexer takes no gradient (its
        choice is a mask) and keeps nothing."""
        return super().kept_elements(model) + 4 * (self.index_budget // self.index_block_size)

    def cached_tokens(self, tokens: int) -> int:
        return tokens  # any earlier block may be selected: every key stays cached

    def cache_elements(self, model) -> int:
        """K and V of every KV head, and the raw index key (the indexer's cache, update_indexer)."""
        return super().cache_elements(model) + self.index_head_dim

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import math

    import torch
    from torch import nn

    from ._torch import Linear, MatMul, make_norm, rotate, softmax
    from .attention import _module as attention_module

    def rotate_at(x: torch.Tensor, positions: torch.Tensor, width: int, length: int) -> torch.Tensor:
        """``rotate`` of rows (B, H, n, D) standing at ``positions`` of a sequence of ``length``."""
        full = x.new_zeros(*x.shape[:-2], length, x.shape[-1])
        full[..., positions, :] = x
        return rotate(full, width)[..., positions, :]

    class Indexer(nn.Module):
        """Qwen4ExpTextQSAIndexer: each query's kept keys, a (B, s, s) mask."""

        def __init__(self, spec: SelectedAttention, model):
            super().__init__()
            d, hi, di = model.d_model, spec.index_n_heads, spec.index_head_dim
            self.heads, self.dim, self.positions = hi, di, model.positions
            self.rotary = min(spec.rotary_dim or spec.head_dim, di)
            self.size, self.blocks = spec.index_block_size, spec.index_budget // spec.index_block_size
            self.qk = Linear(d, (hi + 1) * di, bias=False)
            self.q_norm = make_norm(model.norm, di)
            self.k_norm = make_norm(model.norm, di)
            self.scores = MatMul()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            q, k = self.qk(x).split([self.heads * self.dim, self.dim], dim=-1)
            q = self.q_norm(q.view(b, s, self.heads, self.dim)).transpose(1, 2)  # (B, Hi, s, D)
            if self.positions == "rotary":
                q = rotate(q, self.rotary)
            i = torch.arange(s, device=x.device)
            keep = (i[None, :] <= i[:, None]).expand(b, s, s).clone()  # every visible key, then the selection
            for c in range(1, s // self.size + 1):  # the queries at p = i + 1 with ⌊p / C⌋ = c complete blocks
                first, stop = c * self.size - 1, min((c + 1) * self.size - 1, s)
                pooled = self.k_norm(k[:, : c * self.size].reshape(b, c, self.size, self.dim).mean(2)).unsqueeze(1)
                if self.positions == "rotary":
                    pooled = rotate_at(pooled, torch.arange(c, device=x.device) * self.size, self.rotary, s)
                scored = self.scores(q[..., first:stop, :], pooled.transpose(-2, -1))  # (B, Hi, n, c)
                score = torch.relu(scored).sum(1) / math.sqrt(self.dim)  # (B, n, c)
                if c <= self.blocks:
                    continue  # every complete block is kept
                top = score.topk(self.blocks, dim=-1).indices  # (B, n, blocks)
                chosen = torch.zeros(b, stop - first, c, dtype=torch.bool, device=x.device).scatter(-1, top, True)
                keys = chosen.repeat_interleave(self.size, dim=-1)  # (B, n, c·C)
                keep[:, first:stop, : c * self.size] = keys
            return keep

    class QSA(attention_module()):
        """Grouped-query attention's projections, norms, rotation and output (blocks/attention.py), attending
        the keys the indexer keeps."""

        def __init__(self, spec: SelectedAttention, model, causal: bool):
            super().__init__(spec, model, causal)
            self.indexer = Indexer(spec, model)

        fused_kv_heads = True  # inside ``_fused.fused()`` K and V come at their own heads

        def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            from . import _fused

            b, _, s, _ = q.shape
            if _fused.active() and self.causal:  # a block-sparse kernel over the selected blocks and the tail
                with torch.no_grad():  # the selection takes no gradient: the indexer keeps nothing
                    keep = self.indexer(x)
                    size = self.indexer.size
                    i = torch.arange(s, device=x.device)
                    nb = s // size
                    complete = torch.arange(nb, device=x.device)[None, :] < ((i + 1) // size)[:, None]  # (s, nb)
                    chosen = keep[:, :, : nb * size : size] & complete
                    index = _fused.first_ids(chosen, self.indexer.blocks).unsqueeze(1)  # (B, 1, s, blocks)
                return _fused.select_attention(q, k, v, index, size, tail=True)
            if k.shape[1] != self.heads:
                k = k.repeat_interleave(self.heads // k.shape[1], dim=1)
                v = v.repeat_interleave(self.heads // v.shape[1], dim=1)
            keep = self.indexer(x)  # (B, s, s)
            q = q * (1.0 / math.sqrt(self.head_dim))
            if not self.causal:  # transformers' eager path: the full square, the selection a mask
                scores = self.scores(q, k.transpose(-2, -1)).masked_fill(~keep.unsqueeze(1), float("-inf"))
                return self.values(softmax(scores), v)
            rows, size, budget = [], self.indexer.size, self.indexer.blocks * self.indexer.size
            for i in range(s):  # each query against its kept keys only: min(p, budget + p mod C) of them
                count = min(i + 1, budget + (i + 1) % size)
                index = keep[:, i].to(q.dtype).topk(count, dim=-1).indices[:, None, :, None]  # (B, 1, count, 1)
                ki = k.gather(2, index.expand(b, self.heads, count, self.head_dim))
                vi = v.gather(2, index.expand(b, self.heads, count, self.head_dim))
                rows.append(self.values(softmax(self.scores(q[..., i : i + 1, :], ki.transpose(-2, -1))), vi))
            return torch.cat(rows, dim=-2)

    return QSA
