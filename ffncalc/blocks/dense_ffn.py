"""The 2-layer MLP of the original transformer: down(act(up(x))) (Vaswani et al. 2017 §3.3)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import ClassVar, Literal

from ..model.spec import Width, width
from ..model.terms import ACTIVATION_OPS
from . import Block, register

DenseActivation = Literal["relu", "relu2", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "identity"]


@register
@dataclass(frozen=True)
class DenseFFN(Block):
    """2-layer MLP: down(act(up(x)))."""

    kind = "dense"
    slot = "ffn"
    summary = "2-layer MLP down(act(up x)) (Vaswani et al. 2017)"
    gated: ClassVar[bool] = False

    d_ff: Width
    activation: DenseActivation = "gelu"
    bias: bool = False

    @property
    def variant(self) -> str:
        return f"dense {self.activation}"

    def resolve(self, d_model: int) -> DenseFFN:
        return replace(self, d_ff=width(self.d_ff, d_model))

    def describe(self) -> str:
        return self.variant

    def facts(self) -> dict[str, object]:
        return {"ffn": self.variant, "d_ff": self.d_ff}

    def emit(self, e, prefix: str, d: int, copies: int, active: int, **kw) -> None:
        """The block's terms under ``prefix``: ``copies`` instances, ``active`` of them used per token.
        Dense: down(act(up x)); gated: down(act(gate x) ⊙ up x) (Shazeer 2020, eq. 5-6)."""
        f = self.d_ff
        if self.gated:
            e.linear(f"{prefix}gate", d, f, self.bias, copies, active, **kw)
        e.linear(f"{prefix}up", d, f, self.bias, copies, active, **kw)
        e.op(f"{prefix}act", active * f * ACTIVATION_OPS[self.activation], **kw)
        if self.gated:
            e.op(f"{prefix}gate_product", active * f, **kw)
        e.linear(f"{prefix}down", f, d, self.bias, copies, active, **kw)

    def terms(self, e, model, seq_len: int) -> None:
        self.emit(e, "ffn.", model.d_model, e.n, e.n)

    def kept_elements(self, model) -> int:
        """Dense: the input x (for up's weight gradient), the pre-activation (for the activation's gradient)
        and the activation (for down's weight gradient): d + 2·d_ff. Gated: x, the gate and up outputs, the
        activated gate (for the product's gradient) and the product (for down): d + 4·d_ff."""
        return model.d_model + (4 if self.gated else 2) * self.d_ff

    def torch_module(self, model, causal: bool):
        return mlp_module()(model.d_model, self)

    def body(self) -> DenseFFN:
        return self

    def with_body(self, body: Block) -> Block:
        return body


@cache
def mlp_module():
    import torch
    from torch import nn

    from ._torch import ACTIVATIONS, Linear

    class MLP(nn.Module):
        """Dense: down(act(up x)). Gated: down(act(gate x) ⊙ up x)."""

        def __init__(self, d: int, ffn: DenseFFN):
            super().__init__()
            self.gated = ffn.gated
            if self.gated:
                self.gate = Linear(d, ffn.d_ff, bias=ffn.bias)
            self.up = Linear(d, ffn.d_ff, bias=ffn.bias)
            self.down = Linear(ffn.d_ff, d, bias=ffn.bias)
            self.act = ACTIVATIONS[ffn.activation]

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.act(self.gate(x)) * self.up(x) if self.gated else self.act(self.up(x))
            return self.down(h)

    return MLP
