"""BigBird's block-sparse attention (Zaheer et al. 2020, "Big Bird: Transformers for Longer Sequences", §2 and App. D:
global, sliding and random blocks), as transformers' BigBirdPegasusBlockSparseAttention computes it in an encoder
(bidirectional) over a sequence padded to whole blocks of b (block_size), nb blocks of them, with r random blocks
(num_random_blocks):

- the first and the last block's queries meet every key: 2·b·L pairs;
- the second and the second-last block's queries meet the first three (last three) blocks, the last (first) block and
  their r random blocks: 2·b·(4 + r)·b pairs;
- each of the nb − 4 middle blocks' queries meets its block and the two beside it, the first and the last block and
  its r random blocks: (nb − 4)·b·(5 + r)·b pairs;
- AV the same pairs.

Which blocks are random changes no count (in eval transformers draws none: every random block is block 0). Where the
sequence holds (5 + 2r)·b tokens or fewer (BigBirdPegasusEncoder.forward: max_tokens_to_attend) the encoder runs full
attention instead ("original_full"), unpadded: every query meets every key. The products are those the kernel executes,
in every view (``select`` "pairs")."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from ..model.schema import Positive, SpecError
from ..model.terms import SOFTMAX_OPS
from . import register
from .attention import Attention

UNSUPPORTED = ("gate", "sinks", "window", "chunk", "kv_shared", "k_eq_v", "v_norm", "sub_norm")


@register
@dataclass(frozen=True)
class BigBirdAttention(Attention):
    """Bidirectional attention over global, sliding and random blocks (BigBird), full below its shortest sparse
    sequence."""

    kind = "bigbird"
    slot = "attention"
    summary = "block-sparse attention over global, sliding and random blocks, full on short sequences (BigBird-Pegasus)"
    verify_note = "bigbird: no reference module (counted as BigBirdPegasusBlockSparseAttention runs in eval)"

    block_size: Positive = 64  # BigBirdPegasusConfig.block_size
    random_blocks: Positive = 3  # num_random_blocks

    @property
    def full_below(self) -> int:
        """The longest sequence run with full attention: (5 + 2r)·b (max_tokens_to_attend)."""
        return (5 + 2 * self.random_blocks) * self.block_size

    def check(self, d_model: int) -> None:
        super().check(d_model)
        for name in UNSUPPORTED:
            if getattr(self, name) not in (None, False):
                raise SpecError((name,), f"{name} is not an option of BigBird attention")
        if self.n_kv_heads not in (None, self.n_heads) or self.qk_norm != "none":
            raise SpecError(("n_kv_heads",), "BigBird attention has one key and value head a query head, without q/k norms")

    def describe(self) -> str:
        return f"{self.n_heads} heads × {self.head_dim}, blocks of {self.block_size}, {self.random_blocks} random"

    def pairs(self, seq_len: int) -> int:
        """Query-key pairs of one head over a sequence of whole blocks (the first and last blocks', the second and
        second-last's, the middle blocks')."""
        b, r = self.block_size, self.random_blocks
        return b * (2 * seq_len + 2 * (4 + r) * b + (seq_len // b - 4) * (5 + r) * b)

    def terms(self, e, model, seq_len: int) -> None:
        """As multi-head attention over the whole square where the sequence is short enough; else QKᵀ, the softmax and
        AV over the block-sparse pairs of the sequence (its model pads it to whole blocks), per token."""
        start = len(e.out)
        super().terms(e, model, seq_len)
        if seq_len <= self.full_below:
            return
        n, h, hd = e.n, self.n_heads, self.head_dim
        keys = -(-seq_len // self.block_size) * self.block_size  # whole blocks (its encoder pads to them)
        scale = Fraction(self.pairs(keys), keys * seq_len)  # the pairs, as queries of all the padded keys
        for i in range(start, len(e.out)):
            t = e.out[i]
            if t.name in ("attn.scores", "attn.values"):
                e.out[i] = replace(t, shape=(h, keys, hd), macs=n * h * keys * hd, select="pairs", positions=scale)
            elif t.name == "attn.softmax":
                scores = n * h * keys
                e.out[i] = replace(t, elementwise=SOFTMAX_OPS * scores, scores=scores, positions=scale)

    def kept_elements(self, model) -> int:
        """Multi-head attention's: the input, Q, K, V and the heads' output (d + 4·h·hd) a position."""
        return super().kept_elements(model)

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        """Eager: 5 bytes a score (the softmax output, its dropout mask and the dropout's output, Korthikanti et al. 2022
        §4.1) over the square of a short sequence or the block-sparse pairs, in every head; flash: an fp32 log-sum-exp a
        query and head."""
        if flash:
            return 4 * self.n_heads * seq_len
        padded = -(-seq_len // self.block_size) * self.block_size
        pairs = seq_len * seq_len if seq_len <= self.full_below else self.pairs(padded)
        return 5 * self.n_heads * pairs
