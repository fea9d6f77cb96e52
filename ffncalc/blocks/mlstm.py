"""The mLSTM layer: a matrix-memory LSTM with exponential input gates (Beck et al. 2024, "xLSTM: Extended Long
Short-Term Memory", arXiv:2405.04517, §2.3; Beck et al. 2025, "xLSTM 7B", arXiv:2503.13427, §2), as transformers
instantiates it in xLSTM (transformers 5.23.0, models/xlstm/modeling_xlstm.py, ``xLSTMLayer`` with its native
chunkwise kernel, ``mlstm_chunkwise_fw``).

Per token, with h heads, query/key heads of d_qk and value heads of d_v (qk_dim = h·d_qk, v_dim = h·d_v):

    q, k, v, o = q(x), k(x), v(x), ogate_preact(x)          qk_dim, qk_dim, v_dim, v_dim (bias: use_bias)
    ĩ, f̃       = cap·tanh(igate_preact(x) / cap), the same for fgate_preact   one per head (with biases)
    C_t = f_t C_{t−1} + i_t k_t v_tᵀ,  n_t = f_t n_{t−1} + i_t k_t               f = σ(f̃), i = exp(ĩ), stabilised
    h_t = C_tᵀ q_t / max(|n_tᵀ q_t|, 1)                                       (C: d_qk × d_v per head)
    out = out_proj(σ(o) ⊙ layernorm_per_head(h))                            (one weight of v_dim over all heads)

The recurrence is counted in its chunkwise form (xLSTM 7B §2, after Yang et al. 2024's chunkwise linear attention),
as transformers' native kernel computes it: in a chunk of L tokens, per head, with D the L × L gate matrix

    H = ((Q Kᵀ) ∘ D) V + (Q ∘ b) C           scores, values   L × L × d_qk, L × L × d_v;  state_read  L × d_qk × d_v
    n = (Q ∘ b) n_prev + rowsum((Q Kᵀ) ∘ D)   normalizer_read  L × d_qk
    C ← g C + (K ∘ a)ᵀ V                      state_write      d_qk × L × d_v

so that per token and head the multiply-adds are L·(d_qk + d_v) inside the chunk (the full square; the causal
convention charges its lower triangle) and 2·d_qk·d_v + d_qk against the state. The chunk length L is the largest
divisor of seq_len not above ``chunk_size`` (xLSTMConfig.chunk_size, 64), so that every chunk has the same length;
transformers runs whole chunks of chunk_size and the remainder token by token, the same products whenever chunk_size
divides seq_len.

Decoding one token is the recurrence: its state is per sequence (``state_elements``), nothing per token.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.spec import Norm
from ..model.terms import ACTIVATION_OPS
from . import Block, register
from ._delta import chunk_length

# per head and key in the chunk: b_i − b_j, + ĩ_j, the row max, − m, exp (the gate matrix D), the scale and ∘ D on the
# scores, and the row sum into the normaliser
GATE_MATRIX_OPS = 8


@register
@dataclass(frozen=True)
class MLSTM(Block):
    """The mLSTM layer (matrix memory, exponential gating), counted in its chunkwise form."""

    kind = "mlstm"
    slot = "attention"
    prefix = "mlstm"
    summary = "mLSTM: matrix-memory LSTM with exponential gates, chunkwise (Beck et al. 2024, xLSTM)"
    verify_note = (
        "mlstm: the chunkwise form in equal chunks of L, the largest divisor of seq_len not above "
        "chunk_size: QKᵀ and (QKᵀ∘D)V as attention over L keys (exact: the L×L square; causal: its "
        "triangle), and Q·C, Q·n, Kᵀ·V once per token against the state"
    )

    n_heads: Positive
    qk_dim: Positive  # all heads' query/key width (xLSTMLayer.qk_dim: int(hidden_size · qk_dim_factor))
    v_dim: Positive  # all heads' value width (int(hidden_size · v_dim_factor))
    bias: bool = False  # on q, k, v, ogate_preact, out_proj and the per-head norm (xLSTMConfig.use_bias)
    chunk_size: Positive = 64  # the longest chunk of the chunkwise form (xLSTMConfig.chunk_size)

    def check(self, d_model: int) -> None:
        for name in ("qk_dim", "v_dim"):
            if getattr(self, name) % self.n_heads:
                raise SpecError((name,), f"{self.n_heads} heads do not divide {name} {getattr(self, name)}")

    @property
    def dqk(self) -> int:
        return self.qk_dim // self.n_heads

    @property
    def dv(self) -> int:
        return self.v_dim // self.n_heads

    def head_count(self) -> int:
        return self.n_heads

    def chunk_tokens(self) -> int:
        return self.chunk_size

    def describe(self) -> str:
        return f"mLSTM {self.n_heads} heads, q/k × {self.dqk}, v × {self.dv}"

    def facts(self) -> dict[str, object]:
        return {"heads": f"mLSTM {self.n_heads}"}

    def terms(self, e, model, seq_len: int) -> None:
        d, h, n, dqk, dv = model.d_model, self.n_heads, e.n, self.dqk, self.dv
        length = chunk_length(seq_len, self.chunk_size)
        e.linear("mlstm.q", d, self.qk_dim, self.bias, n, heads=h)
        e.linear("mlstm.k", d, self.qk_dim, self.bias, n, heads=h)
        e.linear("mlstm.v", d, self.v_dim, self.bias, n, heads=h)
        e.linear("mlstm.ogate_preact", d, self.v_dim, self.bias, n)
        e.linear("mlstm.igate_preact", d, h, True, n)
        e.linear("mlstm.fgate_preact", d, h, True, n)
        # the soft caps cap·tanh(x / cap) of both gates (3 each), logsigmoid of f (4) and its running sum (1)
        e.op("mlstm.gates", n * h * (2 * 3 + 4 + 1))
        e.term("mlstm.scores", "core", (h, length, dqk), n, numel=0, macs=n * h * length * dqk, grows=False)
        e.op("mlstm.gate_matrix", n * h * GATE_MATRIX_OPS * length)
        e.term("mlstm.values", "core", (h, length, dv), n, numel=0, macs=n * h * length * dv, grows=False)
        # against the state: C (d_qk × d_v) read and written, n (d_qk) read, once per token whatever the chunk
        for name in ("state_read", "state_write"):
            e.term(f"mlstm.{name}", "core", (h, 1, dqk * dv), n, numel=0, macs=n * h * dqk * dv, grows=False)
        e.term("mlstm.normalizer_read", "core", (h, 1, dqk), n, numel=0, macs=n * h * dqk, grows=False)
        # Q's decay and scale (2 per element), K's decay (1), intra + inter (1 per value), the denominator's max, abs
        # and divide (3 per value), and per chunk the decay and update of C and n, rounded up to whole FLOPs per token
        e.op("mlstm.state_ops", n * (3 * self.qk_dim + 4 * self.v_dim + -(-2 * h * (dqk * dv + dqk) // length)))
        # xLSTMMultiHeadLayerNorm: a LayerNorm over each head, one weight (and a bias with use_bias) over all heads
        e.norm("mlstm.multihead_norm", Norm("layernorm", bias=self.bias), self.v_dim, n)
        e.op("mlstm.ogate", n * (ACTIVATION_OPS["sigmoid"] + 1) * self.v_dim)
        e.linear("mlstm.out_proj", self.v_dim, d, self.bias, n)

    def cache_elements(self, model) -> int:
        """Nothing grows with the context: the state is per sequence."""
        return 0

    def state_elements(self, model) -> int:
        """The matrix memory C (d_qk × d_v per head), the normaliser n (d_qk per head) and the stabiliser m (one per
        head): transformers' xLSTMCache rnn_state, fp32 (counted as elements)."""
        h = self.n_heads
        return h * self.dqk * self.dv + h * self.dqk + h

    def kept_elements(self, model) -> int:
        """16-bit elements a token a training forward keeps with the xLSTM chunkwise kernel (NX-AI's mlstm_kernels,
        which transformers' xLSTM calls: its chunkwise autograd Function, recompute_states_in_bw, does
        ``ctx.save_for_backward(matQ, matK, matV, vecI, vecF, matC_initial, vecN_initial, scaM_initial, matC_all,
        vecN_all, scaM_all, vecN_out, vecM_out, ...)`` with the chunk states None, recomputed in backward): the input
        (d, the projections'); q, k and v as the kernel reads them, (B, h, s, d) made contiguous (2·qk_dim + v_dim);
        each gate's tanh output (its soft cap's gradient, h each) and the capped gate made contiguous (h each); the
        normaliser and the stabiliser, fp32 a token and head (2 · 2·h); the kernel's output (v_dim) and the
        per-head LayerNorm's fp32 mean and inverse std (2 · 2·h, a fused norm); the norm's output and the output
        gate's sigmoid (2·v_dim, the product's); the gated output (v_dim, out_proj's input)."""
        h = self.n_heads
        return model.d_model + 2 * self.qk_dim + self.v_dim + 4 * h + 4 * h + self.v_dim + 4 * h + 3 * self.v_dim

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import math

    import torch
    from torch import nn
    from torch.nn import functional as F

    from ._torch import Linear, MatMul, lower_apply, lower_product

    class HeadLayerNorm(nn.Module):
        """A LayerNorm over each head's d_v, then one weight (and bias) over all heads' v_dim."""

        is_norm = True

        def __init__(self, heads: int, width: int, bias: bool):
            super().__init__()
            self.heads = heads
            self.weight = nn.Parameter(torch.ones(width))
            self.bias = nn.Parameter(torch.zeros(width)) if bias else None

        def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, s, h, d_v) -> (B, s, v_dim)
            x = F.layer_norm(x, (x.shape[-1],)).flatten(-2)
            x = x * self.weight
            return x + self.bias if self.bias is not None else x

    class MLSTMLayer(nn.Module):
        def __init__(self, spec: MLSTM, model, causal: bool):
            super().__init__()
            d, h = model.d_model, spec.n_heads
            self.heads, self.dqk, self.dv, self.chunk_size, self.causal = h, spec.dqk, spec.dv, spec.chunk_size, causal
            self.q = Linear(d, spec.qk_dim, bias=spec.bias)
            self.k = Linear(d, spec.qk_dim, bias=spec.bias)
            self.v = Linear(d, spec.v_dim, bias=spec.bias)
            self.ogate_preact = Linear(d, spec.v_dim, bias=spec.bias)
            self.igate_preact = Linear(d, h, bias=True)
            self.fgate_preact = Linear(d, h, bias=True)
            self.scores = MatMul()
            self.values = MatMul()
            self.state_read = MatMul()
            self.normalizer_read = MatMul()
            self.state_write = MatMul()
            self.multihead_norm = HeadLayerNorm(h, spec.v_dim, spec.bias)
            self.out_proj = Linear(spec.v_dim, d, bias=spec.bias)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            from . import _fused

            b, s, _ = x.shape
            h = self.heads
            cap = 15.0  # xLSTMConfig.gate_soft_cap: soft_cap(·) = cap·tanh(· / cap)
            # (B, h, s, d) and (B, h, s), as xLSTMLayer hands them to its kernel
            q, k, v = (t.view(b, s, h, -1).transpose(1, 2) for t in (self.q(x), self.k(x), self.v(x)))
            i = (cap * torch.tanh(self.igate_preact(x) / cap)).transpose(1, 2)
            f = (cap * torch.tanh(self.fgate_preact(x) / cap)).transpose(1, 2)
            if _fused.active():  # the chunkwise kernel keeps q, k, v, the gates, the normaliser and the stabiliser
                hs = _fused.kernel(lambda *a: self.cell(*a)[0], q, k, v, i, f, extras=lambda *a: self.cell(*a)[1:])
                norm = self.multihead_norm
                bias = None if norm.bias is None else norm.bias.view(h, -1)
                normed = _fused.norm(hs, norm.weight.view(h, -1), bias, 1e-5, True).flatten(-2)
                return self.out_proj(torch.sigmoid(self.ogate_preact(x)) * normed)
            hs = self.cell(q, k, v, i, f)[0]
            return self.out_proj(torch.sigmoid(self.ogate_preact(x)) * self.multihead_norm(hs))

        def cell(self, q, k, v, i, f):
            """The chunkwise mLSTM over (B, h, s, d) q, k, v and (B, h, s) gate pre-activations: (its output
            (B, s, h, d_v), the normaliser max(|n·q|, 1) and the largest log gate a token and head, (B, h, s) fp32)."""
            b, h, s, dqk = q.shape
            dv = v.shape[-1]
            length = chunk_length(s, self.chunk_size)
            n = s // length
            q, k, v = (t.reshape(b, h, n, length, t.shape[-1]) for t in (q, k, v))
            i, f = i.reshape(b, h, n, length), f.reshape(b, h, n, length)
            x = q
            cum = F.logsigmoid(f).cumsum(-1)  # (B, h, n, L): log of the forget gates' product inside the chunk
            below = torch.ones(length, length, dtype=torch.bool, device=x.device).tril()
            log_d = (cum[..., :, None] - cum[..., None, :] + i[..., None, :]).masked_fill(~below, float("-inf"))
            gate = torch.exp(log_d.clamp(max=30.0))  # D: zero above the diagonal
            scale = dqk**-0.5
            block = max(1, math.isqrt(length))
            if self.causal:
                m = lower_product(self.scores, q, k, block) * scale * gate
                intra = lower_apply(self.values, m, v, block)
            else:
                m = self.scores(q, k.transpose(-2, -1)) * scale * gate  # (B, h, n, L, L): the full square
                intra = self.values(m, v)
            decay_in = torch.exp(cum)[..., None]  # the decay from the chunk's start to each token
            last = cum[..., -1:]
            key_w = torch.exp((last - cum + i).clamp(max=30.0))[..., None]  # each key's weight at the chunk's end
            if x.is_meta:  # no values to carry: the loop's products, each batched over the chunks (the same FLOPs)
                qc = q * decay_in * scale
                num = intra + self.state_read(qc, x.new_zeros(b, h, n, dqk, dv))
                den = self.normalizer_read(qc, x.new_zeros(b, h, n, dqk, 1)) + m.sum(-1, keepdim=True)
                den = torch.maximum(den.abs(), torch.ones_like(den))
                outs = num / den
                self.state_write((k * key_w).transpose(-2, -1), v)
            else:
                c_state, n_state = x.new_zeros(b, h, dqk, dv), x.new_zeros(b, h, dqk, 1)
                outs, dens = [], []
                for c in range(n):  # the states between chunks, one after the other
                    qc = q[:, :, c] * decay_in[:, :, c] * scale
                    num = intra[:, :, c] + self.state_read(qc, c_state)
                    den = self.normalizer_read(qc, n_state) + m[:, :, c].sum(-1, keepdim=True)
                    den = torch.maximum(den.abs(), torch.ones_like(den))
                    outs.append(num / den)
                    dens.append(den)
                    kc = k[:, :, c] * key_w[:, :, c]
                    g = torch.exp(last[:, :, c])[..., None]
                    c_state = g * c_state + self.state_write(kc.transpose(-2, -1), v[:, :, c])
                    n_state = g * n_state + kc.sum(-2)[..., None]
                outs = torch.stack(outs, dim=2)
            hs = outs.reshape(b, h, s, dv).transpose(1, 2)  # (B, s, h, d_v)
            den = den.reshape(b, h, s) if x.is_meta else torch.stack(dens, dim=2).reshape(b, h, s)
            return hs, den.float(), log_d.amax(-1).reshape(b, h, s).float()

    return MLSTMLayer
