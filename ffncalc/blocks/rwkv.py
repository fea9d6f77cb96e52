"""RWKV-4's two blocks (Peng et al. 2023, "RWKV: Reinventing RNNs for the Transformer Era", arXiv:2305.13048, §3),
as transformers instantiates them (transformers 5.23.0, models/rwkv/modeling_rwkv.py): the time mix, the token
mixer (``RwkvSelfAttention``), and the channel mix, the per-token FFN (``RwkvFeedForward``).

Both read the token before each one through a token shift: with x_{t-1} (zero before the first token) and a learned
mix μ per feature, mix(x, μ) = x ⊙ μ + x_{t-1} ⊙ (1 − μ).

Time mix, with A = attention_dim (RwkvConfig.attention_hidden_size, default d_model), per token:

    k = key(mix(x, μ_k)),  v = value(mix(x, μ_v)),  r = sigmoid(receptance(mix(x, μ_r)))     (d -> A, no bias)
    wkv_t = (Σ_{i<t} e^{−(t−1−i)·w} ⊙ e^{k_i} ⊙ v_i + e^{u + k_t} ⊙ v_t) / (the same sums without v)
    out = output(r ⊙ wkv)                                                                     (A -> d, no bias)

with w = exp(time_decay) and u = time_first, one of each per channel (the paper's eq. 14-17). The WKV is a recurrence
per channel with a numerator, a denominator and a running maximum for stability (transformers'
rwkv_linear_attention_cpu, the CUDA kernel's algorithm): elementwise work only, no matmul, at any context length.

Channel mix, with I = d_ff (RwkvConfig.intermediate_size, default 4·d_model):

    k = relu(key(mix(x, μ_k)))²   (d -> I),   r = sigmoid(receptance(mix(x, μ_r)))   (d -> d)
    out = r ⊙ value(k)            (I -> d)                                          (no bias anywhere)

Decoding keeps, per layer and sequence, the time mix's numerator, denominator and maximum (A each) and the last
token's input to each block (d each, for the token shift): nothing grows with the context.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from ..model.schema import Positive
from ..model.terms import ACTIVATION_OPS
from . import Block, register

MIX_OPS = 3  # x·μ, x_{t-1}·(1 − μ), their sum (1 − μ is once per forward)
# Per channel and token, as rwkv_linear_attention_cpu computes it: the output, u + k, a maximum, two subtractions,
# two exps, four multiplies, two adds and a divide (12); the state update, w + the maximum so far, a maximum, two
# subtractions, two exps, four multiplies and two adds (11).
WKV_OPS = 23


def _mix(e, name: str, d: int, n: int) -> None:
    """A token-shift mix μ of shape (1, 1, d), as transformers holds it."""
    e.term(name, "bias", (1, 1, d), n, elementwise=n * MIX_OPS * d)


@register
@dataclass(frozen=True)
class RwkvTimeMix(Block):
    """RWKV-4's time mix: token-shifted k, v, r and the WKV recurrence per channel (Peng et al. 2023 §3)."""

    kind = "rwkv_time_mix"
    slot = "attention"
    prefix = "attention"  # transformers' RwkvBlock.attention; terms are attention.key, attention.time_decay, …
    summary = "RWKV-4 time mix: token shift, k/v/r projections and the WKV recurrence per channel (Peng et al. 2023)"
    verify_note = (
        "rwkv_time_mix: the WKV is a recurrence per channel, elementwise work only (no matmul); its "
        "projections are the block's only matmuls"
    )

    attention_dim: Positive | None = None  # default d_model (RwkvConfig.attention_hidden_size)

    def resolve(self, d_model: int) -> RwkvTimeMix:
        return replace(self, attention_dim=self.attention_dim or d_model)

    def describe(self) -> str:
        return f"RWKV time mix {self.attention_dim}"

    def facts(self) -> dict[str, object]:
        return {"heads": f"WKV {self.attention_dim}"}

    def terms(self, e, model, seq_len: int) -> None:
        d, a, n = model.d_model, self.attention_dim, e.n
        for mix in ("key", "value", "receptance"):
            _mix(e, f"attention.time_mix_{mix}", d, n)
        e.linear("attention.key", d, a, False, n)
        e.linear("attention.value", d, a, False, n)
        e.linear("attention.receptance", d, a, False, n)
        e.op("attention.receptance_sigmoid", n * ACTIVATION_OPS["sigmoid"] * a)
        # w = -exp(time_decay) once per forward; the recurrence per channel and token
        e.term("attention.time_decay", "bias", (a,), n)
        e.term("attention.time_first", "bias", (a,), n, elementwise=n * WKV_OPS * a)
        e.op("attention.gate", n * a)  # r ⊙ wkv
        e.linear("attention.output", a, d, False, n)

    def state_elements(self, model) -> int:
        """The WKV's numerator, denominator and maximum (A each; transformers keeps them in fp32) and the last
        token's input to the block (d), which the next token's shift reads."""
        return 3 * self.attention_dim + model.d_model

    def kept_elements(self, model) -> int:
        """16-bit elements a token a training forward keeps with the RWKV-4 CUDA kernel (transformers'
        RwkvLinearAttention, ``ctx.save_for_backward(time_decay, time_first, key, value, output)``: k and v as given
        and its output, the recurrence recomputed in backward; −exp(time_decay) is a layer's A values, no token's)
        and each token-shift mix as one fused kernel keeping its input alone (flash-linear-attention's
        fla/modules/token_shift.py, the shifted copy recomputed): the block's input (d), the three mixes (3·d, the
        projections' inputs), k and v (2·A, the kernel's), r = sigmoid(·) (A, the sigmoid's output and the gate's
        operand), the WKV's output (A) and the gated output (A, output's input)."""
        return 4 * model.d_model + 5 * self.attention_dim

    def torch_module(self, model, causal: bool):
        return _modules()[0](self, model)


@register
@dataclass(frozen=True)
class RwkvChannelMix(Block):
    """RWKV-4's channel mix: r ⊙ value(relu(key(x))²) with token-shifted inputs (Peng et al. 2023 §3)."""

    kind = "rwkv_channel_mix"
    slot = "ffn"
    prefix = "feed_forward"  # transformers' RwkvBlock.feed_forward
    summary = "RWKV-4 channel mix: token shift, a squared-ReLU MLP gated by sigmoid(receptance) (Peng et al. 2023)"

    d_ff: Positive | None = None  # default 4 · d_model (RwkvConfig.intermediate_size)

    def resolve(self, d_model: int) -> RwkvChannelMix:
        return replace(self, d_ff=self.d_ff or 4 * d_model)

    def describe(self) -> str:
        return f"RWKV channel mix {self.d_ff}"

    def facts(self) -> dict[str, object]:
        return {"ffn": "RWKV channel mix", "d_ff": self.d_ff}

    def terms(self, e, model, seq_len: int) -> None:
        d, i, n = model.d_model, self.d_ff, e.n
        _mix(e, "feed_forward.time_mix_key", d, n)
        _mix(e, "feed_forward.time_mix_receptance", d, n)
        e.linear("feed_forward.key", d, i, False, n)
        e.op("feed_forward.act", n * ACTIVATION_OPS["relu2"] * i)
        e.linear("feed_forward.receptance", d, d, False, n)
        e.op("feed_forward.gate", n * (ACTIVATION_OPS["sigmoid"] + 1) * d)  # sigmoid(r) ⊙ value
        e.linear("feed_forward.value", i, d, False, n)

    def state_elements(self, model) -> int:
        """The last token's input to the block (d), which the next token's shift reads."""
        return model.d_model

    def kept_elements(self, model) -> int:
        """16-bit elements a token a training forward keeps, each token-shift mix a fused kernel keeping its input
        alone (fla/modules/token_shift.py): the block's input (d), the two mixes (2·d, the projections' inputs), the
        ReLU's output (I, which the ReLU and the square both read) and its square (I, value's input), r (d, the
        sigmoid's output) and value's output (d), the gate's operands."""
        return 5 * model.d_model + 2 * self.d_ff

    def torch_module(self, model, causal: bool):
        return _modules()[1](self, model)


@cache
def _modules():
    import torch
    from torch import nn

    from ._torch import Linear

    def shifted(x: torch.Tensor) -> torch.Tensor:
        """x_{t-1}, zero before the first token (transformers: nn.ZeroPad2d((0, 0, 1, -1)))."""
        return torch.cat([torch.zeros_like(x[:, :1]), x[:, :-1]], dim=1)

    def mix(x, prev, mu):
        return x * mu + prev * (1 - mu)

    def shift_mix(x, mu):
        return mix(x, shifted(x), mu)

    def mixed(x, prev, mu):
        """mix(x, μ); inside ``fused()`` as a fused token-shift kernel (flash-linear-attention's
        fla/modules/token_shift.py, the mix one more multiply-add) keeping x alone, the shift recomputed."""
        from . import _fused

        return _fused.kernel(shift_mix, x, mu) if _fused.active() else mix(x, prev, mu)

    def wkv(k, v, time_decay, time_first):
        """The WKV as its numerically stable recurrence, one token at a time: (B, s, A) from k and v."""
        w = -torch.exp(time_decay)
        num = torch.zeros_like(k[:, 0])
        den = torch.zeros_like(k[:, 0])
        top = torch.full_like(k[:, 0], -1e38)
        out = []
        for t in range(k.shape[1]):
            kt, vt = k[:, t], v[:, t]
            m = torch.maximum(top, kt + time_first)
            e1, e2 = torch.exp(top - m), torch.exp(kt + time_first - m)
            out.append((e1 * num + e2 * vt) / (e1 * den + e2))
            m = torch.maximum(top + w, kt)
            e1, e2 = torch.exp(top + w - m), torch.exp(kt - m)
            num, den, top = e1 * num + e2 * vt, e1 * den + e2, m
        return torch.stack(out, dim=1)

    class TimeMix(nn.Module):
        """The time mix with the WKV as its numerically stable recurrence, one token at a time."""

        def __init__(self, spec: RwkvTimeMix, model):
            super().__init__()
            d, a = model.d_model, spec.attention_dim
            self.time_decay = nn.Parameter(torch.empty(a))
            self.time_first = nn.Parameter(torch.empty(a))
            self.time_mix_key = nn.Parameter(torch.empty(1, 1, d))
            self.time_mix_value = nn.Parameter(torch.empty(1, 1, d))
            self.time_mix_receptance = nn.Parameter(torch.empty(1, 1, d))
            self.key = Linear(d, a, bias=False)
            self.value = Linear(d, a, bias=False)
            self.receptance = Linear(d, a, bias=False)
            self.output = Linear(a, d, bias=False)
            if self.time_decay.device.type != "meta":
                with torch.no_grad():
                    for p in (self.time_decay, self.time_first, self.time_mix_key, self.time_mix_value, self.time_mix_receptance):
                        p.uniform_(0, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            from . import _fused

            prev = shifted(x)
            k = self.key(mixed(x, prev, self.time_mix_key))
            v = self.value(mixed(x, prev, self.time_mix_value))
            r = torch.sigmoid(self.receptance(mixed(x, prev, self.time_mix_receptance)))
            args = (k, v, self.time_decay, self.time_first)
            # as the RWKV-4 CUDA kernel: k, v and its output kept, the recurrence recomputed in backward
            out = _fused.kernel(wkv, *args, keep_output=True) if _fused.active() else wkv(*args)
            return self.output(r * out)

    class ChannelMix(nn.Module):
        def __init__(self, spec: RwkvChannelMix, model):
            super().__init__()
            d, i = model.d_model, spec.d_ff
            self.time_mix_key = nn.Parameter(torch.empty(1, 1, d))
            self.time_mix_receptance = nn.Parameter(torch.empty(1, 1, d))
            self.key = Linear(d, i, bias=False)
            self.receptance = Linear(d, d, bias=False)
            self.value = Linear(i, d, bias=False)
            if self.time_mix_key.device.type != "meta":
                with torch.no_grad():
                    self.time_mix_key.uniform_(0, 1)
                    self.time_mix_receptance.uniform_(0, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            prev = shifted(x)
            k = torch.relu(self.key(mixed(x, prev, self.time_mix_key))).square()
            r = torch.sigmoid(self.receptance(mixed(x, prev, self.time_mix_receptance)))
            return r * self.value(k)

    return TimeMix, ChannelMix
