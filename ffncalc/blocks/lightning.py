"""Lightning attention: linear attention with a fixed per-head exponential decay, computed block by block (Qin et
al. 2024, "Lightning Attention-2", arXiv:2401.04658, Algorithm 1; MiniMax 2025, "MiniMax-01: Scaling Foundation
Models with Lightning Attention", arXiv:2501.08313, §2.2), as transformers instantiates it in MiniMax (transformers
5.23.0, models/minimax/modeling_minimax.py, ``MiniMaxLightningAttention``).

Per token, with h heads of width d_h and a fixed decay rate λ_j per head (a buffer, not a parameter):

    q, k, v = act(qkv_proj(x))            3·h·d_h   (one Linear, no bias; act: hidden_act, silu)
    S_t     = e^{−λ}·S_{t−1} + k_tᵀ v_t,   o_t = q_t S_t                          (S: d_h × d_h per head)
    out     = out_proj(sigmoid(output_gate(x)) ⊙ rmsnorm(o))                      (RMSNorm over all h·d_h, a weight)

The recurrence is counted in its blockwise form (Lightning Attention-2, Algorithm 1), as transformers' torch path and
the paper's kernel compute it. In a block of L tokens, per head, with D the L × L decay mask (e^{−λ(i−j)} for j ≤ i, 0
above):

    O_intra = ((Q Kᵀ) ∘ D) V                            scores, values   L × L × d_h each
    O_inter = (Q ∘ e^{−λ·i}) S                          state_read       L × d_h × d_h
    S      ← e^{−λL} S + (K ∘ e^{−λ(L−i)})ᵀ V           state_write      d_h × L × d_h

so that per token and head the multiply-adds are 2·L·d_h inside the block (the full L × L square; the causal
convention charges its lower triangle with the diagonal) and 2·d_h² against the state, whatever the block. The block
length L is the largest divisor of seq_len not above ``chunk_size`` (MiniMaxConfig.block_size, 256), so that every
block has the same length and the FLOPs per token are exact integers; transformers runs blocks of block_size and a
shorter last one, the same products whenever block_size divides seq_len or seq_len is at most block_size.

Decoding one token is the recurrence: its state is per sequence (``state_elements``), nothing per token.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS
from . import Block, register
from ._delta import activation_saved, chunk_length
from .dense_ffn import DenseActivation

OUT_NORM = Norm("rmsnorm")  # MiniMaxLightningAttention.norm: MiniMaxRMSNorm over h·d_h with a weight


@register
@dataclass(frozen=True)
class LightningAttention(Block):
    """Lightning attention (decayed linear attention, blockwise), with MiniMax's sigmoid output gate."""

    kind = "lightning"
    slot = "attention"
    summary = "lightning attention: decayed linear attention computed blockwise (Qin et al. 2024, MiniMax-01)"
    verify_note = (
        "lightning: the decayed linear attention in equal blocks of L, the largest divisor of seq_len not "
        "above chunk_size: QKᵀ and (QKᵀ∘D)V as attention over L keys (exact: the L×L square; causal: its "
        "triangle), and Q·S, Kᵀ·V once per token against the d_h × d_h state"
    )

    n_heads: Positive
    head_dim: Positive | None = None  # default d_model / n_heads
    activation: DenseActivation = "silu"  # on q, k and v (MiniMaxConfig.hidden_act)
    chunk_size: Positive = 256  # the longest block of the blockwise form (MiniMaxConfig.block_size)

    @property
    def inner(self) -> int:
        return self.n_heads * self.head_dim

    def resolve(self, d_model: int) -> LightningAttention:
        return replace(self, head_dim=self.head_dim if self.head_dim is not None else d_model // self.n_heads)

    def check(self, d_model: int) -> None:
        if self.head_dim is None and d_model % self.n_heads:
            raise SpecError(("n_heads",), f"{self.n_heads} heads do not divide d_model {d_model} (state head_dim to allow it)")

    def head_count(self) -> int:
        return self.n_heads

    def chunk_tokens(self) -> int:
        return self.chunk_size

    def describe(self) -> str:
        return f"lightning {self.n_heads} heads × {self.head_dim}, blocks of {self.chunk_size}"

    def facts(self) -> dict[str, object]:
        return {"heads": f"lightning {self.n_heads}"}

    def terms(self, e, model, seq_len: int) -> None:
        d, h, hd, n, inner = model.d_model, self.n_heads, self.head_dim, e.n, self.inner
        length = chunk_length(seq_len, self.chunk_size)
        e.linear("attn.qkv", d, 3 * inner, False, n)
        e.op("attn.qkv_act", n * 3 * inner * ACTIVATION_OPS[self.activation])
        # inside each block: attention over L keys (core_flops: exact the square, causal the triangle)
        e.term("attn.scores", "core", (h, length, hd), n, numel=0, macs=n * h * length * hd, grows=False)
        e.term("attn.values", "core", (h, length, hd), n, numel=0, macs=n * h * length * hd, grows=False)
        # against the state S (d_h × d_h per head): one "key" per token, the same in every convention
        for name in ("state_read", "state_write"):  # (Q ∘ e^{−λi})·S and (K ∘ e^{−λ(L−i)})ᵀ·V
            e.term(f"attn.{name}", "core", (h, 1, hd * hd), n, numel=0, macs=n * h * hd * hd, grows=False)
        # the decays: D over the block's square (a multiply per score), Q's and K's decays (a multiply per element),
        # intra + inter (an add per element), and per block the state's decay and update (2·d_h² per head, shared by
        # the block's L tokens, rounded up to a whole FLOP per token)
        e.op("attn.decay", n * (h * length + 3 * inner + -(-2 * h * hd * hd // length)))
        e.norm("attn.norm", OUT_NORM, inner, n)
        e.linear("attn.output_gate", d, inner, False, n)
        e.op("attn.gate", n * (ACTIVATION_OPS["sigmoid"] + 1) * inner)
        e.linear("attn.out", inner, d, False, n)

    def cache_elements(self, model) -> int:
        """Nothing grows with the context: the state is per sequence."""
        return 0

    def state_elements(self, model) -> int:
        """The state S, d_h × d_h in every head (transformers' linear cache, attn_weights_inter)."""
        return self.n_heads * self.head_dim * self.head_dim

    def kept_elements(self, model) -> int:
        """16-bit elements a token a training forward keeps with a lightning kernel (MiniMax's Lightning
        Attention-2 kernel, and flash-linear-attention's chunk_lightning_attn, which runs ChunkSimpleGLAFunction
        with a fixed decay a head: fla/ops/simple_gla/chunk.py, ``ctx.save_for_backward(q, k, v, g, g_gamma,
        initial_state)``, g None, the states recomputed in backward): the input (d, for qkv's and the gate's weight
        gradients); what the activation keeps of qkv's output (3·h·d_h for SiLU, its input: ``activation_saved``);
        q, k and v made contiguous by the kernel's input_guard (3·h·d_h); the kernel's output, the norm's input
        (h·d_h), and the norm's fp32 inverse RMS (2, a fused RMSNorm over all h·d_h); the norm's output and the
        gate's sigmoid output (h·d_h each, the product's gradient); the gated output (h·d_h, out's input)."""
        inner = self.inner
        return model.d_model + activation_saved(self.activation, 3 * inner) + 3 * inner + inner + 2 + 3 * inner

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import math

    import torch
    from torch import nn

    from ._torch import ACTIVATIONS, Linear, MatMul, RMSNorm, lower_apply, lower_product

    class Lightning(nn.Module):
        """Blockwise decayed linear attention: intra-block attention over L keys, the state between blocks."""

        def __init__(self, spec: LightningAttention, model, causal: bool):
            super().__init__()
            d = model.d_model
            self.heads, self.head_dim, self.chunk_size, self.causal = spec.n_heads, spec.head_dim, spec.chunk_size, causal
            self.act = ACTIVATIONS[spec.activation]
            self.qkv = Linear(d, 3 * spec.inner, bias=False)
            self.scores = MatMul()
            self.values = MatMul()
            self.state_read = MatMul()
            self.state_write = MatMul()
            self.norm = RMSNorm(spec.inner)  # torch's; inside fused() as a fused kernel keeps it
            self.output_gate = Linear(d, spec.inner, bias=False)
            self.out = Linear(spec.inner, d, bias=False)
            base = 2.0 ** (-8.0 / spec.n_heads)  # MiniMax's slopes: base^(j+1) per head
            self.register_buffer("slope", base ** torch.arange(1, spec.n_heads + 1, dtype=torch.float32), persistent=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            from . import _fused

            b, s, _ = x.shape
            h, hd = self.heads, self.head_dim
            qkv = self.act(self.qkv(x)).view(b, s, h, 3 * hd)
            if _fused.active():  # the kernel keeps q, k and v, each made contiguous (FLA's input_guard)
                o = _fused.kernel(self.mix, *qkv.split(hd, dim=-1))
            else:
                o = self.mix(*qkv.split(hd, dim=-1))
            return self.out(torch.sigmoid(self.output_gate(x)) * self.norm(o))

        def mix(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            """(B, s, h, d_h) queries, keys and values -> (B, s, h·d_h): the blockwise decayed linear attention."""
            b, s, h, hd = q.shape
            length = chunk_length(s, self.chunk_size)
            n = s // length
            q, k, v = (t.transpose(1, 2).reshape(b, h, n, length, hd) for t in (q, k, v))
            pos = torch.arange(1, length + 1, device=q.device, dtype=q.dtype)
            slope = self.slope.to(q.device, q.dtype)[:, None]  # (h, 1)
            q_decay = torch.exp(-slope * pos)[None, :, None, :, None]  # (1, h, 1, L, 1)
            k_decay = torch.exp(-slope * (length - pos))[None, :, None, :, None]
            gap = pos[:, None] - pos[None, :]
            mask = torch.exp(-slope[:, :, None] * gap.clamp(min=0)) * (gap >= 0)  # (h, L, L), zero above
            block = max(1, math.isqrt(length))
            if self.causal:
                scores = lower_product(self.scores, q, k, block)
                intra = lower_apply(self.values, scores * mask[None, :, None], v, block)
            else:
                scores = self.scores(q, k.transpose(-2, -1))  # (B, h, n, L, L): the full square
                intra = self.values(scores * mask[None, :, None], v)
            if q.is_meta:  # no values to carry: the loop's products, each batched over the blocks (the same FLOPs)
                outs = intra + self.state_read(q * q_decay, q.new_zeros(b, h, n, hd, hd))
                self.state_write((k * k_decay).transpose(-2, -1), v)
            else:
                state = q.new_zeros(b, h, hd, hd)
                outs = []
                for c in range(n):  # the state between blocks, one after the other
                    outs.append(intra[:, :, c] + self.state_read(q[:, :, c] * q_decay[:, :, 0], state))
                    state = state * torch.exp(-slope * length)[None, :, :, None] + self.state_write(
                        (k[:, :, c] * k_decay[:, :, 0]).transpose(-2, -1), v[:, :, c]
                    )
                outs = torch.stack(outs, dim=2)
            return outs.reshape(b, h, s, hd).transpose(1, 2).reshape(b, s, h * hd)

    return Lightning
