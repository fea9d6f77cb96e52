"""Hyper-connections (Zhu et al. 2025, "Hyper-Connections", ICLR), the spec's ``hyper``: the residual stream as k
streams of width d, mixed before each sublayer and at the end (DeepSeek-V4, HY-V4, Qwen4-Exp). Widths: d the
model's; k the streams, N = k·d their flattened width."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal

from ..model.schema import Positive, SpecError
from ..model.terms import ACTIVATION_OPS, SOFTMAX_OPS
from . import Part, register

UNWEIGHTED_RMS_OPS = 3  # per element of an RMSNorm without a weight: square, sum, scale


@register
@dataclass(frozen=True)
class HyperConnections(Part):
    """Hyper-connections (Zhu et al. 2025, "Hyper-Connections", ICLR): the residual stream is k streams of width d
    (the embedding copied to each); before each sublayer a small learned module reads all k streams (flattened,
    N = k·d) and makes the sublayer's one input from them, and after it the sublayer's output is added back to
    every stream with a weight of its own; at the end a head makes the final norm's one input from the k streams.
    The layer's norms, where it has them, still wrap each sublayer. Three mixers:

    mhc, DeepSeek-V4's manifold-constrained hyper-connections (DeepseekV4HyperConnection, DeepseekV4HyperHead):
    an unweighted RMSNorm over N, fn (N -> (2 + k)·k, no bias), then with base ((2 + k)·k) and scale (3) the
    pre weights (sigmoid + eps, k), the post weights (2·sigmoid, k) and comb (k × k: a softmax, then Sinkhorn-Knopp
    normalisation of rows and columns, sinkhorn_iters rounds); the input is Σ pre ⊙ streams, and the streams
    become post ⊗ output + combᵀ · streams (a product of activations, d·k² multiply-adds per token).
    ihc, HY-V4's (HYV4HyperConnection, HYV4HyperHead): as mhc without comb, fn N -> 2k, base 2k, scale 2, the
    norm's factor applied to fn's output; the streams become post ⊗ output + streams.
    The head of both: the unweighted norm, fn (N -> k), base (k), scale (1), pre weights, Σ pre ⊙ streams; or (head
    "mean", GLM-5 Next's Glm5NextTextHyperHead) the streams' unweighted mean.
    gated, Qwen4-Exp's (Qwen4ExpTextGatedResidual): an RMSNorm over each stream (its weight N wide), down
    (N -> rank) and silu of it / k, up (rank -> N) and sigmoid, the input the mean over the streams of that ⊙ the
    normed streams; inject (N -> k), 2·sigmoid of it / k, and the streams become streams + inject ⊗ output. Its
    head (hyper_connection_mixer) is the same without inject."""

    key = "hyper"
    order = 23
    prefix = "hc"
    summary = "hyper-connections: k residual streams mixed before each sublayer (DeepSeek-V4, HY-V4, Qwen4-Exp)"

    streams: Positive = 4
    mixer: Literal["mhc", "ihc", "gated"] = "mhc"
    rank: Positive | None = None  # gated: the low-rank mixer's width (Qwen4ExpTextConfig.hc_lowrank)
    sinkhorn_iters: Positive = 20  # mhc: Sinkhorn-Knopp rounds (DeepseekV4Config.hc_sinkhorn_iters)
    # the head: "mixed", the mixer's own (pre weights from the streams); "mean", the streams' unweighted mean, no
    # parameters (GLM-5 Next's Glm5NextTextHyperHead)
    head: Literal["mixed", "mean"] = "mixed"

    def __post_init__(self) -> None:
        if (self.rank is None) == (self.mixer == "gated"):
            raise SpecError(("rank",), "the gated mixer needs a rank, and only it has one")
        if self.head == "mean" and self.mixer == "gated":
            raise SpecError(("head",), "the gated mixer's head is its own (Qwen4-Exp's hyper_connection_mixer)")

    def coefficients(self, head: bool) -> int:
        """fn's outputs: pre, post and comb (mhc), pre and post (ihc), pre alone (a head)."""
        k = self.streams
        return k if head else {"mhc": (2 + k) * k, "ihc": 2 * k}[self.mixer]

    def check(self, spec) -> None:
        if spec.parallel or spec.norm.placement != "pre" or spec.has("altup", "laurel"):
            raise SpecError(("hyper",), "hyper-connections wrap sequential pre-norm sublayers, without AltUp or LAuReL")

    def final_terms(self, e, model) -> None:  # the embedding's copies into the streams are no arithmetic
        if self.head == "mean":  # the sum of the k streams and the divide, per feature of each
            e.op("hc.head", self.streams * model.d_model)
            return
        self._site(e, model, "hc.head", True)

    def layer_terms(self, e, model, positions: int) -> None:
        for site in ("attn", "ffn"):
            self._site(e, model, f"hc.{site}", False)

    def _site(self, e, model, name: str, head: bool) -> None:
        d, k, n = model.d_model, self.streams, e.n
        wide = k * d
        after = 0 if head else 2 * wide - d  # post (or inject) ⊗ output; the adds beyond the layer's residual
        if self.mixer == "gated":
            e.norm(f"{name}.norm", model.norm, wide, n)
            e.linear(f"{name}.down", wide, self.rank, False, n)
            e.op(f"{name}.down_act", n * self.rank * (1 + ACTIVATION_OPS["silu"]))  # / k, silu
            e.linear(f"{name}.up", self.rank, wide, False, n)
            mix = wide * ACTIVATION_OPS["sigmoid"] + wide + wide  # sigmoid, ⊙ the normed streams, their mean
            if not head:
                e.linear(f"{name}.inject", wide, k, False, n)
                mix += k * (2 + ACTIVATION_OPS["sigmoid"])  # / k, sigmoid, × 2
            e.op(f"{name}.mix", n * (mix + after))
            return
        m = self.coefficients(head)
        e.op(f"{name}.input_norm", n * (UNWEIGHTED_RMS_OPS * wide + (m if self.mixer == "ihc" else 0)))
        e.linear(f"{name}.fn", wide, m, False, n, component=name)
        e.term(f"{name}.base", "bias", (m,), n, elementwise=n * m, component=name)
        e.term(f"{name}.scale", "bias", (1 if head else {"mhc": 3, "ihc": 2}[self.mixer],), n, elementwise=n * m, component=name)
        weights = k * (ACTIVATION_OPS["sigmoid"] + 1)  # pre: sigmoid, + eps
        if not head:
            weights += k * (ACTIVATION_OPS["sigmoid"] + 1)  # post: sigmoid, × its magnitude (+ eps)
        if self.mixer == "mhc" and not head:
            # comb: a softmax over each row, + eps, then 2·iters - 1 normalisations (a sum, + eps, a divide each)
            weights += k * k * (SOFTMAX_OPS + 1 + 3 * (2 * self.sinkhorn_iters - 1))
            e.term(f"{name}.comb_mix", "core", (d, 1, k * k), n, numel=0, macs=n * d * k * k, grows=False)
        e.op(f"{name}.mix", n * (weights + 2 * wide + after))  # Σ pre ⊙ streams

    def model_module(self, model):
        return _modules()[0](self, model)

    def layer_module(self, model, layer):
        return _modules()[1](self, model)


@cache
def _modules():
    import torch
    from torch import nn

    from ..blocks._torch import Linear, MatMul
    from ..model.reference import wrapped

    class StreamNorm(nn.Module):
        """An RMSNorm over each of the k streams of width d, its weight N = k·d wide (Qwen4ExpTextRMSNorm with
        group_size)."""

        is_norm = True

        def __init__(self, width: int, group: int):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(width))
            self.group = group

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            g = x.unflatten(-1, (-1, self.group))
            return (g * torch.rsqrt(g.pow(2).mean(-1, keepdim=True) + 1e-6)).flatten(-2) * self.weight

    def unweighted(x: torch.Tensor) -> torch.Tensor:
        return torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

    class Site(nn.Module):
        """One hyper-connection: ``forward(streams, sublayer)`` on streams (B, s, k, d) makes the sublayer's input,
        runs it and returns the new streams; a head (``sublayer`` None) returns the input alone."""

        def __init__(self, spec: HyperConnections, model, head: bool):
            super().__init__()
            d, k = model.d_model, spec.streams
            self.spec, self.k, self.d = spec, k, d
            if spec.mixer == "gated":
                self.norm = StreamNorm(k * d, d)
                self.down = Linear(k * d, spec.rank, bias=False)
                self.up = Linear(spec.rank, k * d, bias=False)
                if not head:
                    self.inject = Linear(k * d, k, bias=False)
                return
            m = spec.coefficients(head)
            self.fn = Linear(k * d, m, bias=False)
            self.base = nn.Parameter(torch.zeros(m))
            self.scale = nn.Parameter(torch.ones(1 if head else {"mhc": 3, "ihc": 2}[spec.mixer]))
            if spec.mixer == "mhc" and not head:
                self.comb_mix = MatMul()

        def forward(self, streams: torch.Tensor, sublayer=None) -> torch.Tensor:
            flat, k = streams.flatten(-2), self.k
            if self.spec.mixer == "gated":
                normed = self.norm(flat)
                weights = torch.sigmoid(self.up(nn.functional.silu(self.down(normed) / k)))
                x = (weights * normed).unflatten(-1, (k, self.d)).mean(-2)
                if sublayer is None:
                    return x
                inject = 2 * torch.sigmoid(self.inject(normed) / k)
                return streams + inject.unsqueeze(-1) * sublayer(x).unsqueeze(-2)
            raw = self.fn(flat * unweighted(flat))
            if sublayer is None:  # a head: one scale
                scales = self.scale.expand(k)
            elif self.spec.mixer == "ihc":  # pre's scale, post's
                scales = self.scale.repeat_interleave(k)
            else:  # pre's, post's, comb's
                scales = torch.cat([self.scale[:2].repeat_interleave(k), self.scale[2].expand(k * k)])
            mixes = raw * scales + self.base
            pre = torch.sigmoid(mixes[..., :k]) + 1e-6
            x = (pre.unsqueeze(-1) * streams).sum(-2)
            if sublayer is None:
                return x
            post = 2 * torch.sigmoid(mixes[..., k : 2 * k])
            added = post.unsqueeze(-1) * sublayer(x).unsqueeze(-2)
            if self.spec.mixer == "ihc":
                return added + streams
            comb = mixes[..., 2 * k :].unflatten(-1, (k, k)).softmax(-1) + 1e-6
            comb = comb / (comb.sum(-2, keepdim=True) + 1e-6)
            for _ in range(self.spec.sinkhorn_iters - 1):
                comb = comb / (comb.sum(-1, keepdim=True) + 1e-6)
                comb = comb / (comb.sum(-2, keepdim=True) + 1e-6)
            return added + self.comb_mix(comb.transpose(-1, -2), streams)

    class ModelHyper(nn.Module):
        """The embedding copied to every stream, (B, s, k, d); the head's one output at the end."""

        def __init__(self, spec: HyperConnections, model):
            super().__init__()
            self.k = spec.streams
            if spec.head == "mixed":
                self.head = Site(spec, model, True)

        def expand(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            return x.unsqueeze(-2).expand(*x.shape[:-1], self.k, x.shape[-1])

        def collapse(self, streams: torch.Tensor, ctx: dict) -> torch.Tensor:
            return self.head(streams) if hasattr(self, "head") else streams.mean(-2)

    class LayerHyper(nn.Module):
        def __init__(self, spec: HyperConnections, model):
            super().__init__()
            self.attn = Site(spec, model, False)
            self.ffn = Site(spec, model, False)

        def body(self, layer, x: torch.Tensor, ctx: dict, k: int) -> torch.Tensor:
            """Streams (B, s, k, d): each sublayer reads and writes them through its own site."""
            mixer, ffn = layer.sublayers()
            split = (len(layer.norms) + 1) // 2
            x = self.attn(x, lambda h: wrapped(mixer, layer.norms[:split], h, False))
            return self.ffn(x, lambda h: wrapped(ffn, layer.norms[split:], h, False))

    return ModelHyper, LayerHyper
