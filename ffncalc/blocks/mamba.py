"""The Mamba (v1) mixer: a selective state space model (Gu & Dao 2023, "Mamba: Linear-Time Sequence Modeling with
Selective State Spaces", arXiv:2312.00752, Algorithm 2 and §3.4), as transformers' ``MambaMixer`` instantiates it
(transformers 5.23.0, models/mamba/modeling_mamba.py) and, with norms on dt, B and C, ``FalconMambaMixer``
(models/falcon_mamba/modeling_falcon_mamba.py), and with weighted ones ``JambaMambaMixer`` (models/jamba/modeling_jamba.py).

Per token, with d_inner = expand · d (MambaConfig.intermediate_size), N = state_size, R = time_step_rank
(default ⌈d/16⌉):

    x, z      = in_proj(u)                     widths d_inner, d_inner (one Linear: d -> 2·d_inner)
    x         = act(conv1d(x))                 a causal depthwise conv over d_inner channels, kernel K, a bias
    dt, B, C  = x_proj(x)                      widths R, N, N (one Linear without bias: d_inner -> R + 2N)
    [FalconMamba: dt, B, C = rms(dt), rms(B), rms(C), weightless RMSNorms; Jamba: RMSNorms with a weight each]
    dt        = softplus(dt_proj(dt))          (R -> d_inner, with a bias: transformers' delta_bias)
    A         = -exp(A_log)                    (d_inner, N), once per forward
    h_t = exp(dt_t ⊗ A) ⊙ h_{t-1} + (dt_t ⊙ x_t) ⊗ B_t,   y_t = h_t · C_t + D ⊙ x_t     (h: d_inner × N)
    out       = out_proj(y ⊙ silu(z))

A is a matrix, not a scalar per head as in Mamba-2, so the scan has no cheap quadratic dual form: it is counted as
the recurrence transformers' torch path (mamba_selective_scan) and mamba_ssm's selective_scan_ref compute, linear in
the length. Its one matmul is the readout h_t · C_t, a (d_inner × N)·(N) product per token (transformers:
``torch.matmul(ssm_state, C[:, index, :].unsqueeze(-1))``; mamba_ssm: ``einsum('bdn,bn->bd')``): d_inner·N
multiply-adds per token at any context length, a core term with grows=False. The discretisation and the state
update (exp(dt·A), dt·B·x, h·dA + dBu: 6 FLOPs per state element and token) are elementwise, which FlopCounterMode
does not count, and are stated as elementwise ops. ``exact`` and ``causal`` agree: nothing in the scan meets a
square of tokens.

Zamba's multi-head layout (``n_heads``, ZambaMambaMixer, models/zamba/modeling_zamba.py) splits d_inner
into heads of d_inner / n_heads channels, each with its own x_proj (head_dim -> R + 2N) and dt_proj (R -> head_dim,
with a bias): each head makes its own dt, B and C and runs its own scan. The parameters and multiply-adds are those of
one x_proj and one dt_proj summed over the heads (x_proj_weight (H, R + 2N, head_dim), dt_proj_weight (H, head_dim,
R), A_log (H, head_dim, N), D (H, head_dim)); in_proj's output interleaves x and z channel by channel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS
from . import Block, register
from .dense_ffn import DenseActivation

SOFTPLUS_OPS = 3  # log(1 + exp(x)): exp, add, log
SCAN_OPS = 6  # per state element and token: dt·A and its exp (2), dt·B and ·x (2), dA·h + dBu (2)
WEIGHTLESS_RMS = Norm("rmsnorm", affine=False)  # FalconMambaWeightlessRMSNorm: no parameter (its weight is a buffer)
WEIGHTED_RMS = Norm("rmsnorm")  # JambaRMSNorm: a weight


@register
@dataclass(frozen=True)
class Mamba(Block):
    """The Mamba (v1) selective-scan mixer, counted as its recurrence."""

    kind = "mamba"
    slot = "attention"
    prefix = "mixer"  # transformers' MambaBlock.mixer; terms are mixer.in_proj, mixer.conv1d, …
    summary = "Mamba (v1) selective state space mixer, the selective scan as its recurrence (Gu & Dao 2023)"
    verify_note = (
        "mamba: the selective scan as its recurrence (Gu & Dao 2023, Algorithm 2), its readout h_t·C_t "
        "one matmul per token (mixer.readout); the discretisation and state update are elementwise, "
        "which FlopCounterMode does not count"
    )

    d_inner: Positive | None = None  # default: expand · d_model (MambaConfig.intermediate_size)
    expand: Positive = 2
    state_size: Positive = 16
    conv_kernel: Positive = 4
    time_step_rank: Positive | None = None  # default ⌈d_model / 16⌉ (MambaConfig: time_step_rank "auto")
    use_bias: bool = False  # on in_proj and out_proj (MambaConfig.use_bias)
    use_conv_bias: bool = True  # MambaConfig.use_conv_bias
    activation: DenseActivation = "silu"  # after the convolution (MambaConfig.hidden_act)
    bcdt_norm: bool = False  # FalconMamba: weightless RMSNorms on dt, B and C after x_proj
    # those norms with a learned weight each (Jamba: dt_layernorm, b_layernorm, c_layernorm)
    bcdt_weights: bool = False
    # Zamba's multi-head layout (ZambaMambaMixer, n_mamba_heads): per-head x_proj and dt_proj, x and z interleaved in
    # in_proj's output; None: MambaMixer's single x_proj and dt_proj, x then z
    n_heads: Positive | None = None

    @property
    def xproj_width(self) -> int:
        """x_proj's outputs: dt, B and C (MambaMixer: time_step_rank + 2·ssm_state_size)."""
        return self.time_step_rank + 2 * self.state_size

    def resolve(self, d_model: int) -> Mamba:
        return replace(
            self, d_inner=self.d_inner or self.expand * d_model, time_step_rank=self.time_step_rank or math.ceil(d_model / 16)
        )

    def check(self, d_model: int) -> None:
        if self.d_inner is not None and self.d_inner < 1:
            raise SpecError(("d_inner",), "d_inner must be positive")
        if self.bcdt_weights and not self.bcdt_norm:
            raise SpecError(("bcdt_weights",), "weights of the dt, B and C norms need the norms (bcdt_norm)")
        if self.n_heads is not None:
            inner = self.resolve(d_model).d_inner
            if inner % self.n_heads:
                raise SpecError(("n_heads",), f"{self.n_heads} heads do not divide d_inner {inner}")
            if self.bcdt_norm:
                raise SpecError(("bcdt_norm",), "norms on dt, B and C are not defined with heads (n_heads)")

    @property
    def heads(self) -> int:
        return self.n_heads or 1

    @property
    def head_dim(self) -> int:
        return self.d_inner // self.heads

    def head_count(self) -> int | None:
        return self.n_heads  # None: one x_proj and dt_proj over d_inner, no heads (MambaMixer)

    def describe(self) -> str:
        heads = f", {self.n_heads} heads" if self.n_heads is not None else ""
        return f"Mamba d_inner {self.d_inner}{heads}, state {self.state_size}, dt rank {self.time_step_rank}"

    def facts(self) -> dict[str, object]:
        return {"heads": f"SSM {self.d_inner} × {self.state_size}"}

    def terms(self, e, model, seq_len: int) -> None:
        d, n = model.d_model, e.n
        di, ns, k, r = self.d_inner, self.state_size, self.conv_kernel, self.time_step_rank
        e.linear("mixer.in_proj", d, 2 * di, self.use_bias, n)
        # Depthwise Conv1d(d_inner, d_inner, K, groups=d_inner): weight (d_inner, 1, K), K multiply-adds per channel
        # and token (transformers pads K-1 each side and keeps the first T outputs; T are counted)
        e.term("mixer.conv1d.weight", "weight", (di, 1, k), n, macs=n * di * k)
        if self.use_conv_bias:
            e.term("mixer.conv1d.bias", "bias", (di,), n, elementwise=n * di)
        e.op("mixer.conv_act", n * di * ACTIVATION_OPS[self.activation])
        h, hd = self.heads, self.head_dim
        if self.n_heads is None:
            e.linear("mixer.x_proj", di, self.xproj_width, False, n)
        else:  # x_proj_weight (H, R + 2N, head_dim): each head's x_proj on its own channels, batched
            e.term("mixer.x_proj.weight", "weight", (h, self.xproj_width, hd), n, macs=n * di * self.xproj_width)
        if self.bcdt_weights:  # JambaMambaMixer: RMSNorms with a weight over dt (R), B and C (N each)
            for name, width in (("dt_norm", r), ("b_norm", ns), ("c_norm", ns)):
                e.norm(f"mixer.{name}", WEIGHTED_RMS, width, n)
        elif self.bcdt_norm:  # FalconMambaMixer: rms(dt) over R features, rms(B) and rms(C) over N each
            e.op("mixer.bcdt_norm", n * (WEIGHTLESS_RMS.ops(r) + 2 * WEIGHTLESS_RMS.ops(ns)))
        # dt = softplus(dt_proj(dt)): the bias is the scan's delta_bias, an add per channel, then a softplus
        if self.n_heads is None:
            e.linear("mixer.dt_proj", r, di, True, n)
        else:  # dt_proj_weight (H, head_dim, R) on each head's dt; dt_proj_bias (H, head_dim), the scan's delta_bias
            e.term("mixer.dt_proj.weight", "weight", (h, hd, r), n, macs=n * di * r)
            e.term("mixer.dt_proj.bias", "bias", (h, hd), n, elementwise=n * di)
        e.op("mixer.dt_softplus", n * SOFTPLUS_OPS * di)
        # A = -exp(A_log) is computed once per forward, not per token: no work per token
        e.term("mixer.A_log", "bias", (di, ns) if self.n_heads is None else (h, hd, ns), n)
        # the recurrence, elementwise per state element: exp(dt·A), dt·B·x, h = dA ⊙ h + dBu
        e.op("mixer.scan", n * SCAN_OPS * di * ns)
        # the readout y_t = h_t · C_t: d_inner rows of N, one "key" (the current state) per token, any context
        e.term("mixer.readout", "core", (di, 1, ns), n, numel=0, macs=n * di * ns, grows=False)
        # y + D·x: a multiply and an add
        e.term("mixer.D", "bias", (di,) if self.n_heads is None else (h, hd), n, elementwise=n * 2 * di)
        e.op("mixer.gate", n * (ACTIVATION_OPS["silu"] + 1) * di)  # y ⊙ silu(z)
        e.linear("mixer.out_proj", di, d, self.use_bias, n)

    def cache_elements(self, model) -> int:
        """Nothing grows with the context: the state is per sequence."""
        return 0

    def state_elements(self, model) -> int:
        """The SSM state h, d_inner × state_size (transformers' recurrent state, mamba_ssm's ssm_state), and the
        convolution's last K-1 inputs over d_inner channels, which the next token's convolution reads
        (transformers' conv cache and mamba_ssm's conv_state hold K columns, the newest input among them)."""
        return self.d_inner * self.state_size + self.d_inner * (self.conv_kernel - 1)

    def kept_elements(self, model) -> int:
        """What mamba_ssm's fused training path keeps (MambaInnerFn.forward, which transformers' MambaMixer calls in
        training, checkpoint_lvl 1: the conv output and dt recomputed in backward): in_proj's input (d, for its
        weight gradient, outside the function), xz (2·d_inner), x_dbl (R + 2N), contiguous copies of B and C (N
        each) and the scan's output before the gate (d_inner): d + 3·d_inner + R + 4N per token. The scan's
        chunk states (scan_intermediates) are per sequence and chunk of 2048 tokens: ``score_bytes``.

        With heads (ZambaMambaMixer, which runs causal_conv1d_fn and one selective_scan_fn per head, the per-head
        projections as batched products over (H, B, ·, s) views): in_proj's input (d) and its output xz (2·d_inner:
        the scans' z are views of it), the convolution's input (a contiguous copy of x, d_inner) and output (x_proj's
        input and the scans' u, d_inner), x_proj's output (H·(R + 2N): dt_proj's input, the scans' B and C views),
        dt_proj's output, the scans' delta (d_inner), the scans' output before the gate (d_inner) and out_proj's
        input, the heads' gated outputs joined (d_inner): d + 7·d_inner + H·(R + 2N) per token; the scans' fp32
        chunk states as without heads (``score_bytes``)."""
        if self.n_heads is not None:
            return model.d_model + 7 * self.d_inner + self.n_heads * (self.time_step_rank + 2 * self.state_size)
        return model.d_model + 3 * self.d_inner + self.time_step_rank + 4 * self.state_size

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        """The scan's chunk states a sequence, which MambaInnerFn keeps beside its per-token tensors: selective_scan_fwd's
        ``x``, (d_inner, ⌈s / 2048⌉, 2·N) in fp32 (the decay product and the state at every chunk's end); with heads,
        each head's scan its head_dim channels' (ZambaMambaMixer), the same in all."""
        return -(-seq_len // 2048) * self.d_inner * 2 * self.state_size * 4

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import torch
    from torch import nn
    from torch.nn import functional as F

    from ._torch import ACTIVATIONS, CausalConv1d, Linear, MatMul

    def weightless_rms(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)

    class HeadLinear(nn.Module):
        """A linear map per head: weight (H, out, in), bias (H, out); (…, H, in) -> (…, H, out), one batched product
        whose FLOPs are its weight's."""

        weight_flops = True

        def __init__(self, heads: int, d_in: int, d_out: int, bias: bool):
            super().__init__()
            self.weight = nn.Parameter(torch.empty(heads, d_out, d_in))
            self.bias = nn.Parameter(torch.empty(heads, d_out)) if bias else None
            if self.weight.device.type != "meta":
                nn.init.normal_(self.weight, std=d_in**-0.5)
                if self.bias is not None:
                    nn.init.zeros_(self.bias)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.einsum("...hi,hoi->...ho", x, self.weight)
            return y if self.bias is None else y + self.bias

    class MambaMixer(nn.Module):
        """The mixer with the selective scan as its recurrence; the readout h_t·C_t of every token is one batched
        product (``readout``), the rest of the scan elementwise."""

        def __init__(self, spec: Mamba, model, causal: bool):
            super().__init__()
            d, di, ns = model.d_model, spec.d_inner, spec.state_size
            self.d_inner, self.state, self.rank, self.bcdt_norm = di, ns, spec.time_step_rank, spec.bcdt_norm
            self.act = ACTIVATIONS[spec.activation]
            self.in_proj = Linear(d, 2 * di, bias=spec.use_bias)
            self.conv1d = CausalConv1d(di, spec.conv_kernel, spec.use_conv_bias)
            self.heads = spec.n_heads  # None: one x_proj and dt_proj (MambaMixer); else per head (ZambaMambaMixer)
            h, hd = spec.heads, spec.head_dim
            if self.heads is None:
                self.x_proj = Linear(di, spec.xproj_width, bias=False)
                self.dt_proj = Linear(spec.time_step_rank, di, bias=True)
            else:
                self.x_proj = HeadLinear(h, hd, spec.xproj_width, bias=False)
                self.dt_proj = HeadLinear(h, spec.time_step_rank, hd, bias=True)
            self.A_log = nn.Parameter(torch.empty(di, ns) if self.heads is None else torch.empty(h, hd, ns))
            self.readout = MatMul()
            self.D = nn.Parameter(torch.empty(di) if self.heads is None else torch.empty(h, hd))
            self.out_proj = Linear(di, d, bias=spec.use_bias)
            if spec.bcdt_weights:
                self.dt_norm, self.b_norm, self.c_norm = nn.RMSNorm(self.rank), nn.RMSNorm(ns), nn.RMSNorm(ns)
            if self.A_log.device.type != "meta":  # MambaMixer.init_mamba_weights (S4D-real A, D = 1)
                with torch.no_grad():
                    self.A_log.copy_(torch.log(torch.arange(1, ns + 1, dtype=torch.float32)).expand(self.A_log.shape))
                    self.D.fill_(1.0)

        def forward(self, u: torch.Tensor) -> torch.Tensor:
            if self.heads is not None:
                return self.forward_heads(u)
            from . import _fused

            if _fused.active() and self.act is ACTIVATIONS["silu"] and not hasattr(self, "dt_norm"):
                # as mamba_ssm's MambaInnerFn keeps it (transformers' MambaMixer.cuda_kernels_forward in training)
                conv, dt, out = self.conv1d, self.dt_proj, self.out_proj
                return _fused.mamba_inner(
                    self.in_proj(u), conv.weight, conv.bias, self.x_proj.weight, dt.weight, dt.bias, self.A_log, self.D,
                    out.weight, out.bias, self.rank, self.state, self.bcdt_norm,
                )  # fmt: skip
            b, s, _ = u.shape
            x, z = self.in_proj(u).chunk(2, dim=-1)  # transformers: projected_states.chunk(2): x first, then gate
            x = self.act(self.conv1d(x))  # (B, s, d_inner)
            dt, bm, cm = self.x_proj(x).split([self.rank, self.state, self.state], dim=-1)
            if hasattr(self, "dt_norm"):
                dt, bm, cm = self.dt_norm(dt), self.b_norm(bm), self.c_norm(cm)
            elif self.bcdt_norm:
                dt, bm, cm = weightless_rms(dt), weightless_rms(bm), weightless_rms(cm)
            dt = F.softplus(self.dt_proj(dt))  # (B, s, d_inner)
            a = -torch.exp(self.A_log)  # (d_inner, N)
            decay = torch.exp(dt[..., None] * a)  # (B, s, d_inner, N)
            inflow = (dt * x)[..., None] * bm[:, :, None, :]  # (B, s, d_inner, N)
            state = u.new_zeros(b, self.d_inner, self.state)
            states = []
            for t in range(s):
                state = decay[:, t] * state + inflow[:, t]
                states.append(state)
            h = torch.stack(states, dim=1)  # (B, s, d_inner, N)
            y = self.readout(h, cm[..., None]).squeeze(-1)  # (B, s, d_inner): h_t · C_t
            y = (y + x * self.D) * F.silu(z)
            return self.out_proj(y)

        def fused_heads(self, u: torch.Tensor) -> torch.Tensor:
            """Zamba's mixer as transformers' ZambaMambaMixer runs it on mamba_ssm's kernels in training:
            causal_conv1d_fn on a contiguous copy of x (its input kept alone, the SiLU fused); x_proj and dt_proj a
            head as batched products over (H, B, ·, s) views, each keeping its input as a view; selective_scan_fn a
            head (SelectiveScanFn, ``ctx.save_for_backward(u, delta, A, B, C, D, z, delta_bias, x, out)``: u the
            convolution's output, delta dt_proj's output, B, C and z views of x_proj's and in_proj's outputs, x its
            fp32 chunk states, out its output before the gate; A, D and delta_bias a layer's constants, no token's);
            the heads' gated outputs joined for out_proj."""
            from . import _fused

            b, s, _ = u.shape
            h = self.heads
            xz = self.in_proj(u)
            x = _fused.conv(xz[..., 0::2].contiguous(), self.conv1d.weight, self.conv1d.bias, True)  # (B, s, d_inner)
            xh = x.view(b, s, h, -1).permute(2, 0, 3, 1)  # (H, B, head_dim, s)
            ssm = self.x_proj.weight[:, None] @ xh  # (H, B, R + 2N, s)
            delta = self.dt_proj.weight[:, None] @ ssm[:, :, : self.rank]  # (H, B, head_dim, s), before its bias
            args = (xh, delta, ssm, xz, self.A_log, self.D, self.dt_proj.bias)

            def extras(*a):
                _, pre, decay, hs = self.heads_scan(*a)
                ends = [min(c + _fused.SCAN_CHUNK, s) - 1 for c in range(0, s, _fused.SCAN_CHUNK)]
                products = torch.stack([decay[:, st : e + 1].prod(1) for st, e in zip(range(0, s, _fused.SCAN_CHUNK), ends)], 1)
                return pre, torch.cat([products, hs[:, ends]], dim=-1).float()  # (B, chunks, H, head_dim, 2·N)

            out = _fused.kernel(lambda *a: self.heads_scan(*a)[0], *args, extras=extras, as_given=True)
            return self.out_proj(out)

        def heads_scan(self, xh, delta, ssm, xz, a_log, d_skip, dt_bias):
            """The scans a head from (H, B, ·, s) x, dt_proj's output before its bias and x_proj's output, and
            in_proj's output: (the gated output (B, s, d_inner), the output before the gate, every step's decay and
            state, (B, s, H, head_dim, N))."""
            b, s, _ = xz.shape
            h = self.heads
            x, dt = xh.permute(1, 3, 0, 2), delta.permute(1, 3, 0, 2)  # (B, s, H, head_dim)
            bm, cm = ssm.permute(1, 3, 0, 2)[..., self.rank :].split(self.state, dim=-1)  # (B, s, H, N)
            dt = F.softplus(dt + dt_bias)
            decay = torch.exp(dt[..., None] * -torch.exp(a_log))
            inflow = (dt * x)[..., None] * bm[..., None, :]
            state = x.new_zeros(decay.shape[:1] + decay.shape[2:])
            states = []
            for t in range(s):
                state = decay[:, t] * state + inflow[:, t]
                states.append(state)
            hs = torch.stack(states, dim=1)
            y = (hs @ cm[..., None]).squeeze(-1) + x * d_skip
            z = xz[..., 1::2].reshape(b, s, h, -1)
            return (y * F.silu(z)).reshape(b, s, -1), y.reshape(b, s, -1), decay, hs

        def forward_heads(self, u: torch.Tensor) -> torch.Tensor:
            """Zamba's layout: x and z interleaved in in_proj's output (channel c's x at 2c, its z at 2c + 1), and
            per head its own dt, B and C and its own scan over head_dim channels."""
            from . import _fused

            if _fused.active() and self.act is ACTIVATIONS["silu"]:
                return self.fused_heads(u)
            b, s, _ = u.shape
            h = self.heads
            xz = self.in_proj(u)
            x, z = xz[..., 0::2], xz[..., 1::2]
            x = self.act(self.conv1d(x)).reshape(b, s, h, -1)  # (B, s, H, head_dim)
            dt, bm, cm = self.x_proj(x).split([self.rank, self.state, self.state], dim=-1)  # each (B, s, H, ·)
            dt = F.softplus(self.dt_proj(dt))  # (B, s, H, head_dim)
            a = -torch.exp(self.A_log)  # (H, head_dim, N)
            decay = torch.exp(dt[..., None] * a)  # (B, s, H, head_dim, N)
            inflow = (dt * x)[..., None] * bm[..., None, :]
            state = u.new_zeros(decay.shape[:1] + decay.shape[2:])
            states = []
            for t in range(s):
                state = decay[:, t] * state + inflow[:, t]
                states.append(state)
            hs = torch.stack(states, dim=1)  # (B, s, H, head_dim, N)
            y = self.readout(hs, cm[..., None]).squeeze(-1)  # (B, s, H, head_dim): h_t · C_t per head
            y = (y + x * self.D) * F.silu(z.reshape(b, s, h, -1))
            return self.out_proj(y.reshape(b, s, -1))

    return MambaMixer
