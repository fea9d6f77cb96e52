"""The 2-layer MLP of the original transformer: down(act(up(x))) (Vaswani et al. 2017 §3.3)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import ClassVar, Literal

from ..model.spec import Norm, Width, width
from ..model.terms import ACTIVATION_OPS
from . import Block, register

DenseActivation = Literal["relu", "relu2", "gelu", "gelu_tanh", "quick_gelu", "silu", "sigmoid", "tanh", "identity", "xielu"]

# Activations with learned parameters, and their elementwise FLOPs per element (one per arithmetic step, as
# model/terms.py counts the others). xIELU (Huang et al. 2025, "Deriving Activation Functions Using
# Integration"; Apertus): x > 0: α_p·x² + β·x, else (expm1(min(x, ε)) − x)·α_n + β·x, with α_p = softplus(a_p)
# and α_n = β + softplus(a_n) from two learned scalars a_p, a_n; the negative branch: min, expm1, subtract,
# multiply, multiply, add, and the compare that picks the branch: 7.
LEARNED_ACTIVATIONS = {"xielu": ("alpha_p", "alpha_n")}
EXTRA_ACTIVATION_OPS = {"xielu": 7}


def activation_ops(name: str) -> int:
    """Elementwise FLOPs of one activation per element."""
    return EXTRA_ACTIVATION_OPS[name] if name in EXTRA_ACTIVATION_OPS else ACTIVATION_OPS[name]


# Activations whose backward reads their result, not their input (torch's tools/autograd/derivatives.yaml: relu,
# sigmoid and tanh use ``result``; gelu and silu ``self``), and the identity, which has no input of its own to keep.
OUTPUT_SAVING = frozenset({"relu", "sigmoid", "tanh", "identity"})


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
    sub_norm: bool = False  # a norm of the model's kind over the d_ff hidden features before down (BitNet)
    down_bias: bool | None = None  # down's bias where it differs from the others' (GTE: GteMLP.down_proj's alone)

    @property
    def out_bias(self) -> bool:
        """Whether down has a bias: ``down_bias`` where stated, else ``bias``."""
        return self.bias if self.down_bias is None else self.down_bias

    @property
    def variant(self) -> str:
        return f"dense {self.activation}"

    def resolve(self, d_model: int) -> DenseFFN:
        return replace(self, d_ff=width(self.d_ff, d_model))

    def describe(self) -> str:
        return self.variant + (", sub-norm" if self.sub_norm else "")

    def facts(self) -> dict[str, object]:
        return {"ffn": self.variant, "d_ff": self.d_ff}

    def emit(self, e, prefix: str, d: int, copies: int, active: int, norm=None, **kw) -> None:
        """The block's terms under ``prefix``: ``copies`` instances, ``active`` of them used per token.
        Dense: down(act(up x)); gated: down(act(gate x) ⊙ up x) (Shazeer 2020, eq. 5-6). ``norm``: the
        model's norm, which a sub-norm takes (default: RMSNorm)."""
        f = self.d_ff
        if self.gated:
            e.linear(f"{prefix}gate", d, f, self.bias, copies, active, **kw)
        e.linear(f"{prefix}up", d, f, self.bias, copies, active, **kw)
        e.op(f"{prefix}act", active * f * activation_ops(self.activation), **kw)
        for scalar in LEARNED_ACTIVATIONS.get(self.activation, ()):  # one learned scalar each, in every copy
            e.term(f"{prefix}act.{scalar}", "bias", (1,), copies, active, **{"component": f"{prefix}act", **kw})
        if self.gated:
            e.op(f"{prefix}gate_product", active * f, **kw)
        if self.sub_norm:
            norm = norm or Norm()
            e.term(
                f"{prefix}sub_norm",
                "norm",
                (f,),
                copies,
                active,
                numel=f * norm.params_per_feature,
                elementwise=active * norm.ops(f),
                **kw,
            )
        e.linear(f"{prefix}down", f, d, self.out_bias, copies, active, **kw)

    def terms(self, e, model, seq_len: int) -> None:
        self.emit(e, "ffn.", model.d_model, e.n, e.n, model.norm)

    def kept_elements(self, model) -> int:
        """Dense: the input x (for up's weight gradient), the pre-activation (for the activation's gradient)
        and the activation (for down's weight gradient): d + 2·d_ff. Gated: x, the gate and up outputs, the
        activated gate (for the product's gradient) and the product (for down): d + 4·d_ff. An activation whose
        gradient reads its own output (ReLU, sigmoid, tanh, identity) needs no pre-activation: d_ff fewer. A
        sub-norm keeps its output for down as well: d_ff more."""
        pre = 0 if self.activation in OUTPUT_SAVING else 1
        return model.d_model + ((3 if self.gated else 1) + pre + int(self.sub_norm)) * self.d_ff

    def torch_module(self, model, causal: bool):
        return mlp_module()(model.d_model, self, model.norm)

    def tensor_parallel(self, module, rank: int, tp: int):
        """d_ff split (Megatron-LM's ParallelMLP): up (and gate) by their outputs, down by its inputs."""
        from ._torch import split_linear

        if self.sub_norm or self.d_ff % tp:
            what = "a sub-norm over d_ff" if self.sub_norm else f"d_ff {self.d_ff} over tp {tp}: not evenly"
            raise NotImplementedError(f"{what}: no tensor-parallel form here")
        module.up = split_linear(module.up, rank, tp, "outputs")
        if self.gated:
            module.gate = split_linear(module.gate, rank, tp, "outputs")
        module.down = split_linear(module.down, rank, tp, "inputs")
        return module

    def body(self) -> DenseFFN:
        return self

    def with_body(self, body: Block) -> Block:
        return body


@cache
def mlp_module():
    import torch
    from torch import nn
    from torch.nn import functional as F

    from ._torch import ACTIVATIONS, Linear, make_norm

    class MLP(nn.Module):
        """Dense: down(act(up x)). Gated: down(act(gate x) ⊙ up x). A sub-norm before down."""

        def __init__(self, d: int, ffn: DenseFFN, norm):
            super().__init__()
            self.gated = ffn.gated
            if self.gated:
                self.gate = Linear(d, ffn.d_ff, bias=ffn.bias)
            self.up = Linear(d, ffn.d_ff, bias=ffn.bias)
            if ffn.sub_norm:
                self.sub_norm = make_norm(norm, ffn.d_ff)
            self.down = Linear(ffn.d_ff, d, bias=ffn.out_bias)
            self.act = XIELU() if ffn.activation == "xielu" else ACTIVATIONS[ffn.activation]

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if x.is_meta:  # no values: the matmuls alone (FlopCounterMode counts no elementwise work), the shapes kept
                h = self.up(x)
                if self.gated:
                    self.gate(x)
            else:
                h = self.act(self.gate(x)) * self.up(x) if self.gated else self.act(self.up(x))
            if hasattr(self, "sub_norm"):
                h = self.sub_norm(h)
            return self.down(h)

    class XIELU(nn.Module):
        """xIELU with its two learned scalars (initialised as Apertus: α_p = 0.8, α_n = 0.8, β = 0.5)."""

        def __init__(self, beta: float = 0.5, eps: float = -1e-6):
            super().__init__()
            self.alpha_p = nn.Parameter(torch.log(torch.expm1(torch.tensor(0.8))).unsqueeze(0))
            self.alpha_n = nn.Parameter(torch.log(torch.expm1(torch.tensor(0.8 - beta))).unsqueeze(0))
            self.beta, self.eps = beta, eps

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            a_p = F.softplus(self.alpha_p)
            a_n = self.beta + F.softplus(self.alpha_n)
            negative = (torch.expm1(torch.clamp(x, max=self.eps)) - x) * a_n + self.beta * x
            return torch.where(x > 0, a_p * x * x + self.beta * x, negative)

    return MLP
