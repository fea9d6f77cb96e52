"""Staggered block-local attention with global tokens (Phang et al. 2022, "Investigating Efficiently Extending
Transformers for Long Input Summarization", §3: PEGASUS-X), as transformers' PegasusXGlobalLocalAttention and
PegasusXEncoderLayer compute it.

The encoder carries G global tokens (num_global_tokens, a learned table of their own) beside the L positions of its
source padded to whole blocks of b (block_size); its stack runs over L + G rows, the global tokens through the same
q, k, v, out_proj, fc1 and fc2 as the source's positions, with a LayerNorm of their own before the attention
(global_self_attn_layer_norm) and the layer's final_layer_norm before the FFN. In each layer:

- the global tokens' queries meet every key, the G global tokens' and the L' local positions': G·(G + L') pairs;
- each local position's query meets the G global keys and the b keys of its own block: L'·(G + b) pairs;
- AV the same pairs.

With stagger_local_blocks every odd layer (i % 2 == 1) pads the local positions by b / 2 on either side before the
attention (pad_local_tokens), L' = L + b, so its blocks straddle the even layers' and its projections run over the b
padding rows too; elsewhere L' = L.

The products are those the einsums execute, in every view (``select`` "pairs"); a run of layers counts its odd layers
from where it starts."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

from ..model.schema import NonNegative, Positive, SpecError
from ..model.terms import SOFTMAX_OPS
from . import register
from .attention import Attention

UNSUPPORTED = ("gate", "sinks", "window", "chunk", "kv_shared", "k_eq_v", "v_norm", "sub_norm")


@register
@dataclass(frozen=True)
class GlobalLocalAttention(Attention):
    """Block-local attention over a padded sequence, with global tokens every position meets and that meet every
    position; every other layer's blocks staggered by half a block (PEGASUS-X)."""

    kind = "global_local"
    slot = "attention"
    summary = "block-local attention with global tokens, blocks staggered every other layer (PEGASUS-X)"
    verify_note = (
        "global_local: the reference module is an unstaggered layer, its first global_tokens rows the global tokens "
        "(a staggered odd layer's b padding rows are counted as PegasusXGlobalLocalAttention runs them)"
    )

    block_size: Positive = 512  # PegasusXConfig.block_size
    global_tokens: NonNegative = 32  # num_global_tokens: rows of the stack beyond the padded source
    stagger: bool = True  # stagger_local_blocks: odd layers' blocks offset by half a block

    def check(self, d_model: int) -> None:
        super().check(d_model)
        for name in UNSUPPORTED:
            if getattr(self, name) not in (None, False):
                raise SpecError((name,), f"{name} is not an option of global-local attention")
        if self.n_kv_heads not in (None, self.n_heads) or self.qk_norm != "none":
            raise SpecError(("n_kv_heads",), "global-local attention has one key and value head a query head, without q/k norms")
        if self.stagger and self.block_size % 2:
            raise SpecError(("block_size",), f"staggered blocks pad half a block: block_size {self.block_size} is odd")

    def describe(self) -> str:
        staggered = ", staggered" if self.stagger else ""
        return f"{self.n_heads} heads × {self.head_dim}, blocks of {self.block_size:,}, {self.global_tokens} global tokens{staggered}"

    def terms(self, e, model, seq_len: int) -> None:
        """Over ``seq_len`` = L + G rows (the padded source and the global tokens): q, k, v and out_proj over every row
        and, in each staggered layer, the b padding rows too; QKᵀ, the softmax and AV over the pairs above."""
        start = len(e.out)
        super().terms(e, model, seq_len)
        g, b, n, h, hd = self.global_tokens, self.block_size, e.n, self.n_heads, self.head_dim
        local = seq_len - g
        first = e.layers[0] if e.layers else 0
        odd = sum(i % 2 for i in range(first, first + n)) if self.stagger else 0  # staggered layers in the run
        rows = Fraction(n * seq_len + odd * b, n * seq_len)  # the projections' rows, per row of the stack
        # per layer G·(G + L') + L'·(G + b), summed over the run (L' = L, or L + b in a staggered layer)
        pairs = n * g * g + (2 * g + b) * (n * local + odd * b)
        keys = g + b  # a local query's keys: the shape's, the pairs all the positions
        scale = Fraction(pairs, keys * n * seq_len)
        for i in range(start, len(e.out)):
            t = e.out[i]
            if t.component in ("attn.q", "attn.k", "attn.v", "attn.o"):
                e.out[i] = replace(t, positions=rows)
            elif t.name in ("attn.scores", "attn.values"):
                e.out[i] = replace(t, shape=(h, keys, hd), macs=n * h * keys * hd, select="pairs", positions=scale)
            elif t.name == "attn.softmax":  # per score, as softmax attention's (SOFTMAX_OPS)
                scores = n * h * keys
                e.out[i] = replace(t, elementwise=SOFTMAX_OPS * scores, scores=scores, positions=scale)
        # the global tokens' LayerNorm before the attention (global_self_attn_layer_norm): its parameters; its work is
        # among the layer's first norm's, counted over all L + G rows
        e.norm("attn.global_norm", model.norm, model.d_model, n)
        e.out[-1] = replace(e.out[-1], elementwise=0)

    def cached_tokens(self, tokens: int) -> int:
        return min(tokens, self.block_size + self.global_tokens)

    def kept_elements(self, model) -> int:
        """Multi-head attention's per row of the stack, the global tokens among the rows, as the reference module saves
        them: the input, K and V (the global queries' products read them whole), the scaled queries (the global
        tokens' and the local positions', in place of Q) and the heads' output: d + 4·h·hd."""
        return super().kept_elements(model)

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        """No fused kernel runs it (one form, flash or not): what the reference module saves of an unstaggered layer,
        16-bit, per head, over L = seq_len − G local positions in n = L / b blocks: the global queries' softmax (G·(G + L)
        scores), each block's gathered keys and values (G + b rows of head_dim each, both) and its softmax (L·(G + b)
        scores in all)."""
        g, b, hd = self.global_tokens, self.block_size, self.head_dim
        local = seq_len - g
        blocks = local // b
        return 2 * self.n_heads * (g * seq_len + 2 * blocks * (g + b) * hd + local * (g + b))

    def tensor_parallel(self, module, rank: int, tp: int):
        raise NotImplementedError("global-local attention: no tensor-parallel form here")

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import torch

    from ._torch import make_norm
    from .attention import _module as attention_module

    class GlobalLocal(attention_module()):
        """Multi-head attention whose ``attend`` runs PegasusXGlobalLocalAttention.compute_global_attention_representations
        and compute_local_attention_representations over its input's rows, the first global_tokens of them the global
        tokens: the global queries against every key, each block of b local queries against the global keys and its
        own block's, one softmax over both. An unstaggered layer's; global_norm's weights are the layer's
        (PegasusXEncoderLayer.global_self_attn_layer_norm), its work the layer's first norm's."""

        def __init__(self, spec: GlobalLocalAttention, model, causal: bool):
            super().__init__(spec, model, causal)
            self.global_tokens, self.block = spec.global_tokens, spec.block_size
            self.global_norm = make_norm(model.norm.layer, model.d_model)

        def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            b, h, s, hd = q.shape
            g, size = self.global_tokens, self.block
            q = q * hd**-0.5
            # the global tokens' queries and the local positions' each contiguous, as PegasusXGlobalLocalAttention
            # projects them (_shape)
            gq, lq = (part.clone(memory_format=torch.contiguous_format) for part in (q[:, :, :g], q[:, :, g:]))
            if (s - g) % size:
                raise NotImplementedError(f"{s - g} local positions: not whole blocks of {size} (PEGASUS-X's encoder pads them)")
            n = (s - g) // size
            # the global tokens: softmax(Q_g [K_g; K_l]ᵀ) [V_g; V_l]
            probs = self.scores(gq, k.transpose(-2, -1)).softmax(dim=-1)
            global_out = self.values(probs, v)
            # each block of local queries against the global keys and its own block's, one softmax over both: the
            # keys and values each block reads gathered beside it
            lq = lq.unflatten(2, (n, size))
            keys, values = (
                torch.cat([t[:, :, :g, None].transpose(2, 3).expand(b, h, n, g, hd), t[:, :, g:].unflatten(2, (n, size))], 3)
                for t in (k, v)
            )
            probs = self.scores(lq, keys.transpose(-2, -1)).softmax(dim=-1)
            local_out = self.values(probs, values).flatten(2, 3)
            return torch.cat([global_out, local_out], dim=2)

    return GlobalLocal
