"""Block-local attention (Guo et al. 2022, "LongT5: Efficient Text-To-Text Transformer for Long Sequences", §2.1.1:
Local Attention), as transformers' LongT5LocalAttention computes it: the sequence padded to whole blocks of radius + 1
positions, each block's queries meeting the keys of its own block and of the blocks either side, 3·(radius + 1) keys
a query (the padding's and the masked ones' included), whatever the sequence's length.

Its products are those the kernel executes in every view (``select`` "pairs": ⌈S / b⌉·b queries of 3·b keys each, per
token of the S the sequence holds), the query-key pairs beyond the radius and the padding's being computed and then
masked. With ``global_block`` it is LongT5TransientGlobalAttention (§2.1.2): ⌊S / global_block⌋ global tokens, each
the sum of its positions' inputs, normed and projected by the layer's k and v, join every query's keys."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

from ..model.schema import NonNegative, Positive
from . import register
from .attention import Attention


@register
@dataclass(frozen=True)
class LocalAttention(Attention):
    """Multi-head attention within blocks: every query of a block of radius + 1 positions meets the keys of its own
    block and the blocks either side (bidirectional)."""

    kind = "block_local"
    slot = "attention"
    summary = "block-local bidirectional attention, 3 blocks of radius + 1 keys a query, and global tokens (LongT5)"

    radius: Positive = 127  # LongT5Config.local_radius: the block is radius + 1 positions
    # transient-global (LongT5TransientGlobalAttention, Guo et al. 2022 §2.1.2): one global token a global_block
    # positions (⌊S / global_block⌋ of them), each the sum of its positions' inputs (a product with their one-hot block
    # ids), through a norm of its own (global_input_layer_norm) and the layer's k and v, every query meeting them as
    # further keys; 0: none
    global_block: NonNegative = 0

    @property
    def block(self) -> int:
        return self.radius + 1

    def globals(self, seq_len: int) -> int:
        """Global tokens of a sequence: ⌊S / global_block⌋ (_make_global_fixed_block_ids: num_globals)."""
        return seq_len // self.global_block if self.global_block else 0

    def keys(self, seq_len: int = 0) -> int:
        """Keys a query meets: three blocks (LongT5LocalAttention: _concatenate_3_blocks) and the global tokens."""
        return 3 * self.block + self.globals(seq_len)

    def padded(self, seq_len: int) -> int:
        """The sequence padded to whole blocks (_split_into_blocks)."""
        return -(-seq_len // self.block) * self.block

    def terms(self, e, model, seq_len: int) -> None:
        """The projections as multi-head attention's; QKᵀ, the softmax and AV over ⌈S / b⌉·b padded queries of 3·b keys,
        per token of the S: ``positions`` ⌈S / b⌉·b / S."""
        start = len(e.out)
        super().terms(e, model, seq_len)
        keys, scale = self.keys(seq_len), Fraction(self.padded(seq_len), seq_len)
        g, d = self.globals(seq_len), model.d_model
        for i in range(start, len(e.out)):
            t = e.out[i]
            if g and t.component in ("attn.k", "attn.v"):  # k and v project the G global tokens too: S + G rows
                e.out[i] = replace(t, positions=Fraction(seq_len + g, seq_len))
            if t.name in ("attn.scores", "attn.values"):
                heads, _, dim = t.shape
                macs = e.n * heads * keys * dim
                e.out[i] = replace(t, shape=(heads, keys, dim), macs=macs, window=None, chunk=None, select="pairs", positions=scale)
            elif t.name == "attn.softmax":  # per score, as softmax attention's (SOFTMAX_OPS)
                per = Fraction(keys, seq_len)
                e.out[i] = replace(t, elementwise=int(t.elementwise * per), scores=int(t.scores * per), positions=scale)
        if self.global_block:  # the global tokens: their sums over the sequence, and their norm over G rows
            # _create_global_aggregates: einsum("...nd,...ng->...gd") of the inputs and the one-hot block ids, S·G·d
            e.term("attn.aggregate", "core", (1, g, d), e.n, numel=0, macs=e.n * g * d, select="pairs", grows=False)
            e.norm("attn.global_norm", model.norm, d, e.n)
            e.out[-1] = replace(e.out[-1], positions=Fraction(g, seq_len))

    def cached_tokens(self, tokens: int) -> int:
        return min(tokens, self.keys(tokens))

    def kept_elements(self, model) -> int:
        """Multi-head attention's (the input, Q, K, V at their own heads and the output, o's input: a block-local
        flash kernel keeps what FlashAttention-2 keeps); with global tokens each token's global id as well (int64,
        4 16-bit elements: the sums' index_add reads it in backward)."""
        return super().kept_elements(model) + (4 if self.global_block else 0)

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        """Eager: the softmax output (2 bytes), its dropout mask (1) and the dropout's output (2) for each of the padded
        queries' 3·b scores in every head (Korthikanti et al. 2022 §4.1); flash: an fp32 log-sum-exp a padded query
        and head and, with G global tokens, their sums (the global norm's input, G × d), the norm's fp32 statistic
        (4 bytes a row, a LayerNorm's mean too: 8), its output (k's and v's input, G × d) and their keys and values (G × h·d_h each), a
        sequence."""
        rows = self.n_heads * self.padded(seq_len)
        if not flash:
            return 5 * rows * self.keys(seq_len)
        g, a = self.globals(seq_len), self.kv_heads * self.head_dim
        stat = 8 if model.norm.kind.startswith("layernorm") else 4
        return 4 * rows + 2 * (2 * g * model.d_model + 2 * g * a) + stat * g

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import torch
    from torch.nn import functional as F

    from ._torch import MatMul, make_norm
    from .attention import _module as attention_module

    class LocalModule(attention_module()):
        """Multi-head attention whose ``attend`` runs LongT5LocalAttention's blocks: queries, keys and values padded
        to whole blocks, each block's queries against its own keys and its neighbours' (zeros past either end)."""

        def __init__(self, spec: LocalAttention, model, causal: bool):
            super().__init__(spec, model, causal)
            self.block, self.global_block = spec.block, spec.global_block
            if spec.global_block:
                self.aggregate = MatMul()
                self.global_norm = make_norm(model.norm, model.d_model)

        fused_kv_heads = True  # inside ``_fused.fused()`` K and V come at their own heads

        def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            from . import _fused

            b, h, s, hd = q.shape
            if _fused.active():  # a block-local flash kernel; the global tokens' sums an index_add (ids kept)
                g = s // self.global_block if self.global_block else 0
                gk = gv = None
                if g:
                    with torch.no_grad():
                        ids = (torch.arange(s, device=x.device) // self.global_block).clamp(max=g - 1)
                    sums = self.global_norm(x.new_zeros(b, g, x.shape[-1]).index_add(1, ids, x))
                    gk, gv = (self._split(proj(sums), self.kv_heads) for proj in (self.k, self.v))
                return _fused.local_attention(q, k, v, gk, gv, self.block)
            if k.shape[1] != h:
                k, v = k.repeat_interleave(h // k.shape[1], dim=1), v.repeat_interleave(h // v.shape[1], dim=1)
            n = -(-s // self.block)
            pad = n * self.block - s

            def blocks(t: torch.Tensor) -> torch.Tensor:  # (B, h, n, block, hd)
                return F.pad(t, (0, 0, 0, pad)).view(b, h, n, self.block, t.shape[-1])

            def three(t: torch.Tensor) -> torch.Tensor:  # each block with the one before and after: (B, h, n, 3·block, hd)
                t = F.pad(t, (0, 0, 0, 0, 1, 1))
                return torch.cat([t[:, :, i : i + n] for i in range(3)], dim=3)

            qb, kb, vb = blocks(q), three(blocks(k)), three(blocks(v))
            g = s // self.global_block if self.global_block else 0
            if g:  # each global token the sum of its block's inputs, the last taking the orphans, normed, through k, v
                ids = (torch.arange(s, device=x.device) // self.global_block).clamp(max=g - 1)
                onehot = F.one_hot(ids, g).to(x.dtype).T.expand(b, g, s)
                sums = self.global_norm(self.aggregate(onehot, x))
                side = [self._split(proj(sums), self.kv_heads) for proj in (self.k, self.v)]
                if self.kv_heads != self.heads:
                    side = [t.repeat_interleave(self.heads // self.kv_heads, dim=1) for t in side]
                kb, vb = (torch.cat([t, u[:, :, None].expand(b, h, n, g, hd)], dim=3) for t, u in zip((kb, vb), side))
            probs = self.scores(qb * hd**-0.5, kb.transpose(-2, -1)).softmax(dim=-1)
            return self.values(probs, vb).reshape(b, h, n * self.block, -1)[:, :, :s]

    return LocalModule
