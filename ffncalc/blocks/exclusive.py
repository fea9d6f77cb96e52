"""Exclusive self-attention: softmax attention whose every head's output loses tanh(α) of its component along the
head's own value, α one learned scalar a head (transformers' NeoMMEExclusiveSelfAttention, applied in
NeoMMEAttention after the attention and before the output gate):

    v̂ = v / ‖v‖ (over each head's features, the value of the query's own position), p = ⟨o, v̂⟩,
    o' = o − tanh(α) · p · v̂

Every other option is softmax attention's (``mha``: NeoMME's weightless q/k norms, partial rotary positions, a
sigmoid output gate of its own projection, a window on both sides). Its reference module also takes rows to add to
its values (``forward(x, values)``: NeoMME's value embeddings, parts/value_embeddings.py, in the layers that part
names), before the attention and the exclusion read them, as NeoMMEAttention adds value_embeds after its rotary
positions."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import SpecError
from ..model.terms import ACTIVATION_OPS
from . import register
from .attention import Attention

# per element of each head's output: the unit value (square, add, scale), the projection's product and add, the
# scaled unit value's product and the subtraction
EXCLUSION_OPS = 7


@register
@dataclass(frozen=True)
class ExclusiveAttention(Attention):
    """Softmax attention with each head's output less tanh(α) times its projection on the head's unit value."""

    kind = "exclusive"
    slot = "attention"
    summary = "softmax attention less each head's output along its own value, tanh(α) a head (NeoMME's exclusive self-attention)"

    def terms(self, e, model, seq_len: int) -> None:
        super().terms(e, model, seq_len)
        n, h, vd = e.n, self.n_heads, self.value_dim
        # NeoMMEExclusiveSelfAttention.alpha: zeros(num_attention_heads); tanh and the scale of p, a head
        e.term("attn.alpha", "bias", (h,), n, elementwise=n * h * (ACTIVATION_OPS["tanh"] + 1))
        e.op("attn.exclusion", n * EXCLUSION_OPS * h * vd)

    def check(self, d_model: int) -> None:
        super().check(d_model)
        if self.kv_shared or self.k_eq_v:
            raise SpecError(
                ("kv_shared" if self.kv_shared else "k_eq_v",), "exclusive self-attention reads values of its own projection"
            )
        if self.gate:
            raise SpecError(("gate",), "exclusive self-attention gates through its own projection (softplus_gate), not q's")

    def kept_elements(self, model) -> int:
        """Softmax attention's, and what the exclusion keeps for its gradients: the fp32 values it normalises with
        their norm and its clamp (2·kv·v_head_dim + 4·kv in 16-bit elements; F.normalize), the attention's output
        beside the unit values repeated to every query head (2·h·v_head_dim, the product's operands: the output gate
        keeps the exclusion's output, not the attention's) and each head's projection p and its scaled copy (2·h)."""
        h, kv, vd = self.n_heads, self.kv_heads, self.value_dim
        return super().kept_elements(model) + 2 * kv * vd + 4 * kv + 2 * h * vd + 2 * h

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        """Softmax attention's, and tanh(α) once a sequence (16-bit, a head), kept for the scaled projection's gradient."""
        return super().score_bytes(model, seq_len, flash) + 2 * self.n_heads

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import torch
    from torch import nn
    from torch.nn import functional as F

    from ._torch import Linear
    from .attention import _module as attention_module

    class AddedValues(Linear):
        """v's projection, with rows added to its output where given (``added``: (B, s, kv·v_head_dim))."""

        added = None

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = super().forward(x)
            return y if self.added is None else y + self.added

    class Exclusive(attention_module()):
        fused_kv_heads = True  # inside ``_fused.fused()`` K and V come at their own heads

        def __init__(self, spec: ExclusiveAttention, model, causal: bool):
            super().__init__(spec, model, causal)
            self.alpha = nn.Parameter(torch.zeros(spec.n_heads))
            self.v = AddedValues(model.d_model, spec.kv_heads * spec.value_dim, bias=spec.qkv_bias)

        def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            out = super().attend(q, k, v, x)  # (B, h, s, vd)
            # each value head's unit vector in fp32 (NeoMMEExclusiveSelfAttention), then repeated to its query heads as
            # repeat_kv does; normalising before repeating is the same arithmetic
            unit = F.normalize(v.float(), dim=-1).to(out.dtype)
            b, kv, s, vd = unit.shape
            if kv != self.heads:
                unit = unit[:, :, None].expand(b, kv, self.heads // kv, s, vd).reshape(b, self.heads, s, vd)
            p = (out * unit).sum(-1, keepdim=True)
            return out - torch.tanh(self.alpha).to(out.dtype).view(1, -1, 1, 1) * p * unit

        def forward(self, x: torch.Tensor, values: torch.Tensor | None = None) -> torch.Tensor:
            self.v.added = values
            try:
                return super().forward(x)
            finally:
                self.v.added = None

    return Exclusive
