"""Parts a model has beside its layers' two blocks, the same in every layer: per-layer inputs (Gemma 3n; Gemma 4
E2B and E4B), AltUp and LAuReL (Gemma 3n), hyper-connections (DeepSeek-V4, HY-V4, Qwen4-Exp), scaled residual adds
(ZAYA1). Each is a frozen dataclass of spec fields that writes its own terms: those of the model (after the
embedding, before the final norm) and those of each layer (slot "", beside the layer's norms), and builds its
reference torch modules, whose paths mirror the term names. Also here: a layer's norms where some are gated or absent
(``norm_terms``; AXK2, ModernBERT's decoder), the prediction head between the final norm and the unembedding
(ModernBERT's decoder), and a token embedding of its own width or vocabulary (OPT-350m, BLT).

Widths: d the model's, L its layers, p the per-layer input width, n AltUp's streams, r LAuReL's rank or a gated
norm's; k the hyper-connections' streams, N = k·d their flattened width.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal

from .schema import Positive
from .terms import ACTIVATION_OPS, SOFTMAX_OPS

Activation = Literal["identity", "relu", "relu2", "tanh", "sigmoid", "silu", "gelu", "gelu_tanh"]


@dataclass(frozen=True)
class PerLayerInputs:
    """Per-layer embeddings (Gemma 3n: Gemma3nTextModel; Gemma 4: Gemma4TextModel with hidden_size_per_layer_input).

    Model: a second table gives each token a p-wide vector for every layer (embed_tokens_per_layer, vocab_size
    × L·p, scaled by √p); the token's embedding projected d -> L·p (per_layer_model_projection, scaled by
    1/√d) and RMS-normed over each layer's p (per_layer_projection_norm) is added, the sum scaled by 1/√2.
    Each layer, after its FFN: gate d -> p (per_layer_input_gate), the activation, ⊙ the layer's vector,
    p -> d (per_layer_projection), a norm over d (post_per_layer_input_norm), added to the residual (with AltUp:
    to every stream but the active one)."""

    width: Positive
    vocab_size: Positive | None = None  # default: the model's
    activation: Activation = "gelu_tanh"

    def model_terms(self, e, model) -> None:
        d, p, total = model.d_model, self.width, model.n_layers * self.width
        vocab = self.vocab_size or model.vocab_size
        # a lookup, as the token embedding (count.py: the one-hot matmul Chinchilla charges), then × √p
        e.term("ple.embed.weight", "token", (vocab, total), macs=vocab * total, elementwise=total)
        e.linear("ple.projection", d, total, False, 1)
        e.norm("ple.projection_norm", model.norm, p, 1, total=total)
        e.op("ple.combine", 3 * total)  # × 1/√d before the norm; (projection + vector) × 1/√2

    def layer_terms(self, e, model) -> None:
        d, p, n = model.d_model, self.width, e.n
        e.linear("ple.gate", d, p, False, n)
        e.op("ple.act", n * p * (ACTIVATION_OPS[self.activation] + 1))  # the activation, ⊙ the layer's vector
        e.linear("ple.proj", p, d, False, n)
        e.norm("ple.norm", model.norm, d, n)
        streams = model.altup.inputs - 1 if model.altup else 1
        e.op("ple.residual", n * streams * d)

    def model_module(self, model):
        return _modules()[0](self, model)

    def layer_module(self, model):
        return _modules()[1](self, model)


@dataclass(frozen=True)
class AltUp:
    """Alternating updates (Baykal et al. 2023, "Alternating Updates for Efficient Transformers", NeurIPS; Gemma 3n:
    Gemma3nTextAltUp, altup_num_inputs). The residual stream is n streams of width d; each layer runs on one.

    Model: n - 1 projections d -> d make the other streams from the embedding (altup_projections) and n - 1 more
    map them back before the final norm (altup_unembed_projections), each rescaled to the first stream's RMS; the
    streams are then averaged. Each layer: predict, a router (router_norm, × 1/d, modality_router d -> n, tanh)
    reading the active stream, prediction_coefs n -> n² from it, and every stream replaced by itself plus the
    streams mixed by those n × n coefficients (a product of activations, d·n² multiply-adds per token); the layer
    runs on the active prediction; correct, the router again on the layer's output, correction_coefs n -> n, and
    every stream moved by (its coefficient + 1) × (output - active prediction); the active stream scaled by
    correct_output_scale (d) where correct_scale, which the per-layer input reads."""

    inputs: Positive = 4
    correct_scale: bool = True  # Gemma3nTextConfig.altup_correct_scale: the scale is a parameter either way

    def model_terms(self, e, model) -> None:
        d, extra = model.d_model, self.inputs - 1
        name = "altup.projections" if e.part == "embedding" else "altup.unembed_projections"
        e.linear(name, d, d, False, extra)
        # each new stream's RMS (square, sum, clamp, root) and its rescale to the first's (multiply, divide); the
        # first's RMS once; before the final norm, the mean of the n streams
        e.op(f"{name}.rescale", 2 * d + extra * 6 * d + (self.inputs * d if e.part == "final" else 0))

    def layer_terms(self, e, model) -> None:
        d, k, n = model.d_model, self.inputs, e.n
        e.norm("altup.router_norm", model.norm, d, n, total=2 * d)  # predict and correct, a norm each
        e.term("altup.router.weight", "weight", (k, d), n, macs=n * 2 * d * k)  # run twice: predict and correct
        e.op("altup.router_act", n * 2 * (d + k))  # × 1/d before, tanh after, each time
        e.linear("altup.prediction_coefs", k, k * k, False, n)
        e.term("altup.predict", "core", (d, 1, k * k), n, numel=0, macs=n * d * k * k, grows=False)
        e.linear("altup.correction_coefs", k, k, False, n)
        # predictions + streams; the innovation; its coefficients + 1; × and + per stream
        e.op("altup.update", n * (k * d + d + k + 2 * k * d))
        e.term("altup.correct_output_scale", "norm", (d,), n, elementwise=n * d if self.correct_scale else 0)

    def model_module(self, model):
        return _modules()[2](self, model)

    def layer_module(self, model):
        return _modules()[3](self, model)


@dataclass(frozen=True)
class Laurel:
    """Learned augmented residual layer (Menghani et al. 2024, "LAuReL: Learned Augmented Residual Layer"; Gemma 3n:
    Gemma3nTextLaurelBlock, laurel_rank): from the layer's normed input x, x + norm(right(left(x))) with left
    d -> r and right r -> d, added to the attention's residual sum and the two scaled by 1/√2."""

    rank: Positive

    def layer_terms(self, e, model) -> None:
        d, n = model.d_model, e.n
        e.linear("laurel.left", d, self.rank, False, n)
        e.linear("laurel.right", self.rank, d, False, n)
        e.norm("laurel.norm", model.norm, d, n)
        e.op("laurel.residual", n * 3 * d)  # x + norm(…); added to the attention's sum; × 1/√2

    def layer_module(self, model):
        return _modules()[4](self, model)


UNWEIGHTED_RMS_OPS = 3  # per element of an RMSNorm without a weight: square, sum, scale


@dataclass(frozen=True)
class HyperConnections:
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
    The head of both: the unweighted norm, fn (N -> k), base (k), scale (1), pre weights, Σ pre ⊙ streams.
    gated, Qwen4-Exp's (Qwen4ExpTextGatedResidual): an RMSNorm over each stream (its weight N wide), down
    (N -> rank) and silu of it / k, up (rank -> N) and sigmoid, the input the mean over the streams of that ⊙ the
    normed streams; inject (N -> k), 2·sigmoid of it / k, and the streams become streams + inject ⊗ output. Its
    head (hyper_connection_mixer) is the same without inject."""

    streams: Positive = 4
    mixer: Literal["mhc", "ihc", "gated"] = "mhc"
    rank: Positive | None = None  # gated: the low-rank mixer's width (Qwen4ExpTextConfig.hc_lowrank)
    sinkhorn_iters: Positive = 20  # mhc: Sinkhorn-Knopp rounds (DeepseekV4Config.hc_sinkhorn_iters)

    def __post_init__(self) -> None:
        if (self.rank is None) == (self.mixer == "gated"):
            from .schema import SpecError

            raise SpecError(("rank",), "the gated mixer needs a rank, and only it has one")

    def coefficients(self, head: bool) -> int:
        """fn's outputs: pre, post and comb (mhc), pre and post (ihc), pre alone (a head)."""
        k = self.streams
        return k if head else {"mhc": (2 + k) * k, "ihc": 2 * k}[self.mixer]

    def model_terms(self, e, model) -> None:
        if e.part == "final":  # the embedding's copies into the streams are no arithmetic
            self._site(e, model, "hc.head", True)

    def layer_terms(self, e, model) -> None:
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
        e.term(f"{name}.scale", "bias", (1 if head else {"mhc": 3, "ihc": 2}[self.mixer],), n, elementwise=n * m,
               component=name)
        weights = k * (ACTIVATION_OPS["sigmoid"] + 1)  # pre: sigmoid, + eps
        if not head:
            weights += k * (ACTIVATION_OPS["sigmoid"] + 1)  # post: sigmoid, × its magnitude (+ eps)
        if self.mixer == "mhc" and not head:
            # comb: a softmax over each row, + eps, then 2·iters - 1 normalisations (a sum, + eps, a divide each)
            weights += k * k * (SOFTMAX_OPS + 1 + 3 * (2 * self.sinkhorn_iters - 1))
            e.term(f"{name}.comb_mix", "core", (d, 1, k * k), n, numel=0, macs=n * d * k * k, grows=False)
        e.op(f"{name}.mix", n * (weights + 2 * wide + after))  # Σ pre ⊙ streams

    def model_module(self, model):
        return _modules()[5](self, model)

    def layer_module(self, model):
        return _modules()[6](self, model)


@dataclass(frozen=True)
class ResidualScale:
    """Scaled residual adds (ZAYA1: ZayaResidualScaling after each sublayer; ZayaModel.input_hidden_states_scale
    and _bias). After each sublayer, the sublayer's output h and the residual x each shifted and scaled per feature
    before they are added: (h + b_h) ⊙ s_h + (x + b_x) ⊙ s_x, four vectors of d (attention's, the FFN's); with
    ``input``, the embedding (x + b) ⊙ s before the first layer."""

    input: bool = True

    def model_terms(self, e, model) -> None:
        if self.input:
            e.term("residual_scale.input", "norm", (2, model.d_model), 1, elementwise=2 * model.d_model)

    def layer_terms(self, e, model) -> None:
        d, n = model.d_model, e.n
        for sublayer in ("attention", "ffn"):  # two adds and two products per feature; the sum is the residual's
            e.term(f"residual_scale.{sublayer}", "norm", (4, d), n, elementwise=n * 4 * d)

    def model_module(self, model):
        return _modules()[9](self, model)

    def layer_module(self, model):
        return _modules()[10](self, model)


def norm_terms(e, model, layer) -> None:
    """A run of ``e.n`` layers' norms: each present one (the model's norm; spec.NormUse), and of each gated one
    its gate, y ⊙ σ(W₂ silu(W₁ y)) on the norm's output y, W₁ d -> r and W₂ r -> d without biases (AXK2's
    GatedRMSNorm: AXK2GateMLP fc1, fc2)."""
    d, n, uses = model.d_model, e.n, layer.norm_uses(model.norm)
    e.norm("norms", model.norm.layer, d, n * sum(u != "none" for u in uses))
    gated = n * uses.count("gated")
    if gated:
        r = model.norm.gate_rank
        e.linear("norms.gate.fc1", d, r, False, gated)
        e.linear("norms.gate.fc2", r, d, False, gated)
        # silu on r; the sigmoid and the product on d
        e.op("norms.gate", gated * (r * ACTIVATION_OPS["silu"] + d * (ACTIVATION_OPS["sigmoid"] + 1)))


@dataclass(frozen=True)
class PredictionHead:
    """A transform of the final norm's output before the unembedding (ModernBERT's decoder:
    ModernBertDecoderPredictionHead): dense d -> d, the activation, the model's norm (lm_head.dense, .act,
    .norm)."""

    activation: Activation = "gelu"
    bias: bool = False  # the dense projection's (ModernBertDecoderConfig.classifier_bias)
    norm: bool = True

    def model_terms(self, e, model) -> None:
        d = model.d_model
        e.linear("prediction_head.dense", d, d, self.bias, 1)
        e.op("prediction_head.act", d * ACTIVATION_OPS[self.activation])
        if self.norm:
            e.norm("prediction_head.norm", model.norm, d, 1)

    def model_module(self, model):
        return _modules()[7](self, model)


@dataclass(frozen=True)
class Embedding:
    """The token embedding where it is not vocab_size × d_model.

    ``width`` e: the table and the head are e wide, a bias-free projection e -> d after the lookup, before the
    positions are added (embed.project_in), and d -> e after the final norm, before the head (embed.project_out)
    (OPT: OPTDecoder.project_in and project_out where word_embed_proj_dim differs from hidden_size).
    ``vocab_size``: the table's rows where they differ from the head's, the model's vocab_size, which an untied head
    alone allows (BLT: BltLocalEncoder.embed_tokens has encoder_config.vocab_size rows, lm_head the model's)."""

    width: Positive | None = None
    vocab_size: Positive | None = None

    def model_terms(self, e, model) -> None:
        """project_in after the lookup (the embedding's emitter), project_out before the head (the head's)."""
        if self.width is None:
            return
        d, w = model.d_model, self.width
        if e.part == "embedding":
            e.linear("embed.project_in", w, d, False, 1)
        else:
            e.linear("embed.project_out", d, w, False, 1)

    def model_module(self, model):
        """The table (``weight``), with ``project_in`` and ``project_out`` where it has its own width."""
        return _modules()[11](self, model)


def gated_norm_module(model):
    """A layer's gated norm (``norm_terms``): its own weight (and bias) as the model's norm has them, and ``gate``."""
    return _modules()[8](model)


@cache
def _modules():
    import torch
    import torch.nn.functional as F
    from torch import nn

    from ..blocks._torch import ACTIVATIONS, Linear, MatMul, make_norm

    class ModelInputs(nn.Module):
        """Every layer's input vector: the table's row and the projected embedding, (B, s, L, p)."""

        def __init__(self, spec: PerLayerInputs, model):
            super().__init__()
            self.layers, self.width = model.n_layers, spec.width
            self.embed = nn.Embedding(spec.vocab_size or model.vocab_size, model.n_layers * spec.width)
            self.projection = Linear(model.d_model, model.n_layers * spec.width, bias=False)
            self.projection_norm = make_norm(model.norm, spec.width)
            self.scale = spec.width ** 0.5

        def forward(self, tokens: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            shape = (*tokens.shape, self.layers, self.width)
            table = self.embed(tokens).view(shape) * self.scale
            projected = self.projection_norm((self.projection(x) * x.shape[-1] ** -0.5).view(shape))
            return (projected + table) * 2 ** -0.5

    class LayerInput(nn.Module):
        """norm(proj(act(gate(h)) ⊙ the layer's vector))."""

        def __init__(self, spec: PerLayerInputs, model):
            super().__init__()
            self.gate = Linear(model.d_model, spec.width, bias=False)
            self.proj = Linear(spec.width, model.d_model, bias=False)
            self.norm = make_norm(model.norm, model.d_model)
            self.act = ACTIVATIONS[spec.activation]

        def forward(self, h: torch.Tensor, vector: torch.Tensor) -> torch.Tensor:
            return self.norm(self.proj(self.act(self.gate(h)) * vector))

    def rescaled(x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return x * target / x.pow(2).mean(-1, keepdim=True).clamp(min=1e-5).sqrt()

    class ModelStreams(nn.Module):
        """The streams made from the embedding, (n, B, s, d), and averaged back into one."""

        def __init__(self, spec: AltUp, model):
            super().__init__()
            d = model.d_model
            self.projections = nn.ModuleList(Linear(d, d, bias=False) for _ in range(spec.inputs - 1))
            self.unembed_projections = nn.ModuleList(Linear(d, d, bias=False) for _ in range(spec.inputs - 1))

        def expand(self, x: torch.Tensor) -> torch.Tensor:
            target = x.pow(2).mean(-1, keepdim=True).sqrt()
            return torch.stack([x] + [rescaled(p(x), target) for p in self.projections])

        def collapse(self, streams: torch.Tensor) -> torch.Tensor:
            target = streams[0].pow(2).mean(-1, keepdim=True).sqrt()
            parts = [streams[0]] + [rescaled(p(s), target) for p, s in zip(self.unembed_projections, streams[1:])]
            return torch.stack(parts).mean(0)

    class LayerStreams(nn.Module):
        """predict before the layer, correct after it (stream 0 the active one)."""

        def __init__(self, spec: AltUp, model):
            super().__init__()
            d, k = model.d_model, spec.inputs
            self.k, self.correct_scale = k, spec.correct_scale
            self.router_norm = make_norm(model.norm, d)
            self.router = Linear(d, k, bias=False)
            self.prediction_coefs = Linear(k, k * k, bias=False)
            self.predict = MatMul()
            self.correction_coefs = Linear(k, k, bias=False)
            self.correct_output_scale = nn.Parameter(torch.zeros(d))

        def _route(self, x: torch.Tensor) -> torch.Tensor:
            return torch.tanh(self.router(self.router_norm(x) / x.shape[-1]))

        def before(self, streams: torch.Tensor) -> torch.Tensor:
            coefs = self.prediction_coefs(self._route(streams[0])).unflatten(-1, (self.k, self.k))  # (B, s, k, k)
            mixed = self.predict(streams.permute(1, 2, 3, 0), coefs.transpose(-2, -1))  # (B, s, d, k)
            return mixed.permute(3, 0, 1, 2) + streams

        def after(self, predictions: torch.Tensor, out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            coefs = self.correction_coefs(self._route(out)) + 1.0  # (B, s, k)
            corrected = predictions + (out - predictions[0]) * coefs.permute(2, 0, 1).unsqueeze(-1)
            first = corrected[0] * self.correct_output_scale if self.correct_scale else corrected[0]
            return corrected, first

    class LaurelModule(nn.Module):
        def __init__(self, spec: Laurel, model):
            super().__init__()
            self.left = Linear(model.d_model, spec.rank, bias=False)
            self.right = Linear(spec.rank, model.d_model, bias=False)
            self.norm = make_norm(model.norm, model.d_model)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.norm(self.right(self.left(x)))

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
            self.head = Site(spec, model, True)

        def expand(self, x: torch.Tensor) -> torch.Tensor:
            return x.unsqueeze(-2).expand(*x.shape[:-1], self.k, x.shape[-1])

        def collapse(self, streams: torch.Tensor) -> torch.Tensor:
            return self.head(streams)

    class LayerHyper(nn.Module):
        def __init__(self, spec: HyperConnections, model):
            super().__init__()
            self.attn = Site(spec, model, False)
            self.ffn = Site(spec, model, False)

    class Head(nn.Module):
        def __init__(self, spec: PredictionHead, model):
            super().__init__()
            self.dense = Linear(model.d_model, model.d_model, bias=spec.bias)
            self.act = ACTIVATIONS[spec.activation]
            self.norm = make_norm(model.norm, model.d_model) if spec.norm else nn.Identity()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.norm(self.act(self.dense(x)))

    class Gate(nn.Module):
        def __init__(self, d: int, r: int):
            super().__init__()
            self.fc1 = Linear(d, r, bias=False)
            self.fc2 = Linear(r, d, bias=False)

        def forward(self, y: torch.Tensor) -> torch.Tensor:
            return y * torch.sigmoid(self.fc2(F.silu(self.fc1(y))))

    class GatedNorm(nn.Module):
        is_norm = True  # verify: its weight and bias are the norm; the gate's projections are their own

        def __init__(self, model):
            super().__init__()
            norm, d = model.norm, model.d_model
            self.layer, self.d = norm.kind.startswith("layernorm"), d
            self.weight = nn.Parameter(torch.ones(d)) if norm.affine else None
            self.bias = nn.Parameter(torch.zeros(d)) if norm.has_bias else None
            self.gate = Gate(d, norm.gate_rank)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = (F.layer_norm(x, (self.d,), self.weight, self.bias) if self.layer
                 else F.rms_norm(x, (self.d,), self.weight))
            return self.gate(y)

    class InputScale(nn.Module):
        def __init__(self, spec: ResidualScale, model):
            super().__init__()
            self.input = nn.Parameter(torch.stack([torch.ones(model.d_model), torch.zeros(model.d_model)]))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (x + self.input[1]) * self.input[0]

    class ScaledAdds(nn.Module):
        """Each sublayer's (scale, bias of its output, scale, bias of the residual)."""

        def __init__(self, spec: ResidualScale, model):
            super().__init__()
            d = model.d_model
            self.attention = nn.Parameter(torch.stack([torch.ones(d), torch.zeros(d)] * 2))
            self.ffn = nn.Parameter(torch.stack([torch.ones(d), torch.zeros(d)] * 2))

        def add(self, x: torch.Tensor, out: torch.Tensor, slot: int) -> torch.Tensor:
            v = self.attention if slot == 0 else self.ffn
            return (out + v[1]) * v[0] + (x + v[3]) * v[2]

    class Embed(nn.Module):
        """``forward(tokens)``: the table's rows, projected to d where it has its own width; ``out(x)``: d -> e."""

        def __init__(self, spec: Embedding, model):
            super().__init__()
            rows, width = spec.vocab_size or model.vocab_size, spec.width or model.d_model
            self.weight = nn.Parameter(nn.init.normal_(torch.empty(rows, width)))
            if spec.width is not None:
                self.project_in = Linear(spec.width, model.d_model, bias=False)
                self.project_out = Linear(model.d_model, spec.width, bias=False)

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            x = F.embedding(tokens, self.weight)
            return self.project_in(x) if hasattr(self, "project_in") else x

        def out(self, x: torch.Tensor) -> torch.Tensor:
            return self.project_out(x) if hasattr(self, "project_out") else x

    return (ModelInputs, LayerInput, ModelStreams, LayerStreams, LaurelModule, ModelHyper, LayerHyper, Head,
            GatedNorm, InputScale, ScaledAdds, Embed)
