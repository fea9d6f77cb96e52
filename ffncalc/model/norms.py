"""A layer's norms where some are gated or absent (spec.NormUse; AXK2, ModernBERT's decoder): their terms and the
gated norm's reference module."""

from __future__ import annotations

from functools import cache

from .terms import ACTIVATION_OPS


def norm_terms(e, model, layer) -> None:
    """A run of ``e.n`` layers' norms: each present one (the model's norm; spec.NormUse), and of each gated one
    its gate, y ⊙ σ(W₂ silu(W₁ y)) on the norm's output y, W₁ d -> r and W₂ r -> d without biases (AXK2's
    GatedRMSNorm: AXK2GateMLP fc1, fc2)."""
    d, n, uses = model.d_model, e.n, layer.norm_uses(model.norm)
    e.norm("norms", model.norm.layer, d, n * sum(u in ("norm", "gated") for u in uses))
    if "bare" in uses:  # no weight: the normalisation alone (square, add, scale per feature for an RMSNorm)
        e.op("norms.bare", n * uses.count("bare") * bare(model.norm).ops(d))
    gated = n * uses.count("gated")
    if gated:
        r = model.norm.gate_rank
        e.linear("norms.gate.fc1", d, r, False, gated)
        e.linear("norms.gate.fc2", r, d, False, gated)
        # silu on r; the sigmoid and the product on d
        e.op("norms.gate", gated * (r * ACTIVATION_OPS["silu"] + d * (ACTIVATION_OPS["sigmoid"] + 1)))


def bare(norm):
    """A layer's norm without its weight or bias (spec.NormUse "bare")."""
    from dataclasses import replace

    return replace(norm.layer, affine=False, bias=False, layer_bias=False)


def gated_norm_module(model):
    """A layer's gated norm (``norm_terms``): its own weight (and bias) as the model's norm has them, and ``gate``."""
    return _module()(model)


@cache
def _module():
    import torch
    import torch.nn.functional as F
    from torch import nn

    from ..blocks._torch import Linear

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
            y = F.layer_norm(x, (self.d,), self.weight, self.bias) if self.layer else F.rms_norm(x, (self.d,), self.weight)
            return self.gate(y)

    return GatedNorm
