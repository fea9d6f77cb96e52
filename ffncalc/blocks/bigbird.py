"""BigBird's block-sparse attention (Zaheer et al. 2020, "Big Bird: Transformers for Longer Sequences", §2 and
Appendix D: ITC, global tokens from the first and last blocks), as transformers instantiates it in both its models
(transformers 5.23.0: models/big_bird/modeling_big_bird.py, ``BigBirdBlockSparseAttention``, the big_bird encoder's
every layer; models/bigbird_pegasus/modeling_bigbird_pegasus.py, ``BigBirdPegasusBlockSparseAttention``, the
bigbird_pegasus encoder's layers; the two ``bigbird_block_sparse_attention`` compute the same blocks).

The rule transformers applies (``BigBirdModel.forward``, ``BigBirdPegasusEncoder.forward``: max_tokens_to_attend):
a sequence of s <= (5 + 2·r)·b tokens (b = block_size, r = num_random_blocks) runs full attention, unpadded, every
query against every key; a longer one is padded to whole blocks (P = ⌈s / b⌉·b: the padding part of a big_bird model,
the encoder's pad_to of a bigbird_pegasus one) and runs block-sparse, n = P / b blocks, each block of b queries against:

    the first and the last block     every key: P each
    the second and the second-last   the first, last and three sliding blocks around it less the one it shares, and
                                     r random blocks: (4 + r)·b keys each
    each of the n − 4 middle blocks  three sliding blocks, the first and last, and r random: (5 + r)·b keys each

so QKᵀ and AV each meet 2·b·P + 2·(4 + r)·b² + (n − 4)·(5 + r)·b² query-key pairs a head, which the kernel computes
in every view (``select`` "pairs"). The masks are outer products (no contraction, no matmul). Which blocks are
random changes no count (in eval BigBirdPegasus draws none: every random block is block 0). (transformers switches a
model to full attention for good once it meets a short sequence, set_attention_type: a fresh model's forward is
counted.)"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

from ..model.schema import NonNegative, Positive, SpecError
from . import register
from .attention import Attention

UNSUPPORTED = ("gate", "sinks", "window", "chunk", "kv_shared", "k_eq_v", "v_norm", "sub_norm")


@register
@dataclass(frozen=True)
class BigBirdAttention(Attention):
    """Multi-head attention, block-sparse above (5 + 2·random_blocks)·block_size tokens (BigBird)."""

    kind = "bigbird"
    slot = "attention"
    summary = "block-sparse attention of global, sliding and random blocks, full on short sequences (BigBird, Zaheer et al. 2020)"
    verify_note = "bigbird: full attention up to (5 + 2r)·b tokens, block-sparse beyond over P padded to whole blocks"

    block_size: Positive = 64  # BigBirdConfig.block_size, BigBirdPegasusConfig.block_size
    random_blocks: NonNegative = 3  # BigBirdConfig.num_random_blocks

    @property
    def threshold(self) -> int:
        """The longest sequence transformers runs with full attention: (5 + 2·r)·b."""
        return (5 + 2 * self.random_blocks) * self.block_size

    def check(self, d_model: int) -> None:
        super().check(d_model)
        for name in UNSUPPORTED:
            if getattr(self, name) not in (None, False, "none"):
                raise SpecError((name,), f"{name} is not an option of BigBird's block-sparse attention")
        if self.qk_norm != "none" or self.softplus_gate != "none" or self.kv_heads != self.n_heads:
            raise SpecError(("n_kv_heads",), "BigBird's attention has as many key heads as query heads, and no norms")

    def describe(self) -> str:
        blocks = f"blocks of {self.block_size} ({self.random_blocks} random)"
        return f"{super().describe()}, block-sparse in {blocks} past {self.threshold:,} tokens"

    def sparse_pairs(self, positions: int) -> int:
        """Query-key pairs a head over P positions, block-sparse: 2·b·P + 2·(4 + r)·b² + (n − 4)·(5 + r)·b²."""
        b, r, n = self.block_size, self.random_blocks, positions // self.block_size
        return 2 * b * positions + 2 * (4 + r) * b * b + (n - 4) * (5 + r) * b * b

    def terms(self, e, model, seq_len: int) -> None:
        """Multi-head attention's; past the threshold QKᵀ and AV as the block-sparse kernel executes them over the
        P = seq_len padded positions (the padding part states them): keys (5 + r)·b a query, scaled to the pairs."""
        start = len(e.out)
        super().terms(e, model, seq_len)
        if seq_len <= self.threshold:
            return
        keys, n = (5 + self.random_blocks) * self.block_size, e.n
        share = Fraction(self.sparse_pairs(seq_len), keys * seq_len)
        for i in range(start, len(e.out)):
            t = e.out[i]
            if t.name in ("attn.scores", "attn.values"):
                heads, _, dim = t.shape
                e.out[i] = replace(t, shape=(heads, keys, dim), macs=n * heads * keys * dim, select="pairs", positions=share)
            elif t.name == "attn.softmax":
                e.out[i] = replace(t, elementwise=t.elementwise // seq_len * keys, scores=t.scores // seq_len * keys, positions=share)

    def cached_tokens(self, tokens: int) -> int:
        return tokens

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        """Full attention's up to the threshold. Past it (one form, flash or not), what the block-sparse kernel keeps
        of the sequence padded to P, 16-bit, as autograd saves it in the reference module, in every head: each block
        of scaled queries (P rows in all, in place of Q a token), the softmax output (a score a pair), the keys and
        values gathered for every row of blocks but the first and last (which read K and V as they are, padded to P),
        (pairs − 2·b·P) / b keys of head_dim each."""
        if seq_len <= self.threshold:
            return super().score_bytes(model, seq_len, flash)
        b, h, hd = self.block_size, self.n_heads, self.head_dim
        p = -(-seq_len // b) * b
        pairs = self.sparse_pairs(p)
        gathered = 2 * hd * (pairs - 2 * b * p) // b
        return 2 * h * (p * hd + pairs + gathered + 2 * hd * (p - seq_len)) - 2 * seq_len * h * hd

    def tensor_parallel(self, module, rank: int, tp: int):
        raise NotImplementedError("BigBird's block-sparse attention: no tensor-parallel form here")

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import torch
    from torch.nn import functional as F

    from ._fused import _MASKS
    from .attention import _module as attention_module

    class BlockSparse(attention_module()):
        """Multi-head attention whose ``attend`` runs BigBird's blocks past the threshold: the first and last blocks of
        queries against every key, the second and second-last against 4 + r blocks, the middle ones against 5 + r
        (three sliding, the first and last, r others; here the r blocks halfway round the sequence from it)."""

        def __init__(self, spec: BigBirdAttention, model, causal: bool):
            super().__init__(spec, model, causal)
            self.block, self.random, self.threshold = spec.block_size, spec.random_blocks, spec.threshold

        def part(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            probs = self.scores(q * q.shape[-1] ** -0.5, k.transpose(-2, -1)).softmax(dim=-1)
            return self.values(probs, v)

        def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            b, h, s, hd = q.shape
            if s <= self.threshold:
                return super().attend(q, k, v, x)
            size, r = self.block, self.random
            p = -(-s // size) * size  # whole blocks (the padding part has padded a model's sequence already)
            q, k, v = (F.pad(t, (0, 0, 0, p - s)) for t in (q, k, v))
            n = p // size
            qb, kb, vb = (t.view(b, h, n, size, hd) for t in (q, k, v))

            def others(i: int) -> list[int]:
                return [(i + n // 2 + j) % n for j in range(r)]

            def rows(name: str, blocks: list[list[int]]):  # (B, h, rows, len · b, hd) of each row's key blocks
                key = ("bigbird", name, n, r, str(q.device))
                if key not in _MASKS:  # an index table built once, kept with the kernels' mask tables
                    _MASKS[key] = torch.tensor(blocks, device=q.device)
                index = _MASKS[key]
                return (t[:, :, index].reshape(b, h, len(blocks), -1, hd) for t in (kb, vb))

            first = self.part(qb[:, :, 0], k, v)
            last = self.part(qb[:, :, -1], k, v)
            k2, v2 = rows("second", [[0, 1, 2, n - 1, *others(1)]])
            second = self.part(qb[:, :, 1:2], k2, v2)
            k2, v2 = rows("second_last", [[0, n - 3, n - 2, n - 1, *others(n - 2)]])
            second_last = self.part(qb[:, :, n - 2 : n - 1], k2, v2)
            km, vm = rows("middle", [[i - 1, i, i + 1, 0, n - 1, *others(i)] for i in range(2, n - 2)])
            middle = self.part(qb[:, :, 2 : n - 2], km, vm)
            out = torch.cat([first[:, :, None], second, middle, second_last, last[:, :, None]], dim=2)
            return out.reshape(b, h, p, hd)[:, :, :s]

    return BlockSparse
