"""The Mamba-2 mixer: a selective state space model in its state-space-dual (SSD) form (Dao & Gu 2024,
"Transformers are SSMs", arXiv:2405.21060), as transformers' ``Mamba2Mixer`` instantiates it
(transformers 5.23.0, models/mamba2/modeling_mamba2.py) and mamba_ssm's ``Mamba2`` module defines it.

Per token, with H heads of P = head_dim, G groups, N = state_size, d_inner = H·P, conv_dim = d_inner + 2·G·N:

    z, xBC, dt = in_proj(u)                  widths d_inner, conv_dim, H   (one Linear: d -> 2·d_inner + 2GN + H)
    x, B, C    = act(conv1d(xBC))            a causal depthwise conv over conv_dim channels, kernel K
    dt         = softplus(dt + dt_bias);  A = -exp(A_log)                    (one scalar per head)
    h_t = exp(dt_t·A)·h_{t-1} + dt_t·x_t·B_tᵀ,   y_t = h_t·C_t + D·x_t     (per head; B, C shared by a group)
    out        = out_proj(rmsnorm(y ⊙ silu(z)))                             (MambaRMSNormGated, G norm groups)
                 [Falcon-H1 without mamba_rms_norm: out_proj(y ⊙ silu(z)), no norm]

The recurrence is counted in its quadratic "dual" form (the paper's §5, state space duality: y = (L ∘ C·Bᵀ)·x), which
is attention with a decay mask in place of the softmax: the scores C_t·B_s (one product per group over
N, ``mixer.scores``) and the masked scores times the dt-scaled inputs (one per head over P,
``mixer.values``), so that ``exact`` charges the full square and ``causal`` the triangle, as for attention.
Decoding one token is the recurrence instead: its state is per sequence (``state_elements``), not per token.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS
from . import Block, register
from .dense_ffn import DenseActivation

SOFTPLUS_OPS = 3  # log(1 + exp(x)): exp, add, log
GATED_NORM = Norm("rmsnorm")  # MambaRMSNormGated: an RMSNorm with a weight and no bias, whatever the model's norm


@register
@dataclass(frozen=True)
class Mamba2(Block):
    """The Mamba-2 mixer (SSD), counted in its quadratic dual form."""

    kind = "mamba2"
    slot = "attention"
    prefix = "mixer"  # transformers' Mamba2Block.mixer; terms are mixer.in_proj, mixer.conv1d, …
    summary = "Mamba-2 selective state space mixer, SSD in its quadratic dual form (Dao & Gu 2024)"
    verify_note = (
        "mamba2: the SSD in its quadratic dual form (Dao & Gu 2024 §5), C·Bᵀ per group and the "
        "masked scores times x per head, as attention's two products; transformers' chunked scan "
        "and mamba_ssm's kernels do the same map with other products, and decode recurrently"
    )

    n_heads: Positive | None = None  # default: expand · d_model / head_dim (mamba_ssm's Mamba2: nheads = d_ssm / headdim)
    head_dim: Positive = 64
    state_size: Positive = 128
    n_groups: Positive = 1  # B and C are shared by n_heads / n_groups heads each; also the gated norm's groups
    conv_kernel: Positive = 4
    expand: Positive | None = None  # d_inner = expand · d_model (default 2) where n_heads is not stated
    use_bias: bool = False  # on in_proj and out_proj (Mamba2Config.use_bias)
    use_conv_bias: bool = True  # Mamba2Config.use_conv_bias
    activation: DenseActivation = "silu"  # after the convolution (Mamba2Config.hidden_act)
    gated_norm: bool = True  # false: out_proj reads y ⊙ silu(z) with no norm (Falcon-H1's mamba_rms_norm false)
    out_bias: bool | None = None  # out_proj's bias where it differs from in_proj's (Falcon-H1: projectors_bias)

    @property
    def out_proj_bias(self) -> bool:
        return self.use_bias if self.out_bias is None else self.out_bias

    @property
    def d_inner(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def conv_dim(self) -> int:
        """Channels of the convolution: x, B and C (Mamba2Mixer.conv_dim)."""
        return self.d_inner + 2 * self.n_groups * self.state_size

    @property
    def proj_width(self) -> int:
        """in_proj's outputs: z, xBC and dt (Mamba2Mixer: intermediate_size + conv_dim + num_heads)."""
        return self.d_inner + self.conv_dim + self.n_heads

    def resolve(self, d_model: int) -> Mamba2:
        if self.n_heads is not None:
            return self
        return replace(self, n_heads=(self.expand or 2) * d_model // self.head_dim)

    def check(self, d_model: int) -> None:
        inner = (self.expand or 2) * d_model
        if self.n_heads is None and inner % self.head_dim:
            raise SpecError(
                ("head_dim",),
                f"head_dim {self.head_dim} does not divide d_inner = expand · d_model = {inner} (state n_heads to allow it)",
            )
        heads = self.n_heads if self.n_heads is not None else inner // self.head_dim
        if self.n_heads is not None and self.expand is not None and heads * self.head_dim != inner:
            # Mamba2Config.validate_architecture: hidden_size · expand must equal num_heads · head_dim
            raise SpecError(("n_heads",), f"n_heads · head_dim = {heads * self.head_dim} but expand · d_model = {inner}")
        if heads % self.n_groups:
            raise SpecError(("n_groups",), f"{self.n_groups} groups do not divide {heads} heads")

    def head_count(self) -> int:
        return self.n_heads

    def describe(self) -> str:
        return f"Mamba-2 {self.n_heads} heads × {self.head_dim}, state {self.state_size}, {self.n_groups} groups"

    def facts(self) -> dict[str, object]:
        return {"heads": f"SSM {self.n_heads}"}

    def terms(self, e, model, seq_len: int) -> None:
        d, h, p, n = model.d_model, self.n_heads, self.head_dim, e.n
        g, ns, k, di, c = self.n_groups, self.state_size, self.conv_kernel, self.d_inner, self.conv_dim
        e.linear("mixer.in_proj", d, self.proj_width, self.use_bias, n)
        # Depthwise Conv1d(conv_dim, conv_dim, K, groups=conv_dim): weight (conv_dim, 1, K), K multiply-adds
        # per channel and token (one output per token: T outputs from K-1 zeros of left padding).
        e.term("mixer.conv1d.weight", "weight", (c, 1, k), n, macs=n * c * k)
        if self.use_conv_bias:
            e.term("mixer.conv1d.bias", "bias", (c,), n, elementwise=n * c)
        e.op("mixer.conv_act", n * c * ACTIVATION_OPS[self.activation])
        # dt = softplus(dt + dt_bias): an add and a softplus per head
        e.term("mixer.dt_bias", "bias", (h,), n, elementwise=n * h)
        e.op("mixer.dt_softplus", n * SOFTPLUS_OPS * h)
        # A = -exp(A_log) is per head once per forward, not per token: no work per token
        e.term("mixer.A_log", "bias", (h,), n)
        # discretize: dt·A per head, its running sum over the sequence per head, dt·x per element of x
        e.op("mixer.discretize", n * (2 * h + di))
        # the dual form (§5): scores C_t·B_s of every group, over N, for each of seq_len keys
        e.term("mixer.scores", "core", (g, seq_len, ns), n, numel=0, macs=n * g * seq_len * ns, grows=False)
        # decay mask L[t,s] = exp(cumsum_t - cumsum_s) (a subtract and an exp) and M = L ∘ scores (a multiply),
        # per head and key over the full square, as attention's softmax is counted
        e.op("mixer.decay", n * 3 * h * seq_len)
        e.term("mixer.values", "core", (h, seq_len, p), n, numel=0, macs=n * h * seq_len * p, grows=False)
        e.term("mixer.D", "bias", (h,), n, elementwise=n * 2 * di)  # y + D·x: a multiply and an add
        # MambaRMSNormGated: y ⊙ silu(z) (silu and a multiply), then an RMSNorm with a weight
        if self.gated_norm:
            e.term(
                "mixer.norm",
                "norm",
                (di,),
                n,
                numel=di * GATED_NORM.params_per_feature,
                elementwise=n * ((ACTIVATION_OPS["silu"] + 1) * di + GATED_NORM.ops(di)),
            )
        else:
            e.op("mixer.gate", n * (ACTIVATION_OPS["silu"] + 1) * di)
        e.linear("mixer.out_proj", di, d, self.out_proj_bias, n)

    def cache_elements(self, model) -> int:
        """Nothing grows with the context: the state is per sequence."""
        return 0

    def state_elements(self, model) -> int:
        """The SSM state h, head_dim × state_size in every head (mamba_ssm's Mamba2 ssm_state, transformers'
        recurrent state), and the last K-1 inputs of the convolution, conv_dim of each, which the next token's
        convolution reads (mamba_ssm's conv_state and transformers' conv cache hold K columns, the newest input
        among them)."""
        return self.n_heads * self.head_dim * self.state_size + self.conv_dim * (self.conv_kernel - 1)

    def kept_elements(self, model) -> int:
        """What mamba_ssm's fused training path keeps (MambaSplitConv1dScanCombinedFn.forward, which transformers
        calls in training): in_proj's input (d, for its weight gradient), in_proj's output zxbcdt (for the
        convolution, recomputed in backward), the scan's output before the gated norm (d_inner), and the norm's
        reciprocal RMS per group in fp32 (2 16-bit elements each): d + proj_width + d_inner + 2·n_groups."""
        return model.d_model + self.proj_width + self.d_inner + (2 * self.n_groups if self.gated_norm else 0)

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import math

    import torch
    from torch import nn
    from torch.nn import functional as F

    from ._torch import ACTIVATIONS, CausalConv1d, GatedRMSNorm, Linear, MatMul, lower_apply, lower_product

    class Mamba2Mixer(nn.Module):
        """The mixer with the SSD in its quadratic dual form: y = (L ∘ C·Bᵀ)·(dt·x) + D·x per head."""

        def __init__(self, spec: Mamba2, model, causal: bool):
            super().__init__()
            d = model.d_model
            self.heads, self.head_dim, self.groups = spec.n_heads, spec.head_dim, spec.n_groups
            self.state, self.d_inner, self.conv_dim, self.causal = (spec.state_size, spec.d_inner, spec.conv_dim, causal)
            self.act = ACTIVATIONS[spec.activation]
            self.in_proj = Linear(d, spec.proj_width, bias=spec.use_bias)
            self.conv1d = CausalConv1d(spec.conv_dim, spec.conv_kernel, spec.use_conv_bias)
            self.dt_bias = nn.Parameter(torch.empty(spec.n_heads))
            self.A_log = nn.Parameter(torch.empty(spec.n_heads))
            self.scores = MatMul()
            self.values = MatMul()
            self.D = nn.Parameter(torch.empty(spec.n_heads))
            if spec.gated_norm:
                self.norm = GatedRMSNorm(spec.d_inner, groups=spec.n_groups, gate_first=True, eps=1e-5)
            self.out_proj = Linear(spec.d_inner, d, bias=spec.out_proj_bias)
            if self.dt_bias.device.type != "meta":  # Mamba2Mixer.init_mamba2_weights
                with torch.no_grad():
                    self.A_log.copy_(torch.log(torch.arange(1, spec.n_heads + 1, dtype=torch.float32)))
                    self.D.fill_(1.0)
                    dt = torch.exp(torch.rand(spec.n_heads) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
                    self.dt_bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus⁻¹

        def forward(self, u: torch.Tensor) -> torch.Tensor:
            from . import _fused

            b, s, _ = u.shape
            h, p, g, n = self.heads, self.head_dim, self.groups, self.state
            if _fused.active() and self.act is ACTIVATIONS["silu"]:
                # as mamba_ssm's MambaSplitConv1dScanCombinedFn keeps it (transformers' cuda_kernels_forward)
                norm = getattr(self, "norm", None)
                dims = (self.d_inner, self.conv_dim, h, p, g, n, norm.eps if norm is not None else 0.0)
                return _fused.mamba2(
                    self.in_proj(u), self.conv1d.weight, self.conv1d.bias, self.dt_bias, self.A_log, self.D,
                    None if norm is None else norm.weight, self.out_proj.weight, self.out_proj.bias, dims,
                    g if norm is None else norm.groups,
                )  # fmt: skip
            z, xbc, dt = self.in_proj(u).split([self.d_inner, self.conv_dim, h], dim=-1)
            x, bm, cm = self.act(self.conv1d(xbc)).split([self.d_inner, g * n, g * n], dim=-1)
            dt = F.softplus(dt + self.dt_bias).transpose(1, 2)  # (B, H, s)
            a = -torch.exp(self.A_log)
            cum = torch.cumsum(dt * a[:, None], dim=-1)  # (B, H, s): the log-decay from the start to t
            x = x.view(b, s, h, p).transpose(1, 2)  # (B, H, s, P)
            bm = bm.view(b, s, g, n).transpose(1, 2)  # (B, G, s, N)
            cm = cm.view(b, s, g, n).transpose(1, 2)
            xdt = x * dt[..., None]
            block = max(1, math.isqrt(s))
            if self.causal:
                scores = lower_product(self.scores, cm, bm, block)  # (B, G, s, s), zero above the diagonal
            else:
                scores = self.scores(cm, bm.transpose(-2, -1))  # (B, G, s, s): the full square
            scores = scores.repeat_interleave(h // g, dim=1)  # head i reads group i // (H/G), as Mamba2Mixer
            diff = cum[..., :, None] - cum[..., None, :]  # (B, H, s, s): log-decay from s to t
            below = torch.ones(s, s, dtype=torch.bool, device=u.device).tril()
            decay = torch.exp(diff.masked_fill(~below, float("-inf")))  # L: zero above the diagonal
            m = scores * decay
            y = lower_apply(self.values, m, xdt, block) if self.causal else self.values(m, xdt)  # (B, H, s, P)
            y = y + x * self.D[:, None, None]
            y = y.transpose(1, 2).reshape(b, s, self.d_inner)
            return self.out_proj(self.norm(y, z) if hasattr(self, "norm") else y * F.silu(z))

    return Mamba2Mixer
