"""Grouped projections (SqueezeBERT, Iandola et al. 2020, "SqueezeBERT: What can computer vision teach NLP about
efficient neural networks?", §3): softmax attention and a dense FFN whose linear layers are grouped 1×1 convolutions,
as transformers instantiates them (transformers 5.23.0, models/squeezebert/modeling_squeezebert.py: nn.Conv1d with
kernel_size 1 and groups). A layer of g groups splits its input and output features into g blocks and maps each
input block to its output block alone: (d_in / g) × d_out weights and as many multiply-adds per token, with a bias
of d_out."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.terms import SOFTMAX_OPS
from . import register
from .attention import Attention
from .dense_ffn import DenseFFN, activation_ops

UNSUPPORTED = ("gate", "sinks", "window", "chunk", "kv_shared", "k_eq_v", "v_norm", "sub_norm")


def grouped(e, name: str, d_in: int, d_out: int, groups: int, n: int, heads: int = 1) -> None:
    """A grouped 1×1 convolution d_in -> d_out of ``groups`` groups, with a bias, in each of n layers."""
    e.term(f"{name}.weight", "weight", (d_out, d_in // groups), n, macs=n * d_out * (d_in // groups), heads=heads)
    e.term(f"{name}.bias", "bias", (d_out,), n, elementwise=n * d_out)


def _check_groups(fields: dict[str, int], widths: dict[str, int]) -> None:
    for name, groups in fields.items():
        for width in widths[name]:
            if width % groups:
                raise SpecError((name,), f"{groups} groups do not divide {width} features")


@register
@dataclass(frozen=True)
class GroupedAttention(Attention):
    """Softmax attention whose q, k, v and output projections are grouped convolutions (SqueezeBERT)."""

    kind = "grouped_mha"
    slot = "attention"
    summary = "softmax attention with grouped q/k/v/o projections (Iandola et al. 2020, SqueezeBERT)"

    q_groups: Positive = 1
    k_groups: Positive = 1
    v_groups: Positive = 1
    o_groups: Positive = 1

    def check(self, d_model: int) -> None:
        super().check(d_model)
        for name in UNSUPPORTED:
            if getattr(self, name) not in (None, False, "none"):
                raise SpecError((name,), f"{name} is not an option of grouped attention")
        if self.qk_norm != "none" or self.softplus_gate != "none" or self.kv_heads != self.n_heads:
            raise SpecError(("n_kv_heads",), "grouped attention has as many key heads as query heads, and no norms or gates")
        inner = self.n_heads * (self.head_dim or d_model // self.n_heads)
        widths = {f"{p}_groups": (d_model, inner) for p in "qkv"} | {"o_groups": (inner, d_model)}
        _check_groups({k: getattr(self, k) for k in widths}, widths)

    def describe(self) -> str:
        return f"{super().describe()}, grouped q/k/v/o ({self.q_groups}/{self.k_groups}/{self.v_groups}/{self.o_groups})"

    def terms(self, e, model, seq_len: int) -> None:
        d, h, hd, n = model.d_model, self.n_heads, self.head_dim, e.n
        for name, groups in (("attn.q", self.q_groups), ("attn.k", self.k_groups), ("attn.v", self.v_groups)):
            grouped(e, name, d, h * hd, groups, n, heads=h)
        # QKᵀ, softmax and AV as blocks/attention.py writes them (attention_core)
        e.term("attn.scores", "core", (h, seq_len, hd), n, numel=0, macs=n * h * seq_len * hd)
        e.op("attn.softmax", SOFTMAX_OPS * n * h * seq_len, scores=n * h * seq_len)
        e.term("attn.values", "core", (h, seq_len, hd), n, numel=0, macs=n * h * seq_len * hd)
        grouped(e, "attn.o", h * hd, d, self.o_groups, n)

    def tensor_parallel(self, module, rank: int, tp: int):
        raise NotImplementedError("grouped projections: no tensor-parallel form here")

    def torch_module(self, model, causal: bool):
        return _modules()[1](self, model, causal)


@register
@dataclass(frozen=True)
class GroupedFFN(DenseFFN):
    """A dense FFN whose two linear layers are grouped convolutions (SqueezeBERT)."""

    kind = "grouped_dense"
    slot = "ffn"
    summary = "dense FFN with grouped up and down projections (Iandola et al. 2020, SqueezeBERT)"

    up_groups: Positive = 1
    down_groups: Positive = 1

    def check(self, d_model: int) -> None:
        if self.sub_norm or self.down_bias is not None or not self.bias:
            raise SpecError(("bias",), "a grouped FFN's convolutions have biases, and it has no sub-norm")
        f = self.d_ff if isinstance(self.d_ff, int) else None
        if f is not None:
            widths = {"up_groups": (d_model, f), "down_groups": (f, d_model)}
            _check_groups({"up_groups": self.up_groups, "down_groups": self.down_groups}, widths)

    def describe(self) -> str:
        return f"{self.variant}, grouped up/down ({self.up_groups}/{self.down_groups})"

    def terms(self, e, model, seq_len: int) -> None:
        d, f, n = model.d_model, self.d_ff, e.n
        grouped(e, "ffn.up", d, f, self.up_groups, n)
        e.op("ffn.act", n * f * activation_ops(self.activation))
        grouped(e, "ffn.down", f, d, self.down_groups, n)

    def tensor_parallel(self, module, rank: int, tp: int):
        raise NotImplementedError("grouped projections: no tensor-parallel form here")

    def torch_module(self, model, causal: bool):
        return _modules()[2](self, model)


@cache
def _modules():
    import torch
    from torch import nn

    from ._torch import ACTIVATIONS, Conv1d
    from .attention import _module as attention_module

    class GroupedLinear(Conv1d):
        """A grouped 1×1 convolution over (B, s, features), as SqueezeBERT's nn.Conv1d over (B, features, s)."""

        def __init__(self, d_in: int, d_out: int, groups: int):
            super().__init__(d_in, d_out, kernel_size=1, groups=groups)

        def forward(self, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
            return super().forward(x.transpose(1, 2)).transpose(1, 2)

    class Attention(attention_module()):
        def __init__(self, spec: GroupedAttention, model, causal: bool):
            super().__init__(spec, model, causal)
            d, inner = model.d_model, spec.n_heads * spec.head_dim
            self.q = GroupedLinear(d, inner, spec.q_groups)
            self.k = GroupedLinear(d, inner, spec.k_groups)
            self.v = GroupedLinear(d, inner, spec.v_groups)
            self.o = GroupedLinear(inner, d, spec.o_groups)

    class FFN(nn.Module):
        def __init__(self, spec: GroupedFFN, model):
            super().__init__()
            self.up = GroupedLinear(model.d_model, spec.d_ff, spec.up_groups)
            self.down = GroupedLinear(spec.d_ff, model.d_model, spec.down_groups)
            self.act = ACTIVATIONS[spec.activation]

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.down(self.act(self.up(x)))

    return GroupedLinear, Attention, FFN
