"""Alternating updates (Baykal et al. 2023, "Alternating Updates for Efficient Transformers", NeurIPS; Gemma 3n:
Gemma3nTextAltUp, altup_num_inputs). The residual stream is n streams of width d; each layer runs on one.

Model: n - 1 projections d -> d make the other streams from the embedding (altup_projections) and n - 1 more map
them back before the final norm (altup_unembed_projections), each rescaled to the first stream's RMS; the streams are
then averaged. Each layer: predict, a router (router_norm, × 1/d, modality_router d -> n, tanh) reading the active
stream, prediction_coefs n -> n² from it, and every stream replaced by itself plus the streams mixed by those n × n
coefficients (a product of activations, d·n² multiply-adds per token); the layer runs on the active prediction;
correct, the router again on the layer's output, correction_coefs n -> n, and every stream moved by (its coefficient
+ 1) × (output - active prediction); the active stream scaled by correct_output_scale (d) where correct_scale, which
the per-layer input reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..model.schema import Positive
from . import Part, register


@register
@dataclass(frozen=True)
class AltUp(Part):
    key = "altup"
    order = 20
    summary = "alternating updates: n residual streams, each layer run on one (Gemma 3n)"

    inputs: Positive = 4
    correct_scale: bool = True  # Gemma3nTextConfig.altup_correct_scale: the scale is a parameter either way

    def _ends(self, e, model, name: str, final: bool) -> None:
        d, extra = model.d_model, self.inputs - 1
        e.linear(name, d, d, False, extra)
        # each new stream's RMS (square, sum, clamp, root) and its rescale to the first's (multiply, divide); the
        # first's RMS once; before the final norm, the mean of the n streams
        e.op(f"{name}.rescale", 2 * d + extra * 6 * d + (self.inputs * d if final else 0))

    def input_terms(self, e, model, seq_len: int) -> None:
        self._ends(e, model, "altup.projections", False)

    def final_terms(self, e, model) -> None:
        self._ends(e, model, "altup.unembed_projections", True)

    def layer_terms(self, e, model, positions: int) -> None:
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
        return _modules()[0](self, model)

    def layer_module(self, model, layer):
        return _modules()[1](self, model)


@cache
def _modules():
    import torch
    from torch import nn

    from ..blocks._torch import Linear, MatMul, make_norm

    def rescaled(x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return x * target / x.pow(2).mean(-1, keepdim=True).clamp(min=1e-5).sqrt()

    class ModelStreams(nn.Module):
        """The streams made from the embedding, (n, B, s, d), and averaged back into one."""

        def __init__(self, spec: AltUp, model):
            super().__init__()
            d = model.d_model
            self.projections = nn.ModuleList(Linear(d, d, bias=False) for _ in range(spec.inputs - 1))
            self.unembed_projections = nn.ModuleList(Linear(d, d, bias=False) for _ in range(spec.inputs - 1))

        def expand(self, x: torch.Tensor, ctx: dict) -> torch.Tensor:
            target = x.pow(2).mean(-1, keepdim=True).sqrt()
            return torch.stack([x] + [rescaled(p(x), target) for p in self.projections])

        def collapse(self, streams: torch.Tensor, ctx: dict) -> torch.Tensor:
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

        def around(self, run, streams: torch.Tensor, ctx: dict, k: int) -> torch.Tensor:
            """The layer on the active stream's prediction; ``ctx["active"]``: the corrected active stream, scaled."""
            coefs = self.prediction_coefs(self._route(streams[0])).unflatten(-1, (self.k, self.k))  # (B, s, k, k)
            mixed = self.predict(streams.permute(1, 2, 3, 0), coefs.transpose(-2, -1))  # (B, s, d, k)
            predictions = mixed.permute(3, 0, 1, 2) + streams
            out = run(predictions[0])
            coefs = self.correction_coefs(self._route(out)) + 1.0  # (B, s, k)
            corrected = predictions + (out - predictions[0]) * coefs.permute(2, 0, 1).unsqueeze(-1)
            ctx["active"] = corrected[0] * self.correct_output_scale if self.correct_scale else corrected[0]
            return corrected

    return ModelStreams, LayerStreams
