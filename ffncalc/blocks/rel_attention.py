"""Softmax attention with a hidden-state-conditioned relative-position bias and short convolutions on keys and values,
as Inkling's layers hold it (transformers 5.23.0, models/inkling/modeling_inkling.py ``InklingAttention``, with the
layer's ``attn_sconv`` on its output).

Per token, with h query heads and kv key/value heads of width hd, r = d_rel, E the bias's reach (rel_extent) and K
the convolutions' kernel:

    q = q_norm(q_proj(x))                      per head, an RMSNorm over hd shared by every head
    k = k_norm(x_k + conv(x_k)), x_k = k_proj(x)   a depthwise causal Conv1d over kv·hd channels, added to its input
    v = x_v + conv(x_v),         x_v = v_proj(x)
    s = r_proj(x)                              d -> h·r, each head's relative state
    b = s @ P                                  P (r, E): one bias for each backward distance 0..E-1, per head
    scores = q·kᵀ/hd + b[i - j]                (0 ≤ i - j < E; zero beyond), a causal mask, a window in local layers
    out = o_proj(softmax(scores)·v); out + conv(out) (the layer's attn_sconv, over d channels)

No rotary positions: the relative bias places the keys. Where log_scaling_n_floor is set (full-attention layers), the
queries and the bias are scaled by 1 + α·log(max(position / n_floor, 1)): elementwise work only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from ..model.schema import Positive, SpecError
from . import Block, register
from ._sconv import emit_residual_conv, residual_conv, residual_conv_state
from .attention import attention_core, softmax_score_bytes


@register
@dataclass(frozen=True)
class RelAttention(Block):
    """Attention with a per-token relative-position bias (r_proj, a bank of bias profiles), short convolutions on keys
    and values and one on its output (Inkling)."""

    kind = "rel_attention"
    slot = "attention"
    summary = "attention with a hidden-state-conditioned relative bias and short convolutions on K, V and output (Inkling)"

    n_heads: Positive
    n_kv_heads: Positive | None = None  # default: n_heads
    head_dim: Positive | None = None  # default: d_model / n_heads
    d_rel: Positive = 16  # each head's relative state (InklingTextConfig.d_rel)
    rel_extent: Positive = 1024  # backward distances the bias reaches (rel_extent; a local layer's: its window)
    conv_kernel: Positive = 4  # the short convolutions' kernel (conv_kernel_size)
    window: Positive | None = None  # a local layer's sliding window, its own key included
    out_conv: bool = True  # the layer's short convolution on the attention's output (attn_sconv)
    log_scaling: bool = False  # queries and bias scaled by 1 + α·log(position / n_floor) (log_scaling_n_floor set)

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads if self.n_kv_heads is not None else self.n_heads

    def resolve(self, d_model: int) -> RelAttention:
        head = self.head_dim if self.head_dim is not None else d_model // self.n_heads
        return replace(self, n_kv_heads=self.kv_heads, head_dim=head)

    def check(self, d_model: int) -> None:
        if self.head_dim is None and d_model % self.n_heads:
            raise SpecError(("n_heads",), f"{self.n_heads} heads do not divide d_model {d_model} "
                                          "(state head_dim to allow it)")
        if self.n_heads % self.kv_heads:
            raise SpecError(("n_kv_heads",), f"{self.kv_heads} KV heads do not divide {self.n_heads} query heads")

    def describe(self) -> str:
        window = f", window {self.window:,}" if self.window else ""
        return f"{self.n_heads} heads, {self.kv_heads} KV × {self.head_dim}{window}, relative bias over {self.rel_extent:,}"

    def facts(self) -> dict[str, object]:
        return {"heads": f"{self.n_heads}/{self.kv_heads}"}

    def terms(self, e, model, seq_len: int) -> None:
        d, h, kv, hd, r, n = model.d_model, self.n_heads, self.kv_heads, self.head_dim, self.d_rel, e.n
        k = self.conv_kernel
        e.linear("attn.q", d, h * hd, False, n, heads=h)
        e.linear("attn.k", d, kv * hd, False, n, heads=kv)
        e.linear("attn.v", d, kv * hd, False, n, heads=kv)
        e.linear("attn.r", d, h * r, False, n, heads=h)
        emit_residual_conv(e, "attn.k_conv1d", kv * hd, k, n)
        emit_residual_conv(e, "attn.v_conv1d", kv * hd, k, n)
        e.norm("attn.q_norm", model.norm, hd, n, total=h * hd)
        e.norm("attn.k_norm", model.norm, hd, n, total=kv * hd)
        # each head's relative state times the bank of profiles: one bias per distance, r·E multiply-adds per head
        # (InklingRelativeLogits: relative_states @ proj); gathered by distance and added to every score
        e.term("attn.rel.weight", "weight", (r, self.rel_extent), n, macs=n * h * r * self.rel_extent)
        e.op("attn.rel_bias", n * h * seq_len)
        if self.log_scaling:  # each query element and each bias element times its position's factor
            e.op("attn.log_scaling", n * (h * hd + h * seq_len))
        attention_core(e, model, h, hd, hd, seq_len, False, self.window)
        if self.out_conv:
            emit_residual_conv(e, "attn.out_conv1d", d, k, n)

    def cached_tokens(self, tokens: int) -> int:
        return tokens if self.window is None else min(tokens, self.window)

    def cache_elements(self, model) -> int:
        """K and V of every KV head, after their convolutions."""
        return 2 * self.kv_heads * self.head_dim

    def state_elements(self, model) -> int:
        """The convolutions' last K - 1 inputs: keys' and values' (kv·hd each) and the output's (d)."""
        k, width = self.conv_kernel, self.kv_heads * self.head_dim
        return 2 * residual_conv_state(width, k) + (residual_conv_state(model.d_model, k) if self.out_conv else 0)

    def kept_elements(self, model) -> int:
        """The input (d, for the projections' weight gradients); k and v before their convolutions (2·kv·hd, for
        the convolutions' weight gradients); Q, K and V (for the scores' and values' gradients); the relative
        states (h·r, for the bank's gradient); the heads' output (h·hd, for o's); with the output convolution, o's
        output (d, its input)."""
        h, kv, hd, d = self.n_heads, self.kv_heads, self.head_dim, model.d_model
        return d + 2 * kv * hd + h * hd + 2 * kv * hd + h * self.d_rel + h * hd + (d if self.out_conv else 0)

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        return softmax_score_bytes(self.n_heads, seq_len, flash)

    def torch_module(self, model, causal: bool):
        return _module()(self, model, causal)


@cache
def _module():
    import torch
    from torch import nn

    from ._torch import Linear, MatMul, banded_attention, causal_attention, make_norm, softmax

    class RelativeLogits(nn.Module):
        """(…, r) relative states -> (…, E) biases, one per backward distance; its FLOPs are its weight's."""

        weight_flops = True

        def __init__(self, d_rel: int, extent: int):
            super().__init__()
            self.weight = nn.Parameter(torch.empty(d_rel, extent))

        def forward(self, states: torch.Tensor) -> torch.Tensor:
            return states @ self.weight

    def relative_bias(rel: torch.Tensor, extent: int) -> torch.Tensor:
        """(B, s, h, E) biases by distance -> (B, h, s, s): query i, key j takes rel[i, i - j] for 0 ≤ i - j < E."""
        b, s, h, _ = rel.shape
        i = torch.arange(s, device=rel.device)
        distance = i[:, None] - i[None, :]
        index = distance.clamp(0, extent - 1).expand(b, h, s, s)
        bias = rel.transpose(1, 2).gather(-1, index)
        return bias.masked_fill((distance < 0) | (distance >= extent), 0.0)

    class RelativeAttention(nn.Module):
        def __init__(self, spec: RelAttention, model, causal: bool):
            super().__init__()
            d = model.d_model
            self.heads, self.kv_heads, self.head_dim = spec.n_heads, spec.kv_heads, spec.head_dim
            self.d_rel, self.extent, self.window, self.causal = spec.d_rel, spec.rel_extent, spec.window, causal
            width = self.kv_heads * self.head_dim
            self.q = Linear(d, self.heads * self.head_dim, bias=False)
            self.k = Linear(d, width, bias=False)
            self.v = Linear(d, width, bias=False)
            self.r = Linear(d, self.heads * spec.d_rel, bias=False)
            self.k_conv1d = residual_conv(width, spec.conv_kernel)
            self.v_conv1d = residual_conv(width, spec.conv_kernel)
            self.q_norm = make_norm(model.norm, self.head_dim)
            self.k_norm = make_norm(model.norm, self.head_dim)
            self.rel = RelativeLogits(spec.d_rel, spec.rel_extent)
            self.scores = MatMul()
            self.values = MatMul()
            self.o = Linear(self.heads * self.head_dim, d, bias=False)
            if spec.out_conv:
                self.out_conv1d = residual_conv(d, spec.conv_kernel)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            q = self.q_norm(self.q(x).view(b, s, self.heads, self.head_dim)).transpose(1, 2)
            k = self.k_norm(self.k_conv1d(self.k(x)).view(b, s, self.kv_heads, self.head_dim)).transpose(1, 2)
            v = self.v_conv1d(self.v(x)).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
            bias = relative_bias(self.rel(self.r(x).view(b, s, self.heads, self.d_rel)), self.extent)
            group = self.heads // self.kv_heads
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
            out = biased_attention(self, q / self.head_dim, k, v, bias)
            out = self.o(out.transpose(1, 2).reshape(b, s, -1))
            return self.out_conv1d(out) if hasattr(self, "out_conv1d") else out

    def biased_attention(layer, q, k, v, bias, sinks=None):
        """softmax(q·kᵀ + bias)·v, q already scaled: the full square masked (executed), or only the causal triangle
        (within the window) a causal kernel computes."""
        s = q.shape[-2]
        if layer.causal and layer.window is not None and layer.window < s:
            return banded_attention(q, k, v, layer.scores, layer.values, layer.window, bias, sinks)
        if layer.causal:
            return causal_attention(q, k, v, layer.scores, layer.values, bias, sinks=sinks)
        scores = layer.scores(q, k.transpose(-2, -1)) + bias
        i = torch.arange(s, device=q.device)
        outside = i[None, :] > i[:, None]
        if layer.window is not None:
            outside = outside | (i[None, :] <= i[:, None] - layer.window)
        return layer.values(softmax(scores.masked_fill(outside, float("-inf")), sinks), v)

    return RelativeAttention
