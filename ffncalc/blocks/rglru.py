"""Griffin's recurrent block: a gated branch beside a short convolution and the Real-Gated Linear Recurrent Unit
(RG-LRU) (De et al. 2024, "Griffin: Mixing Gated Linear Recurrences with Local Attention for Efficient Language
Models", arXiv:2402.19427, §2.4, Figure 2), as transformers instantiates it in RecurrentGemma (transformers 5.23.0,
models/recurrent_gemma/modeling_recurrent_gemma.py, ``RecurrentGemmaRecurrentBlock`` and ``RecurrentGemmaRglru``).

Per token, with w = lru_width channels in H blocks of w/H (the gates are block-diagonal):

    y   = act(linear_y(x))                        d -> w, with a bias; act: gelu (tanh)
    u   = conv1d(linear_x(x))                     d -> w, with a bias; a causal depthwise conv, kernel K, with a bias
    i_t = σ(W_i u_t + b_i),  r_t = σ(W_r u_t + b_r)      W_i, W_r: H blocks of (w/H)², each with a bias
    a_t = exp(−8 · r_t · softplus(Λ))             Λ: one learned parameter per channel (recurrent_param)
    h_t = a_t ⊙ h_{t−1} + √(1 − a_t²) ⊙ (i_t ⊙ u_t)     a diagonal recurrence: elementwise work only
    out = linear_out(h ⊙ y)                       w -> d, with a bias

The recurrence multiplies no matrices; its state is per sequence (``state_elements``), nothing per token.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.terms import ACTIVATION_OPS
from . import Block, register
from .dense_ffn import DenseActivation

# per channel and token: −8·r·softplus(Λ) (two multiplies; softplus(Λ) once per forward), a = exp(·), a² = exp(2·)
# (a multiply and an exp), √(1 − a²) (a subtract and a root), i ⊙ u, times the root, a ⊙ h + (·) (a multiply and
# an add), and h ⊙ y
RGLRU_OPS = 2 + 1 + 2 + 2 + 1 + 1 + 2 + 1


@register
@dataclass(frozen=True)
class RGLRU(Block):
    """Griffin's recurrent block: a gelu branch times a conv and RG-LRU branch."""

    kind = "rglru"
    slot = "attention"
    prefix = "recurrent"
    summary = "Griffin's recurrent block: short conv and the RG-LRU diagonal recurrence (De et al. 2024)"

    n_blocks: Positive  # the gates' diagonal blocks (RecurrentGemma: num_attention_heads)
    width: Positive | None = None  # lru_width; default d_model
    conv_kernel: Positive = 4  # conv1d_width
    activation: DenseActivation = "gelu_tanh"  # on the y branch (hidden_activation)

    def resolve(self, d_model: int) -> RGLRU:
        return replace(self, width=self.width or d_model)

    def check(self, d_model: int) -> None:
        if (self.width or d_model) % self.n_blocks:
            raise SpecError(("n_blocks",), f"{self.n_blocks} gate blocks do not divide the width {self.width or d_model}")

    @property
    def block_width(self) -> int:
        return self.width // self.n_blocks

    def describe(self) -> str:
        return f"RG-LRU width {self.width}, {self.n_blocks} gate blocks, conv {self.conv_kernel}"

    def facts(self) -> dict[str, object]:
        return {"heads": f"RG-LRU {self.n_blocks}"}

    def terms(self, e, model, seq_len: int) -> None:
        d, w, n, k, hb, bw = model.d_model, self.width, e.n, self.conv_kernel, self.n_blocks, self.block_width
        e.linear("recurrent.linear_y", d, w, True, n)
        e.op("recurrent.y_act", n * w * ACTIVATION_OPS[self.activation])
        e.linear("recurrent.linear_x", d, w, True, n)
        # Depthwise Conv1d(w, w, K, groups=w): K multiply-adds per channel and token
        e.term("recurrent.conv1d.weight", "weight", (w, 1, k), n, macs=n * w * k)
        e.term("recurrent.conv1d.bias", "bias", (w,), n, elementwise=n * w)
        # the two gates: H blocks of (w/H)² each (baddbmm), with a bias and a sigmoid
        for gate in ("input_gate", "recurrent_gate"):
            e.term(f"recurrent.{gate}.weight", "weight", (hb, bw, bw), n, macs=n * hb * bw * bw, component="recurrent.rg_lru")
            e.term(f"recurrent.{gate}.bias", "bias", (hb, bw), n, elementwise=n * w, component="recurrent.rg_lru")
            e.op(f"recurrent.{gate}_sigmoid", n * w * ACTIVATION_OPS["sigmoid"])
        e.term("recurrent.recurrent_param", "bias", (w,), n, component="recurrent.rg_lru")
        e.op("recurrent.scan", n * w * RGLRU_OPS)
        e.linear("recurrent.linear_out", w, d, True, n)

    def state_elements(self, model) -> int:
        """The recurrence's state h (w channels, fp32 in transformers: counted as elements) and the last K − 1
        inputs of the convolution, w each."""
        return self.width + self.width * (self.conv_kernel - 1)

    def kept_elements(self, model) -> int:
        """16-bit elements a token a training forward keeps with causal-conv1d's kernel for the convolution (its input
        alone) and the gates and the linear recurrence fused as one kernel that keeps its inputs and its output, as
        flash-linear-attention's HGRN recurrence (fla/ops/hgrn/fused_recurrent.py, ``ctx.save_for_backward(g, o,
        initial_state)``) keeps its gate and output and recomputes the rest (RecurrentGemma's own Pallas scan runs
        the recurrence alone; transformers runs it eagerly): the input (d, linear_x's and linear_y's weight
        gradients); the y branch, linear_y's output and y = act(·) (2·w for GELU; w where the activation keeps only
        its output, which is y, or is the identity; quick GELU its sigmoid as well); the convolution's input (w);
        its output u (w: the gates' and the kernel's input); the two gates' pre-activations (2·w); the recurrence's
        output h (w, which the product h ⊙ y needs too); and h ⊙ y (w, linear_out's input)."""
        w = self.width
        y_branch = {"relu": w, "tanh": w, "sigmoid": w, "identity": w, "quick_gelu": 3 * w}.get(self.activation, 2 * w)
        return model.d_model + y_branch + 6 * w

    def torch_module(self, model, causal: bool):
        return _module()(self, model)


@cache
def _module():
    import torch
    from torch import nn
    from torch.nn import functional as F

    from ._torch import ACTIVATIONS, CausalConv1d, Linear

    class BlockDiagonal(nn.Module):
        """H blocks of (w/H)², with a bias: x (…, w) -> (…, w). verify attributes its FLOPs to its weight."""

        weight_flops = True

        def __init__(self, blocks: int, width: int):
            super().__init__()
            self.weight = nn.Parameter(torch.zeros(blocks, width, width))
            self.bias = nn.Parameter(torch.zeros(blocks, width))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            lead = x.shape[:-1]
            blocks, width = self.bias.shape
            x = x.reshape(-1, blocks, width).transpose(0, 1)  # (H, T, w/H)
            out = torch.baddbmm(self.bias[:, None, :], x, self.weight)
            return out.transpose(0, 1).reshape(*lead, blocks * width)

    class Recurrent(nn.Module):
        def __init__(self, spec: RGLRU, model):
            super().__init__()
            d, w = model.d_model, spec.width
            self.act = ACTIVATIONS[spec.activation]
            self.linear_y = Linear(d, w, bias=True)
            self.linear_x = Linear(d, w, bias=True)
            self.conv1d = CausalConv1d(w, spec.conv_kernel, True)
            self.input_gate = BlockDiagonal(spec.n_blocks, spec.block_width)
            self.recurrent_gate = BlockDiagonal(spec.n_blocks, spec.block_width)
            self.recurrent_param = nn.Parameter(torch.zeros(w))
            self.linear_out = Linear(w, d, bias=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            from . import _fused

            y = self.act(self.linear_y(x))
            u = self.conv1d(self.linear_x(x))
            gates = (u, self.input_gate(u), self.recurrent_gate(u), self.recurrent_param)
            # as a fused kernel: the gates and the scan in one, keeping their inputs and the scan's output
            h = _fused.kernel(self.scan, *gates, keep_output=True) if _fused.active() else self.scan(*gates)
            return self.linear_out(h * y)

        @staticmethod
        def scan(u, input_gate, recurrent_gate, recurrent_param):
            """The RG-LRU from its input u and the two gates' pre-activations: h, every step's state."""
            i, r = torch.sigmoid(input_gate), torch.sigmoid(recurrent_gate)
            log_a = -8.0 * r * F.softplus(recurrent_param)
            a = torch.exp(log_a)
            xs = i * u * torch.sqrt(1 - torch.exp(2 * log_a))
            h = torch.zeros_like(xs[:, 0])
            outs = []
            for t in range(xs.shape[1]):  # the diagonal recurrence, token by token
                h = a[:, t] * h + xs[:, t]
                outs.append(h)
            return torch.stack(outs, dim=1)

    return Recurrent
