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

Inkling 2's options (models/inkling2/modeling_inkling2.py ``Inkling2SlidingAttention``, ``Inkling2FullAttention``):
no q_norm or k_norm (``qk_norm``); a sigmoid gate on the heads' output, gate_proj d -> h·hd (``output_gate``); a sink
logit per token and head, sink_proj d -> h, joining each softmax with no value (``token_sinks``); L2 clips
(``l2_clip``): each query head times a learned (h, hd) scale, each key head and each relative state head times its
own learned (h, r) scale, scaled down to a threshold norm where longer; values through an RMSNorm without a weight
(``v_norm``); every short convolution's sum scaled by 1/√(K + 1) (``conv_scale``); in full-attention layers, key and
value convolutions whose taps are a static (K, kv·hd) weight plus taps per token and KV head projected from the
projection's input, weight_proj d -> kv·K, the sum scaled by 1/√(2K + 1) (``dynamic_conv``), keys and values read
inputs of their own, each through its own RMSNorm over d (``kv_inputs``: k_input_layernorm, v_input_layernorm), and
the log scaling multiplies the queries and the relative states (``log_scaling_states``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS
from . import Block, register
from ._sconv import emit_residual_conv, residual_conv, residual_conv_state
from .attention import attention_core, softmax_score_bytes

# An L2 clip per vector of w elements: square, sum and the final multiply per element; the root, + eps, the threshold's
# divide and the clamp per vector; a learned scale adds a multiply per element
CLIP_ELEMENT_OPS, CLIP_VECTOR_OPS = 3, 4
UNWEIGHTED_NORM_OPS = 3  # per element of an RMSNorm without a weight: square, sum, scale


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
    qk_norm: bool = True  # q_norm and k_norm over head_dim (Inkling); Inkling 2 has none
    output_gate: bool = False  # Inkling 2: heads' output × sigmoid(gate_proj(x))
    token_sinks: bool = False  # Inkling 2: sink_proj(x), a sink logit per token and head
    l2_clip: bool = False  # Inkling 2: q (scaled), k and relative states (scaled) clipped to a threshold L2 norm
    v_norm: bool = False  # Inkling 2: values through an RMSNorm without a weight
    conv_scale: bool = False  # Inkling 2: each short convolution's sum × 1/√(K + 1)
    dynamic_conv: bool = False  # Inkling 2's full layers: K and V convolutions with per-token taps (weight_proj)
    kv_inputs: bool = False  # Inkling 2's full layers: keys and values read their own normed inputs
    log_scaling_states: bool = False  # with log_scaling: the queries and relative states scaled, not the bias

    @property
    def inputs(self) -> int:  # type: ignore[override]
        return 3 if self.kv_inputs else 1

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads if self.n_kv_heads is not None else self.n_heads

    def head_count(self) -> int:
        return self.n_heads

    def kv_head_count(self) -> int:
        return self.kv_heads

    def resolve(self, d_model: int) -> RelAttention:
        head = self.head_dim if self.head_dim is not None else d_model // self.n_heads
        return replace(self, n_kv_heads=self.kv_heads, head_dim=head)

    def check(self, d_model: int) -> None:
        if self.head_dim is None and d_model % self.n_heads:
            raise SpecError(("n_heads",), f"{self.n_heads} heads do not divide d_model {d_model} (state head_dim to allow it)")
        if self.n_heads % self.kv_heads:
            raise SpecError(("n_kv_heads",), f"{self.kv_heads} KV heads do not divide {self.n_heads} query heads")

    def describe(self) -> str:
        window = f", window {self.window:,}" if self.window else ""
        return f"{self.n_heads} heads, {self.kv_heads} KV × {self.head_dim}{window}, relative bias over {self.rel_extent:,}"

    def facts(self) -> dict[str, object]:
        return {"heads": f"{self.n_heads}/{self.kv_heads}"}

    def terms(self, e, model, seq_len: int) -> None:
        d, h, kv, hd, r, n = model.d_model, self.n_heads, self.kv_heads, self.head_dim, self.d_rel, e.n
        k, width = self.conv_kernel, self.kv_heads * self.head_dim
        if self.kv_inputs:  # the keys' and the values' own norms over d (the queries' is the layer's first)
            e.norm("attn.k_input_norm", model.norm, d, n)
            e.norm("attn.v_input_norm", model.norm, d, n)
        e.linear("attn.q", d, h * hd, False, n, heads=h)
        e.linear("attn.k", d, width, False, n, heads=kv)
        e.linear("attn.v", d, width, False, n, heads=kv)
        e.linear("attn.r", d, h * r, False, n, heads=h)
        if self.output_gate:
            e.linear("attn.gate", d, h * hd, False, n, heads=h)
        if self.token_sinks:
            e.linear("attn.sink", d, h, False, n)
        for name in ("k", "v"):
            if self.dynamic_conv:
                # taps (K, kv·hd): static + each token's per-head taps (an add per tap), K multiply-adds per channel
                e.linear(f"attn.{name}_conv.weight_proj", d, kv * k, False, n, component=f"attn.{name}_conv")
                e.term(
                    f"attn.{name}_conv.static.weight",
                    "weight",
                    (k, width),
                    n,
                    macs=n * width * k,
                    elementwise=n * width * k,
                    component=f"attn.{name}_conv",
                )
                e.op(f"attn.{name}_conv.residual", n * 2 * width)  # + its input, × 1/√(2K + 1)
            else:
                emit_residual_conv(e, f"attn.{name}_conv1d", width, k, n, self.conv_scale)
        if self.qk_norm:
            e.norm("attn.q_norm", model.norm, hd, n, total=h * hd)
            e.norm("attn.k_norm", model.norm, hd, n, total=kv * hd)
        if self.l2_clip:  # the scaled clips' scales are parameters; the keys' clip has none
            e.term(
                "attn.q_clip.scale",
                "norm",
                (h, hd),
                n,
                elementwise=n * (h * hd * (CLIP_ELEMENT_OPS + 1) + h * CLIP_VECTOR_OPS),
                component="attn.q_clip",
            )
            e.op("attn.k_clip", n * (width * CLIP_ELEMENT_OPS + kv * CLIP_VECTOR_OPS))
            e.term(
                "attn.rel_clip.scale",
                "norm",
                (h, r),
                n,
                elementwise=n * (h * r * (CLIP_ELEMENT_OPS + 1) + h * CLIP_VECTOR_OPS),
                component="attn.rel_clip",
            )
        if self.v_norm:
            e.op("attn.v_norm", n * UNWEIGHTED_NORM_OPS * width)
        # each head's relative state times the bank of profiles: one bias per distance, r·E multiply-adds per head
        # (InklingRelativeLogits: relative_states @ proj); gathered by distance and added to every score
        e.term("attn.rel.weight", "weight", (r, self.rel_extent), n, macs=n * h * r * self.rel_extent)
        e.op("attn.rel_bias", n * h * seq_len)
        if self.log_scaling:  # each query element and each bias (or relative state) element times its factor
            e.op("attn.log_scaling", n * (h * hd + h * (r if self.log_scaling_states else seq_len)))
        if self.token_sinks:  # one more logit in each head's softmax
            e.op("attn.sinks", n * h * SOFTMAX_OPS)
        attention_core(e, model, h, hd, hd, seq_len, False, self.window)
        if self.output_gate:  # a sigmoid and a product per element of the heads' output
            e.op("attn.gate_act", n * h * hd * (ACTIVATION_OPS["sigmoid"] + 1))
        if self.out_conv:
            emit_residual_conv(e, "attn.out_conv1d", d, k, n, self.conv_scale)

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
        """What Inkling's attention keeps a token with the bias looked up by distance inside a flash kernel (as
        FlashDeBERTa looks up its position scores: Q, K, V at their own heads, each query's E biases, the output, the
        log-sum-exp), its norms and short convolutions kernels (an input and an fp32 statistic; causal-conv1d's
        input), the rest as InklingAttention computes it (w = kv·hd):

        - the input (d); with kv_inputs the keys' and values' norms' statistics and outputs (2·(d + 2));
        - the convolutions' inputs, k's and v's projections (2·w); a dynamic convolution instead its unfolded
          windows and its taps (2·w·K each);
        - q_norm's and k_norm's inputs and a statistic a head (h·hd + 2·h, w + 2·kv);
        - the L2 clips: a scaled clip its input and the scaled vector (2 a feature), the norm, its reciprocal and the
          clamp's input and output (4 a head); the keys' clip, unscaled, its input and the 4 a head;
        - the relative states, the bank's input (h·r; clipped, the clip's output);
        - v's weightless RMS norm its input and its inverse RMS a head (w + kv);
        - the kernel's Q, K, V, biases and output (h·hd + 2·w + h·E + h·hd);
        - a gate the sigmoid's output and the gated output, o's input (2·h·hd);
        - the output convolution its input (d)."""
        h, kv, hd, d, r, k = self.n_heads, self.kv_heads, self.head_dim, model.d_model, self.d_rel, self.conv_kernel
        w, stat = kv * hd, 4 if model.norm.kind.startswith("layernorm") else 2
        kept = d + (2 * (d + stat) if self.kv_inputs else 0)
        kept += 2 * (2 * w * k if self.dynamic_conv else w)
        if self.qk_norm:
            kept += h * hd + stat * h + w + stat * kv
        if self.l2_clip:
            kept += (2 * h * hd + 4 * h) + (w + 4 * kv) + (2 * h * r + 4 * h)
        kept += h * r + (w + kv if self.v_norm else 0)
        kept += h * hd + 2 * w + h * self.rel_extent + h * hd
        return kept + (2 * h * hd if self.output_gate else 0) + (d if self.out_conv else 0)

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

    def clipped(x: torch.Tensor, threshold: float, scale: torch.Tensor | None = None) -> torch.Tensor:
        """Each head vector (times a learned scale) scaled down to ``threshold`` where its L2 norm is larger."""
        if scale is not None:
            x = x * scale
        return x * (threshold / (x.norm(dim=-1, keepdim=True) + 1e-6)).clamp(max=1.0)

    class Clip(nn.Module):
        """A scaled L2 clip's learned (heads, width) scale."""

        def __init__(self, heads: int, width: int):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(heads, width))

    class Taps(nn.Module):
        """The static taps (K, C), plus each token's taps per KV head, times the last K inputs; its FLOPs its weight's."""

        weight_flops = True

        def __init__(self, width: int, kernel: int):
            super().__init__()
            self.weight = nn.Parameter(torch.zeros(kernel, width))

        def forward(self, windows: torch.Tensor, dynamic: torch.Tensor) -> torch.Tensor:
            b, s, h, _, k = dynamic.shape
            taps = self.weight.T.reshape(h, -1, k) + dynamic  # (B, s, h, C/h, K)
            return (windows.reshape(b, s, h, -1, 1, k) @ taps.unsqueeze(-1)).reshape(b, s, -1)

    class DynamicConv(nn.Module):
        """(x + Σ_j (static[j] + taps_j(z))·x[t - j]) / √(2K + 1): taps per token and KV head from z (weight_proj)."""

        def __init__(self, d: int, heads: int, width: int, kernel: int):
            super().__init__()
            self.heads, self.kernel = heads, kernel
            self.static = Taps(width, kernel)
            self.weight_proj = Linear(d, heads * kernel, bias=False)

        def forward(self, x: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            k = self.kernel
            windows = nn.functional.pad(x.transpose(1, 2), (k - 1, 0)).unfold(-1, k, 1).flip(-1).transpose(1, 2)
            mixed = self.static(windows, self.weight_proj(z).view(b, s, self.heads, 1, k))
            return (x + mixed) / (2 * k + 1) ** 0.5

    class RelativeAttention(nn.Module):
        def __init__(self, spec: RelAttention, model, causal: bool):
            super().__init__()
            d = model.d_model
            self.spec = spec
            self.heads, self.kv_heads, self.head_dim = spec.n_heads, spec.kv_heads, spec.head_dim
            self.d_rel, self.extent, self.window, self.causal = spec.d_rel, spec.rel_extent, spec.window, causal
            width = self.kv_heads * self.head_dim
            scale = (spec.conv_kernel + 1) ** -0.5 if spec.conv_scale else 1.0
            if spec.kv_inputs:
                self.k_input_norm = make_norm(model.norm, d)
                self.v_input_norm = make_norm(model.norm, d)
            self.q = Linear(d, self.heads * self.head_dim, bias=False)
            self.k = Linear(d, width, bias=False)
            self.v = Linear(d, width, bias=False)
            self.r = Linear(d, self.heads * spec.d_rel, bias=False)
            if spec.output_gate:
                self.gate = Linear(d, self.heads * self.head_dim, bias=False)
            if spec.token_sinks:
                self.sink = Linear(d, self.heads, bias=False)
            if spec.dynamic_conv:
                self.k_conv = DynamicConv(d, self.kv_heads, width, spec.conv_kernel)
                self.v_conv = DynamicConv(d, self.kv_heads, width, spec.conv_kernel)
            else:
                self.k_conv1d = residual_conv(width, spec.conv_kernel, scale)
                self.v_conv1d = residual_conv(width, spec.conv_kernel, scale)
            if spec.qk_norm:
                self.q_norm = make_norm(model.norm, self.head_dim)
                self.k_norm = make_norm(model.norm, self.head_dim)
            if spec.l2_clip:
                self.q_clip = Clip(self.heads, self.head_dim)
                self.rel_clip = Clip(self.heads, spec.d_rel)
            self.rel = RelativeLogits(spec.d_rel, spec.rel_extent)
            self.scores = MatMul()
            self.values = MatMul()
            self.o = Linear(self.heads * self.head_dim, d, bias=False)
            if spec.out_conv:
                self.out_conv1d = residual_conv(d, spec.conv_kernel, scale)

        def forward(self, x: torch.Tensor, xk: torch.Tensor | None = None, xv: torch.Tensor | None = None):
            """``x`` the queries' (normed) input; with kv_inputs, ``xk`` and ``xv`` the keys' and the values' inputs
            before their own norms (default: ``x``)."""
            spec, (b, s, _) = self.spec, x.shape
            if spec.kv_inputs:
                xk = self.k_input_norm(x if xk is None else xk)
                xv = self.v_input_norm(x if xv is None else xv)
            else:
                xk = xv = x
            heads = (b, s, self.heads, -1)
            kv_heads = (b, s, self.kv_heads, self.head_dim)
            if spec.dynamic_conv:
                k, v = self.k_conv(self.k(xk), xk), self.v_conv(self.v(xv), xv)
            else:
                k, v = self.k_conv1d(self.k(xk)), self.v_conv1d(self.v(xv))
            q, k, v, rel = self.q(x).view(heads), k.view(kv_heads), v.view(kv_heads), self.r(x).view(heads)
            if spec.qk_norm:
                q, k = self.q_norm(q), self.k_norm(k)
            if spec.l2_clip:
                q, k, rel = clipped(q, 22.6, self.q_clip.scale), clipped(k, 22.6), clipped(rel, 8.0, self.rel_clip.scale)
            if spec.v_norm:
                v = v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + 1e-6)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            from . import _fused

            if _fused.active():  # the bias looked up by distance inside a flash kernel, K and V at their own heads
                if spec.token_sinks:
                    self.sink(x)
                out = (
                    _fused.relative_attention(q, k, v, self.rel(rel), 1.0 / self.head_dim, causal=self.causal, window=self.window)
                    .transpose(1, 2)
                    .reshape(b, s, -1)
                )
                if spec.output_gate:
                    out = out * torch.sigmoid(self.gate(x))
                out = self.o(out)
                return self.out_conv1d(out) if hasattr(self, "out_conv1d") else out
            bias = relative_bias(self.rel(rel), self.extent)
            if spec.token_sinks:  # each token's sink logits join its softmax in transformers; here only computed
                self.sink(x)
            group = self.heads // self.kv_heads
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
            out = biased_attention(self, q / self.head_dim, k, v, bias).transpose(1, 2).reshape(b, s, -1)
            if spec.output_gate:
                out = out * torch.sigmoid(self.gate(x))
            out = self.o(out)
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
