"""Kimi Delta Attention (KDA), the linear attention of Kimi Linear (Kimi Team 2025, "Kimi Linear: An Expressive,
Efficient Attention Architecture", arXiv:2510.26692 §3), as transformers instantiates it (transformers 5.23.0,
models/kimi_linear/modeling_kimi_linear.py, ``KimiLinearDeltaAttention`` and ``KimiLinearForgetGate``).

The gated delta rule of Gated DeltaNet with a decay per key channel instead of one per head. Per token, with H heads
of d_k = d_v = head_dim (queries, keys and values alike), conv_dim = 3·H·d_k:

    q, k, v    = q_proj(x), k_proj(x), v_proj(x)              H·d_k each                 (Linears, no bias)
    q, k, v    = silu(conv1d(q, k, v))                        a causal depthwise conv over conv_dim channels, kernel K,
                                                              no bias; its activation is the model's hidden_act
    q, k       = l2norm(q), l2norm(k);  q = q / √d_k          (per head)
    β          = sigmoid(b_proj(x))                           one per head
    α          = -exp(A_log) · softplus(f_b(f_a(x)) + dt_bias)  one per key channel: f_a d -> d_k, f_b d_k -> H·d_k,
                                                              dt_bias H·d_k, A_log one per head
    S_t        = (I − β_t k_t k_tᵀ) Diag(e^{α_t}) S_{t-1} + β_t k_t v_tᵀ,   o_t = S_tᵀ q_t   (S: d_k × d_v per head)
    out        = o_proj(rmsnorm(o) · sigmoid(g_b(g_a(x))))   the norm over d_v per head, one shared weight; g_a d ->
                                                              d_k (head_dim), g_b head_dim -> H·d_v

The recurrence (the paper's eq. 1 and §3.1) is counted in its chunkwise form (the paper's §3.2, the WY/UT
representation of Yang et al. 2024b, "Parallelizing Linear Transformers with the Delta Rule over Sequence Length",
arXiv:2406.06484 §3), as flash-linear-attention's ``chunk_kda`` and transformers' torch fallback
``chunk_kimi_delta_attention`` compute it. In a chunk of L tokens, per head, with γ_i ∈ R^{d_k} the cumulative
log-decay of token i inside the chunk (channel by channel) and Γ = e^{γ}:

    A      = strictly_lower((K_β ∘ Γ)(K ∘ Γ⁻¹)ᵀ)                    kkt      L × L × d_k
    [U | W] = (I + A)⁻¹ [V_β | K_β ∘ Γ]  by forward substitution     solve    L × L × (d_k + d_v)
    P      = (Q ∘ Γ)(K ∘ Γ⁻¹)ᵀ, lower with the diagonal              qk       L × L × d_k
    V'     = U − W S                                                state_correct  L × d_k × d_v
    O      = (Q ∘ Γ) S + P V'                                       state_read, values  L × d_k × d_v, L × L × d_v
    S      ← Γ_L ∘ S + (K ∘ e^{γ_L − γ})ᵀ V'                        state_write    d_k × L × d_v

The per-channel decay enters the two products A and P through their operands (the exact Σ_c k_i[c]·k_j[c]·
e^{γ_i[c] − γ_j[c]} as a product of two L × d_k matrices), so that the matrix work is Gated DeltaNet's: per token and
head L·(3·d_k + 2·d_v) multiply-adds inside the chunk (the full L × L square; the causal convention charges its
lower triangle with the diagonal, (L + 1)/2 instead of L) and 3·d_k·d_v against the state. The chunk length L is the
largest divisor of seq_len not above ``chunk_size`` (64, FLA's and transformers' chunk), so that every chunk has the
same length and the FLOPs per token are exact integers. transformers' torch fallback pads the sequence to a multiple
of 64 and forms A and P as broadcast products summed over d_k (the same multiply-adds, not a matmul that
FlopCounterMode sees); FLA forms them blockwise on tensor cores and inverts (I + A) blockwise. The chunkwise form's
terms and reference are ``_delta.py``'s, shared with Gated DeltaNet.

Decoding one token is the recurrence: its state is per sequence (``state_elements``), nothing per token.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS
from . import Block, register
from ._delta import L2NORM_OPS, SOFTPLUS_OPS, chunk_length, conv_activation_kept, emit_delta_rule
from .dense_ffn import DenseActivation

GATED_NORM = Norm("rmsnorm")  # KimiLinearRMSNormGated: an RMSNorm with a weight, whatever the model's norm
# per key channel and token: γ's running sum; e^γ and e^{-γ}; K_β∘e^γ, K∘e^{-γ} and Q∘e^γ; K∘e^{γ_L − γ} (a subtract,
# an exp and a multiply)
DECAY_OPS = 1 + 2 + 3 + 3


@register
@dataclass(frozen=True)
class KimiDeltaAttention(Block):
    """Kimi Delta Attention: the gated delta rule with a decay per key channel, chunkwise (arXiv:2510.26692)."""

    kind = "kda"
    slot = "attention"
    summary = "Kimi Delta Attention: the delta rule with a channel-wise decay, chunkwise (Kimi Linear, arXiv:2510.26692)"
    verify_note = (
        "kda: the delta rule chunkwise in equal chunks of L, the largest divisor of seq_len not above "
        "chunk_size: (K_β∘Γ)(K∘Γ⁻¹)ᵀ, (Q∘Γ)(K∘Γ⁻¹)ᵀ, the UT forward substitution and PV' as attention over L "
        "keys (exact: the L×L square; causal: its triangle), and W·S, Q·S, Kᵀ·V' once per token; "
        "transformers' torch fallback pads to 64 and forms A and P as broadcast sums, which "
        "FlopCounterMode does not count"
    )

    n_heads: Positive  # KimiLinearConfig.linear_num_heads (linear_attn_config.num_heads)
    head_dim: Positive  # linear_head_dim (linear_attn_config.head_dim): queries, keys and values alike
    conv_kernel: Positive = 4  # linear_conv_kernel_dim (linear_attn_config.short_conv_kernel_size)
    activation: DenseActivation = "silu"  # after the convolution (KimiLinearConfig.hidden_act)
    chunk_size: Positive = 64  # the longest chunk of the chunkwise form (FLA's and transformers' chunk_size)
    # the forget gate's and the output gate's projections straight to H·head_dim (f and g: BailingHybridForgetGate's
    # f_proj and BailingHybridDeltaAttention's g_proj) instead of Kimi Linear's low-rank pairs through head_dim
    full_gates: bool = False
    # the bounded decay α = lower_bound · sigmoid(exp(A_log) · (f + dt_bias)) (BailingHybridConfig.kda_safe_gate) in
    # place of -exp(A_log) · softplus(f + dt_bias): a multiply, a sigmoid and a multiply per channel
    safe_gate: bool = False

    @property
    def dim(self) -> int:
        """H·head_dim: the width of q, k and v each, of the per-channel decay, and of the output."""
        return self.n_heads * self.head_dim

    @property
    def conv_dim(self) -> int:
        """Channels of the convolution: q, k and v (KimiLinearDeltaAttention.conv_dim = 3·H·head_dim)."""
        return 3 * self.dim

    def head_count(self) -> int:
        return self.n_heads

    def chunk_tokens(self) -> int:
        return self.chunk_size

    def describe(self) -> str:
        return f"KDA {self.n_heads} heads × {self.head_dim}"

    def facts(self) -> dict[str, object]:
        return {"heads": f"KDA {self.n_heads}/{self.n_heads}"}

    def terms(self, e, model, seq_len: int) -> None:
        d, n, h, dk = model.d_model, e.n, self.n_heads, self.head_dim
        dv, width, c = dk, self.dim, self.conv_dim
        length = chunk_length(seq_len, self.chunk_size)
        for name in ("q", "k", "v"):
            e.linear(f"attn.{name}", d, width, False, n, heads=h)
        # Depthwise Conv1d(conv_dim, conv_dim, K, groups=conv_dim, bias=False): weight (conv_dim, 1, K), K
        # multiply-adds per channel and token
        e.term("attn.conv1d.weight", "weight", (c, 1, self.conv_kernel), n, macs=n * c * self.conv_kernel)
        e.op("attn.conv_act", n * c * ACTIVATION_OPS[self.activation])
        # l2norm of q and k over d_k in every head, then q / √d_k
        e.op("attn.qk_l2norm", n * (2 * L2NORM_OPS + 1) * width)
        # β = sigmoid(b_proj x), one per head
        e.linear("attn.b", d, h, False, n)
        # the forget gate: f_b(f_a x) + dt_bias (the add is dt_bias's), a softplus, times -exp(A_log) per channel;
        # exp(A_log) is once per forward, not per token
        if self.full_gates:
            e.linear("attn.f", d, width, False, n)
        else:
            e.linear("attn.f_a", d, dk, False, n)
            e.linear("attn.f_b", dk, width, False, n)
        e.term("attn.dt_bias", "bias", (width,), n, elementwise=n * width)
        e.term("attn.A_log", "bias", (h,), n)
        decay = ACTIVATION_OPS["sigmoid"] + 2 if self.safe_gate else SOFTPLUS_OPS + 1
        e.op("attn.gates", n * (h * ACTIVATION_OPS["sigmoid"] + width * decay))
        emit_delta_rule(e, "attn", n, h, dk, dv, length, n * DECAY_OPS * width)
        # the output gate g_b(g_a x), then KimiLinearRMSNormGated: an RMSNorm over d_v in every head with one shared
        # weight, times sigmoid(gate)
        if self.full_gates:
            e.linear("attn.g", d, width, False, n)
        else:
            e.linear("attn.g_a", d, dk, False, n)
            e.linear("attn.g_b", dk, width, False, n)
        e.term(
            "attn.o_norm",
            "norm",
            (dv,),
            n,
            numel=dv * GATED_NORM.params_per_feature,
            elementwise=n * (GATED_NORM.ops(width) + (ACTIVATION_OPS["sigmoid"] + 1) * width),
        )
        e.linear("attn.o", width, d, False, n)

    def cache_elements(self, model) -> int:
        """Nothing grows with the context: the state is per sequence."""
        return 0

    def state_elements(self, model) -> int:
        """The recurrent state S, d_k × d_v in every head (transformers' recurrent_states, FLA's final_state
        [N, H, K, V]), and the last K-1 inputs of the convolution, conv_dim of each, which the next token's
        convolution reads."""
        return self.n_heads * self.head_dim * self.head_dim + self.conv_dim * (self.conv_kernel - 1)

    def kept_elements(self, model) -> int:
        """16-bit elements a token a training forward keeps as FLA's KimiDeltaAttention runs it (fla/layers/kda.py:
        chunk_kda with use_qk_l2norm_in_kernel and use_gate_in_kernel; transformers' Kimi Linear calls the same
        kernel): the projections' input (d); the convolution's input (conv_dim: causal_conv1d_fn keeps its input
        alone, the SiLU fused in); ChunkKDAFunction's saved tensors (fla/ops/kda/chunk.py: q, q_rstd, k, k_rstd, v,
        g_cumsum, the raw g, beta, Aqk, Akk; w, u, qg, kg, v_new and h recomputed): q and k after the l2norm (2·H·d_k)
        with their fp32 reciprocal norms (2 · 2·H), v made contiguous (H·d_v), the decay's running sum in each chunk
        in fp32 (2·H·d_k), the gate's raw input f(x) as given (H·d_k; its softplus, A_log and dt_bias in the kernel),
        β = sigmoid(b) (H) and Aqk and Akk, one row of chunk_size a token and head each in bf16 (2·H·chunk_size);
        f_a's and g_a's outputs (2·d_k) for f_b's and g_b's weight gradients (none with full_gates: f and g read the
        input); the gated norm as FusedRMSNormGated keeps it (the kernel's output (H·d_v), the gate z (H·d_v) and an
        fp32 inverse RMS a head (2·H)); o_proj's input (H·d_v). An activation other than SiLU after the convolution
        keeps its own (``conv_activation_kept``)."""
        h, width = self.n_heads, self.dim
        kernel = 2 * width + 4 * h + width + 2 * width + width + h + 2 * h * self.chunk_size
        low_rank = 0 if self.full_gates else 2 * self.head_dim
        norm = 2 * width + 2 * h
        conv = self.conv_dim + conv_activation_kept(self.activation, self.conv_dim)
        return model.d_model + conv + kernel + low_rank + norm + width

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import math

    import torch
    from torch import nn
    from torch.nn import functional as F

    from ._delta import add_products, delta_rule
    from ._torch import ACTIVATIONS, CausalConv1d, GatedRMSNorm, Linear

    def l2norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
        return x / torch.sqrt((x * x).sum(-1, keepdim=True) + eps)  # FLA's l2norm, as transformers' KDA writes it

    def decay(raw: torch.Tensor, a_log: torch.Tensor, dt_bias: torch.Tensor) -> torch.Tensor:
        a = (raw + dt_bias).view(*raw.shape[:2], a_log.shape[0], -1)
        return -torch.exp(a_log)[:, None] * F.softplus(a)

    def decay_safe(raw: torch.Tensor, a_log: torch.Tensor, dt_bias: torch.Tensor) -> torch.Tensor:
        """BailingHybridForgetGate with kda_safe_gate: bounded below by kda_lower_bound (-5)."""
        a = (raw + dt_bias).view(*raw.shape[:2], a_log.shape[0], -1)
        return -5.0 * torch.sigmoid(torch.exp(a_log)[:, None] * a)

    class KimiDeltaAttentionModule(nn.Module):
        """KimiLinearDeltaAttention's parameters under our names (q, k, v, o for q_proj, k_proj, v_proj, o_proj; f_a,
        f_b, dt_bias, A_log for its forget gate's; b, g_a, g_b for b_proj, g_a_proj, g_b_proj; with full_gates f and g
        for BailingHybridDeltaAttention's f_proj and g_proj), with the delta rule in the chunkwise form of the block's
        docstring, every product a MatMul module."""

        def __init__(self, spec: KimiDeltaAttention, model, causal: bool):
            super().__init__()
            d, h, dk = model.d_model, spec.n_heads, spec.head_dim
            self.h, self.dk, self.chunk_size, self.causal = h, dk, spec.chunk_size, causal
            self.act = ACTIVATIONS[spec.activation]
            self.q, self.k, self.v = (Linear(d, spec.dim, bias=False) for _ in range(3))
            self.conv1d = CausalConv1d(spec.conv_dim, spec.conv_kernel, False)
            self.b = Linear(d, h, bias=False)
            self.full_gates, self.safe_gate = spec.full_gates, spec.safe_gate
            if spec.full_gates:
                self.f = Linear(d, spec.dim, bias=False)
            else:
                self.f_a = Linear(d, dk, bias=False)
                self.f_b = Linear(dk, spec.dim, bias=False)
            self.dt_bias = nn.Parameter(torch.zeros(spec.dim))
            self.A_log = nn.Parameter(torch.zeros(h))
            add_products(self)  # kkt, solve, qk, values, state_correct, state_read, state_write
            if spec.full_gates:
                self.g = Linear(d, spec.dim, bias=False)
            else:
                self.g_a = Linear(d, dk, bias=False)
                self.g_b = Linear(dk, spec.dim, bias=False)
            self.o_norm = GatedRMSNorm(dk, gate="sigmoid")
            self.o = Linear(spec.dim, d, bias=False)

        def fused(self, x: torch.Tensor) -> torch.Tensor:
            """As FLA's KimiDeltaAttention runs it in training (fla/layers/kda.py): the convolution by causal-conv1d
            (the SiLU fused), β = sigmoid(b), chunk_kda with the l2norm and the gate in the kernel (use_gate_in_kernel:
            f's raw output, A_log and dt_bias go in), which ``_fused.delta_rule`` keeps as it does, and the gated
            norm as FusedRMSNormGated."""
            from . import _fused

            b_, s, _ = x.shape
            h, dk = self.h, self.dk
            silu = self.act is ACTIVATIONS["silu"]
            qkv = self.conv1d(torch.cat([self.q(x), self.k(x), self.v(x)], dim=-1), silu=silu)
            qkv = qkv if silu else self.act(qkv)
            q, k, v = (t.view(b_, s, h, dk) for t in qkv.split([h * dk] * 3, dim=-1))
            beta = torch.sigmoid(self.b(x))
            raw = self.f(x) if self.full_gates else self.f_b(self.f_a(x))
            gate = decay_safe if self.safe_gate else decay
            o = _fused.delta_rule(self, gate, q, k, v, raw, self.A_log, self.dt_bias, beta, dk**-0.5, 2)
            z = (self.g(x) if self.full_gates else self.g_b(self.g_a(x))).view(b_, s, h, dk)
            return self.o(self.o_norm(o, z).reshape(b_, s, h * dk))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            from . import _fused

            if _fused.active():
                return self.fused(x)
            b_, s, _ = x.shape
            h, dk = self.h, self.dk
            qkv = self.act(self.conv1d(torch.cat([self.q(x), self.k(x), self.v(x)], dim=-1)))
            q, k, v = (t.view(b_, s, h, dk) for t in qkv.split([h * dk] * 3, dim=-1))
            q, k = l2norm(q) / math.sqrt(dk), l2norm(k)
            beta = torch.sigmoid(self.b(x))  # (B, s, H)
            raw = self.f(x) if self.full_gates else self.f_b(self.f_a(x))
            # (B, s, H, d_k): the log-decay per channel, <= 0
            g = (decay_safe if self.safe_gate else decay)(raw, self.A_log, self.dt_bias)
            o = delta_rule(self, q, k, v, g, beta)  # (B, s, H, d_v)
            gate = (self.g(x) if self.full_gates else self.g_b(self.g_a(x))).view(b_, s, h, dk)
            return self.o(self.o_norm(o, gate).reshape(b_, s, h * dk))

    return KimiDeltaAttentionModule
