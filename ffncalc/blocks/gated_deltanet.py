"""Gated DeltaNet linear attention (Yang, Kautz & Hatamizadeh 2024, "Gated Delta Networks: Improving Mamba2 with
Delta Rule", arXiv:2412.06464), as transformers instantiates it in Qwen3-Next (transformers 5.23.0,
models/qwen3_next/modeling_qwen3_next.py, ``Qwen3NextGatedDeltaNet``).

Per token, with Hk query/key heads of dk, H value heads of dv (H a multiple of Hk: each query/key head serves
H/Hk value heads), conv_dim = 2·Hk·dk + H·dv:

    q, k, v, z = in_proj_qkvz(x)          widths Hk·dk, Hk·dk, H·dv, H·dv   (one Linear, no bias)
    b, a       = in_proj_ba(x)            H each                             (one Linear, no bias)
    q, k, v    = silu(conv1d(q, k, v))    a causal depthwise conv over conv_dim channels, kernel K, no bias
    q, k       = l2norm(q), l2norm(k);  q = q / √dk
    β = sigmoid(b);  g = -exp(A_log) · softplus(a + dt_bias)                 (one scalar per value head)
    S_t = e^{g_t}·S_{t-1} + β_t·k_t·(v_t − e^{g_t}·S_{t-1}ᵀk_t)ᵀ,  o_t = S_tᵀ q_t   (S: dk × dv per value head)
    out        = out_proj(rmsnorm(o) · silu(z))                            (Qwen3NextRMSNormGated over dv, per head)

The recurrence (the paper's eq. 10, the gated delta rule) is counted in its chunkwise form (the paper's §3.3,
from Yang et al. 2024b, "Parallelizing Linear Transformers with the Delta Rule over Sequence Length",
arXiv:2406.06484, §3: the WY/UT representation), as flash-linear-attention's ``chunk_gated_delta_rule`` and
transformers' ``torch_chunk_gated_delta_rule`` compute it. In a chunk of L tokens, per value head, with γ the
cumulative log-decay inside the chunk and Γ[i,j] = exp(γ_i − γ_j) for j ≤ i (0 above):

    A      = strictly_lower((K_β Kᵀ) ∘ Γ)                           kkt      L × L × dk
    [U | W] = (I + A)⁻¹ [V_β | K_β ∘ e^γ]  by forward substitution   solve    L × L × (dk + dv)
    P      = (Q Kᵀ) ∘ Γ, lower with the diagonal                    qk       L × L × dk
    V'     = U − W S                                                state_correct  L × dk × dv
    O      = (Q ∘ e^γ) S + P V'                                     state_read, values  L × dk × dv, L × L × dv
    S      ← e^{γ_L} S + (K ∘ e^{γ_L − γ})ᵀ V'                      state_write    dk × L × dv

so that, per token and value head, the multiply-adds are L·(3·dk + 2·dv) inside the chunk (the full L × L
square; the causal convention charges its lower triangle with the diagonal, (L + 1)/2 instead of L) and
3·dk·dv against the state, whatever the chunk. The chunk length L is the largest divisor of seq_len not above
``chunk_size`` (64, FLA's BT and transformers' default), so that every chunk has the same length and the FLOPs
per token are exact integers; transformers' torch fallback instead pads the sequence to a multiple of 64 and
solves the UT system with torch.linalg.solve_triangular, and FLA inverts (I + A) blockwise (solve_tril) and then
applies it with dense L × L products, which is the square the exact convention charges here. The chunkwise form's
terms and reference are ``_delta.py``'s, which Kimi Delta Attention shares with a decay per key channel.

Decoding one token is the recurrence: its state is per sequence (``state_elements``), nothing per token.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS
from . import Block, register
from ._delta import L2NORM_OPS, SOFTPLUS_OPS, chunk_length, conv_activation_kept, emit_delta_rule
from .dense_ffn import DenseActivation

GATED_NORM = Norm("rmsnorm")  # Qwen3NextRMSNormGated: an RMSNorm with a weight, whatever the model's norm


@register
@dataclass(frozen=True)
class GatedDeltaNet(Block):
    """Gated DeltaNet linear attention, counted in its chunkwise form (Yang et al. 2024 §3.3)."""

    kind = "gated_deltanet"
    slot = "attention"
    prefix = "linear_attn"  # transformers' Qwen3NextDecoderLayer.linear_attn
    summary = "Gated DeltaNet linear attention: the gated delta rule, chunkwise (Yang et al. 2024, arXiv:2412.06464)"
    verify_note = (
        "gated_deltanet: the gated delta rule chunkwise (Yang et al. 2024 §3.3) in equal chunks of L, the "
        "largest divisor of seq_len not above chunk_size: K_βKᵀ, QKᵀ, the UT forward substitution and PV'"
        " as attention over L keys (exact: the L×L square; causal: its triangle), and W·S, Q·S, Kᵀ·V' "
        "once per token; transformers' torch fallback pads to 64 and calls solve_triangular, which "
        "FlopCounterMode does not count"
    )

    n_key_heads: Positive  # query and key heads (Qwen3NextConfig.linear_num_key_heads)
    key_head_dim: Positive  # linear_key_head_dim
    n_value_heads: Positive | None = None  # linear_num_value_heads; default n_key_heads
    value_head_dim: Positive | None = None  # linear_value_head_dim; default key_head_dim
    conv_kernel: Positive = 4  # linear_conv_kernel_dim
    conv_bias: bool = False  # Qwen3NextGatedDeltaNet builds its Conv1d with bias=False
    activation: DenseActivation = "silu"  # after the convolution (Qwen3NextConfig.hidden_act)
    chunk_size: Positive = 64  # the longest chunk of the chunkwise form (FLA's BT, transformers' chunk_size)
    # β = 2·sigmoid(b), in (0, 2): the state transition's eigenvalues may be negative (Grazzi et al. 2024,
    # "Unlocking State-Tracking in Linear RNNs Through Negative Eigenvalues", arXiv:2411.12537; OLMo Hybrid's
    # linear_allow_neg_eigval): one more multiply per value head and token
    neg_eigval: bool = False

    @property
    def key_dim(self) -> int:
        return self.n_key_heads * self.key_head_dim

    @property
    def value_dim(self) -> int:
        return self.n_value_heads * self.value_head_dim

    @property
    def conv_dim(self) -> int:
        """Channels of the convolution: q, k and v (Qwen3NextGatedDeltaNet.conv_dim = 2·key_dim + value_dim)."""
        return 2 * self.key_dim + self.value_dim

    def resolve(self, d_model: int) -> GatedDeltaNet:
        return replace(
            self, n_value_heads=self.n_value_heads or self.n_key_heads, value_head_dim=self.value_head_dim or self.key_head_dim
        )

    def check(self, d_model: int) -> None:
        if (self.n_value_heads or self.n_key_heads) % self.n_key_heads:
            raise SpecError(("n_value_heads",), f"{self.n_key_heads} key heads do not divide {self.n_value_heads} value heads")

    def chunk_tokens(self) -> int:
        return self.chunk_size

    def describe(self) -> str:
        return (
            f"Gated DeltaNet {self.n_key_heads} QK heads × {self.key_head_dim}, {self.n_value_heads} V heads × {self.value_head_dim}"
        )

    def facts(self) -> dict[str, object]:
        return {"heads": f"GDN {self.n_key_heads}/{self.n_value_heads}"}

    def terms(self, e, model, seq_len: int) -> None:
        d, n = model.d_model, e.n
        dk, h, dv, c = self.key_head_dim, self.n_value_heads, self.value_head_dim, self.conv_dim
        length = chunk_length(seq_len, self.chunk_size)
        e.linear("linear_attn.in_proj_qkvz", d, 2 * self.key_dim + 2 * self.value_dim, False, n)
        e.linear("linear_attn.in_proj_ba", d, 2 * h, False, n)
        # Depthwise Conv1d(conv_dim, conv_dim, K, groups=conv_dim): weight (conv_dim, 1, K), K multiply-adds per
        # channel and token (T outputs from K - 1 zeros of left padding).
        e.term("linear_attn.conv1d.weight", "weight", (c, 1, self.conv_kernel), n, macs=n * c * self.conv_kernel)
        if self.conv_bias:
            e.term("linear_attn.conv1d.bias", "bias", (c,), n, elementwise=n * c)
        e.op("linear_attn.conv_act", n * c * ACTIVATION_OPS[self.activation])
        # l2norm of q and k over dk in every key head, then q / √dk
        e.op("linear_attn.qk_l2norm", n * (2 * L2NORM_OPS + 1) * self.key_dim)
        # β = sigmoid(b); g = -exp(A_log) · softplus(a + dt_bias): the add is dt_bias's, then a softplus and a
        # multiply per value head; exp(A_log) is once per forward, not per token
        e.term("linear_attn.dt_bias", "bias", (h,), n, elementwise=n * h)
        e.term("linear_attn.A_log", "bias", (h,), n)
        e.op("linear_attn.gates", n * h * (ACTIVATION_OPS["sigmoid"] + SOFTPLUS_OPS + 1 + int(self.neg_eigval)))
        # the delta rule chunkwise (k repeated to the value heads), with the decays: γ's running sum (one add),
        # Γ = exp(γ_i − γ_j) over the L keys (a subtract and an exp) and its product into K_βKᵀ and QKᵀ (two
        # multiplies), all over the square as transformers computes them; and K_β·e^γ, Q·e^γ, K·e^{γ_L − γ} (an exp
        # or a subtract and an exp per head, a multiply per element)
        emit_delta_rule(e, "linear_attn", n, h, dk, dv, length, n * h * (1 + 4 * length + 3 + 3 * dk), recurrence=True)
        # Qwen3NextRMSNormGated: an RMSNorm over dv in every value head with one shared weight, then · silu(z)
        e.term(
            "linear_attn.norm",
            "norm",
            (dv,),
            n,
            numel=dv * GATED_NORM.params_per_feature,
            elementwise=n * (GATED_NORM.ops(self.value_dim) + (ACTIVATION_OPS["silu"] + 1) * self.value_dim),
        )
        e.linear("linear_attn.out_proj", self.value_dim, d, False, n)

    def cache_elements(self, model) -> int:
        """Nothing grows with the context: the state is per sequence."""
        return 0

    def state_elements(self, model) -> int:
        """The recurrent state S, dk × dv in every value head (transformers' recurrent_states, FLA's final_state
        [N, H, K, V]), and the last K-1 inputs of the convolution, conv_dim of each, which the next token's
        convolution reads (transformers' conv cache holds K columns, the newest input among them)."""
        return self.n_value_heads * self.key_head_dim * self.value_head_dim + self.conv_dim * (self.conv_kernel - 1)

    def kept_elements(self, model) -> int:
        """16-bit elements a token a training forward keeps as flash-linear-attention runs it (which transformers
        calls on GPU): the projections' input (d); the convolution's input (conv_dim: causal_conv1d_fn keeps its
        input alone, the SiLU fused in and recomputed); β = sigmoid(b) (H, sigmoid's output, which the kernel keeps
        as well; 2·sigmoid(b) with negative eigenvalues, H more); the gate's raw input a, made contiguous (H: FLA's
        GDNGateFunction, fla/ops/gated_delta_rule/gate.py, keeps g, A_log and dt_bias); then
        ChunkGatedDeltaRuleFunction (fla/ops/gated_delta_rule/chunk.py, ``ctx.save_for_backward(q, q_rstd, k,
        k_rstd, v, g, beta, A, initial_state, cu_seqlens)`` with use_qk_l2norm_in_kernel): q and k after the l2norm
        (2·Hk·dk) with their fp32 reciprocal norms (2 · 2·Hk), v made contiguous (H·dv), the decay's running sum in
        each chunk in fp32 (2·H) and A, the UT transform (I + A)⁻¹, one row of chunk_size a token and value head in
        bf16 (H · chunk_size); the gated norm as FusedRMSNormGated keeps it (fla/modules/fused_norm_gate.py: the
        kernel's output (H·dv), z copied to rows (H·dv) and an fp32 inverse RMS a value head (2·H)); out_proj's
        input (H·dv). An activation other than SiLU after the convolution keeps its own (``conv_activation_kept``)."""
        h, vd, hk = self.n_value_heads, self.value_dim, self.n_key_heads
        beta = h * (2 if self.neg_eigval else 1)
        kernel = 2 * self.key_dim + 4 * hk + vd + 2 * h + h * self.chunk_size
        norm = 2 * vd + 2 * h
        return model.d_model + self.conv_dim + conv_activation_kept(self.activation, self.conv_dim) + beta + h + kernel + norm + vd

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
        return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + eps)  # transformers' l2norm (FLA's)

    def decay(a: torch.Tensor, a_log: torch.Tensor, dt_bias: torch.Tensor) -> torch.Tensor:
        return -torch.exp(a_log) * F.softplus(a + dt_bias)  # Qwen3NextGatedDeltaNet's g (FLA's naive_gdn_gate)

    class GatedDeltaNetModule(nn.Module):
        """Qwen3NextGatedDeltaNet's parameters under its names (a state dict loads either way), with the gated
        delta rule in the chunkwise form of the block's docstring, every product a MatMul module."""

        def __init__(self, spec: GatedDeltaNet, model, causal: bool):
            super().__init__()
            d = model.d_model
            self.hk, self.dk, self.h, self.dv = spec.n_key_heads, spec.key_head_dim, spec.n_value_heads, spec.value_head_dim
            self.chunk_size, self.causal = spec.chunk_size, causal
            self.beta_scale = 2.0 if spec.neg_eigval else 1.0
            self.act = ACTIVATIONS[spec.activation]
            self.in_proj_qkvz = Linear(d, 2 * spec.key_dim + 2 * spec.value_dim, bias=False)
            self.in_proj_ba = Linear(d, 2 * spec.n_value_heads, bias=False)
            self.conv1d = CausalConv1d(spec.conv_dim, spec.conv_kernel, spec.conv_bias)
            self.dt_bias = nn.Parameter(torch.empty(spec.n_value_heads))
            self.A_log = nn.Parameter(torch.empty(spec.n_value_heads))
            add_products(self)  # kkt, solve, qk, values, state_correct, state_read, state_write
            self.norm = GatedRMSNorm(spec.value_head_dim)
            self.out_proj = Linear(spec.value_dim, d, bias=False)
            if self.dt_bias.device.type != "meta":  # Qwen3NextPreTrainedModel._init_weights
                with torch.no_grad():
                    self.dt_bias.fill_(1.0)
                    self.A_log.copy_(torch.empty(spec.n_value_heads).uniform_(0.01, 16).log_())

        def project(self, x: torch.Tensor):
            """q, k, v, z, b, a from the two projections, in Qwen3NextGatedDeltaNet's layout (grouped by key
            head: [q, k, v group, z group] and [b group, a group]), so that its weights load unchanged."""
            b_, s, _ = x.shape
            r = self.h // self.hk
            qkvz = self.in_proj_qkvz(x).view(b_, s, self.hk, 2 * self.dk + 2 * r * self.dv)
            q, k, v, z = qkvz.split([self.dk, self.dk, r * self.dv, r * self.dv], dim=-1)
            b, a = self.in_proj_ba(x).view(b_, s, self.hk, 2 * r).split([r, r], dim=-1)
            return (
                q.reshape(b_, s, -1),
                k.reshape(b_, s, -1),
                v.reshape(b_, s, -1),
                z.reshape(b_, s, self.h, self.dv),
                b.reshape(b_, s, self.h),
                a.reshape(b_, s, self.h),
            )

        def fused_rule(self, q, k, v, b, a):
            """The delta rule from the projections as FLA's GatedDeltaNet runs it in training: the convolution
            (causal_conv1d_fn, the SiLU fused), β = sigmoid(b), then GDNGateFunction and chunk_gated_delta_rule with
            the l2norm in the kernel, which ``_fused.delta_rule`` keeps as they do."""
            from . import _fused

            b_, s = q.shape[:2]
            silu = self.act is ACTIVATIONS["silu"]
            qkv = self.conv1d(torch.cat([q, k, v], dim=-1), silu=silu)
            qkv = qkv if silu else self.act(qkv)
            q, k, v = qkv.split([self.hk * self.dk, self.hk * self.dk, self.h * self.dv], dim=-1)
            beta = torch.sigmoid(b)
            beta = beta * self.beta_scale if self.beta_scale != 1.0 else beta
            q, k = q.view(b_, s, self.hk, self.dk), k.view(b_, s, self.hk, self.dk)
            v = v.view(b_, s, self.h, self.dv)
            return _fused.delta_rule(self, decay, q, k, v, a, self.A_log, self.dt_bias, beta, self.dk**-0.5, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            from . import _fused

            b_, s, _ = x.shape
            q, k, v, z, b, a = self.project(x)
            if _fused.active():  # as FLA's kernels run it: causal-conv1d with its SiLU, the gate and l2norm inside
                return self.out_proj(self.norm(self.fused_rule(q, k, v, b, a), z).reshape(b_, s, self.h * self.dv))
            qkv = self.act(self.conv1d(torch.cat([q, k, v], dim=-1)))
            q, k, v = qkv.split([self.hk * self.dk, self.hk * self.dk, self.h * self.dv], dim=-1)
            q = l2norm(q.view(b_, s, self.hk, self.dk)) / math.sqrt(self.dk)
            k = l2norm(k.view(b_, s, self.hk, self.dk))
            beta = torch.sigmoid(b) * self.beta_scale  # (B, s, H)
            g = decay(a, self.A_log, self.dt_bias)  # (B, s, H): the log-decay, <= 0
            r = self.h // self.hk  # each query/key head serves r consecutive value heads (transformers' repeat_interleave)
            q, k = q.repeat_interleave(r, dim=2), k.repeat_interleave(r, dim=2)
            o = delta_rule(self, q, k, v.view(b_, s, self.h, self.dv), g, beta)  # (B, s, H, dv)
            return self.out_proj(self.norm(o, z).reshape(b_, s, self.h * self.dv))

    return GatedDeltaNetModule
