"""A MobileBERT layer (Sun et al. 2020, "MobileBERT: a Compact Task-Agnostic BERT for Resource-Limited Devices", §3.1
and Figure 1(c)), whole, as transformers instantiates it (transformers 5.23.0, models/mobilebert/modeling_mobilebert.py,
``MobileBertLayer`` with use_bottleneck and key_query_shared_bottleneck, values from the layer's input). Over the
residual stream x of d features, with t = ``inner`` (intra_bottleneck_size) and f = ``d_ff``:

    L  = norm(bottleneck_in(x))             Bottleneck.input: dense d -> t with a bias, then a norm of t
    S  = norm(bottleneck_qk(x))             Bottleneck.attention: another, shared by queries and keys
    A  = norm(o(attention(q(S), k(S), v(x))) + L)    q, k: t -> t; v: d -> t; o: t -> t, each with a bias;
                                                     softmax attention of n_heads heads of t / n_heads
    A  = norm(down(act(up(A))) + A)         ffns - 1 times (FFNLayer: up t -> f, down f -> t, with biases)
    O  = norm(down(act(up(A))) + A)         MobileBertIntermediate and MobileBertOutput
    y  = norm(bottleneck_out(O) + x)        OutputBottleneck: dense t -> d with a bias, a norm of d

Every norm is the model's norm in parameters (MobileBERT's NoNorm: an elementwise weight and bias, x·w + b; its
normalization_type layer_norm: a LayerNorm of the same two vectors). The layer's output replaces x: the block sits in
the attention slot with no FFN and no norms of the layer's own, and its reference module returns y − x, to which the
layer adds x back. Nothing cached: every query meets every key (an encoder's layer)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive, SpecError
from ..model.terms import SOFTMAX_OPS, Activation
from . import Block, register
from .attention import softmax_score_bytes
from .dense_ffn import OUTPUT_SAVING, activation_ops


@register
@dataclass(frozen=True)
class BottleneckLayer(Block):
    """MobileBERT's whole layer: bottlenecks in and out, attention at the inner width, stacked FFNs."""

    kind = "bottleneck"
    slot = "attention"
    summary = "MobileBERT's layer: bottleneck projections around attention and stacked FFNs at an inner width (Sun et al. 2020)"

    n_heads: Positive
    inner: Positive  # intra_bottleneck_size (true_hidden_size)
    d_ff: Positive  # intermediate_size
    ffns: Positive = 4  # num_feedforward_networks: the stacked FFNs and the last
    activation: Activation = "relu"

    @property
    def head_dim(self) -> int:
        return self.inner // self.n_heads

    def check(self, d_model: int) -> None:
        if self.inner % self.n_heads:
            raise SpecError(("n_heads",), f"{self.n_heads} heads do not divide the inner width {self.inner}")

    def describe(self) -> str:
        return f"bottleneck {self.inner}: {self.n_heads} heads × {self.head_dim}, {self.ffns} FFNs of {self.d_ff}"

    def head_count(self) -> int | None:
        return self.n_heads

    def terms(self, e, model, seq_len: int) -> None:
        d, t, f, h, hd, n, norm = model.d_model, self.inner, self.d_ff, self.n_heads, self.head_dim, e.n, model.norm
        m = self.ffns - 1
        e.linear("attn.bottleneck_in", d, t, True, n)
        e.linear("attn.bottleneck_qk", d, t, True, n)
        e.linear("attn.q", t, t, True, n, heads=h)
        e.linear("attn.k", t, t, True, n, heads=h)
        e.linear("attn.v", d, t, True, n, heads=h)
        # QKᵀ, softmax and AV over the whole square, as blocks/attention.py writes them
        e.term("attn.scores", "core", (h, seq_len, hd), n, numel=0, macs=n * h * seq_len * hd)
        e.op("attn.softmax", SOFTMAX_OPS * n * h * seq_len, scores=n * h * seq_len)
        e.term("attn.values", "core", (h, seq_len, hd), n, numel=0, macs=n * h * seq_len * hd)
        e.linear("attn.o", t, t, True, n)
        if m:
            e.linear("attn.ffns.up", t, f, True, n * m)
            e.op("attn.ffns.act", n * m * f * activation_ops(self.activation))
            e.linear("attn.ffns.down", f, t, True, n * m)
        e.linear("attn.up", t, f, True, n)
        e.op("attn.act", n * f * activation_ops(self.activation))
        e.linear("attn.down", f, t, True, n)
        e.linear("attn.bottleneck_out", t, d, True, n)
        # the norms: bottleneck_in's and bottleneck_qk's, the attention output's, each FFN's (t), the output's (d)
        e.norm("attn.norms", norm, t, n * (4 + m))
        e.norm("attn.norms", norm, d, n)
        e.op("attn.residual", n * ((2 + m) * t + d))  # the adds before the norms: L, each FFN's input, x

    def kept_elements(self, model) -> int:
        """Per token, as autograd saves the reference module's forward: x (d: both bottlenecks' and v's input), each
        bottleneck's output before its norm (2·t, the norm's weight gradient), their shared q/k input S, q, k and v
        (for the two products), the heads' output (o's input), the attention output's sum before its norm and the
        norm's output A (9·t in all); each FFN its activation (f, and its input too where the activation's gradient
        reads the input: gelu), its sum before the norm and its output (2·t; the last FFN's output is O, the
        bottleneck's input); the last sum before the output's norm: 2·d + 11·t + ffns·(f or 2·f) + 2·t·(ffns − 1)."""
        d, t, f = model.d_model, self.inner, self.d_ff
        per_ffn = f * (1 if self.activation in OUTPUT_SAVING else 2)
        return 2 * d + 11 * t + self.ffns * per_ffn + 2 * t * (self.ffns - 1)

    def score_bytes(self, model, seq_len: int, flash: bool = False) -> int:
        return softmax_score_bytes(self.n_heads, seq_len, flash)

    def torch_module(self, model, causal: bool):
        return _module()(self, model)


@cache
def _module():
    import torch
    from torch import nn

    from . import _fused
    from ._torch import ACTIVATIONS, Linear, MatMul

    class NoNorm(nn.Module):
        """MobileBERT's NoNorm: x·w + b, elementwise (the parameters of a LayerNorm of the same width)."""

        is_norm = True  # verify counts its weight and bias as one component

        def __init__(self, width: int):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(width))
            self.bias = nn.Parameter(torch.zeros(width))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.weight + self.bias

    class FFN(nn.Module):
        def __init__(self, t: int, f: int):
            super().__init__()
            self.up, self.down = Linear(t, f), Linear(f, t)

    class Layer(nn.Module):
        def __init__(self, spec: BottleneckLayer, model):
            super().__init__()
            d, t, f = model.d_model, spec.inner, spec.d_ff
            self.h, self.act = spec.n_heads, ACTIVATIONS[spec.activation]
            self.bottleneck_in, self.bottleneck_qk = Linear(d, t), Linear(d, t)
            self.q, self.k, self.v, self.o = Linear(t, t), Linear(t, t), Linear(d, t), Linear(t, t)
            self.scores, self.values = MatMul(), MatMul()
            self.ffns = nn.ModuleList(FFN(t, f) for _ in range(spec.ffns - 1))
            self.up, self.down = Linear(t, f), Linear(f, t)
            self.bottleneck_out = Linear(t, d)
            widths = [t] * (spec.ffns + 3) + [d]  # in, qk, attention output, each FFN's; the output's
            self.norms = nn.ModuleList(NoNorm(w) for w in widths)

        def heads(self, x: torch.Tensor) -> torch.Tensor:
            b, s, w = x.shape
            return x.view(b, s, self.h, w // self.h).transpose(1, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            norms = iter(self.norms)
            layer_in = next(norms)(self.bottleneck_in(x))
            shared = next(norms)(self.bottleneck_qk(x))
            q, k, v = self.heads(self.q(shared)), self.heads(self.k(shared)), self.heads(self.v(x))
            if _fused.active():  # as the flash kernel keeps it: Q, K and V as given, the output, the log-sum-exp
                out = _fused.attention(q, k, v, causal=False).transpose(1, 2).reshape(layer_in.shape)
            else:
                p = (self.scores(q, k.transpose(-2, -1)) * q.shape[-1] ** -0.5).softmax(dim=-1)
                out = self.values(p, v).transpose(1, 2).reshape(layer_in.shape)
            a = next(norms)(self.o(out) + layer_in)
            for ffn in self.ffns:
                a = next(norms)(ffn.down(self.act(ffn.up(a))) + a)
            o = next(norms)(self.down(self.act(self.up(a))) + a)
            return next(norms)(self.bottleneck_out(o) + x) - x  # the layer adds x back

    return Layer
