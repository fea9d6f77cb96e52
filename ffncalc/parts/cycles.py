"""HRM's cycles (HrmTextModel.forward, Wang et al. 2025, arXiv:2506.21734), the spec's ``cycles``: the layers are
stack runs of ``stack`` layers each; a high state z_H starts as the embeddings and a low state z_L as a learned vector
of d (z_L_init); in each of ``high`` cycles, ``low`` runs update z_L = norm(run(z_L + z_H)), then one run updates
z_H = norm(run(z_H + z_L)); the head reads the last z_H. Each stack run adds the two states (d per token) and ends in
a norm of the model's kind without weights (the last of them the model's final norm, so ``norm.final`` is false).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from ..model.schema import Positive, SpecError
from . import Part, register


@register
@dataclass(frozen=True)
class Cycles(Part):
    """HRM's two states over its stack runs (module docstring): ``stack`` layers a run, ``low`` runs of the low
    stack in each of ``high`` cycles, then one of the high stack; n_layers = stack · high · (low + 1)."""

    key = "cycles"
    order = 26
    summary = "the Hierarchical Reasoning Model's two states passed between its stack runs"

    stack: Positive
    low: Positive
    high: Positive

    @property
    def runs(self) -> int:
        return self.high * (self.low + 1)

    def check(self, spec) -> None:
        if self.stack * self.runs != spec.n_layers:
            raise SpecError(
                ("cycles", "stack"),
                f"{self.runs} stack runs of {self.stack} layers are {self.stack * self.runs} layers, but n_layers is {spec.n_layers}",
            )
        if spec.parallel or spec.has("reversible", "altup", "hyper") or spec.norm.final:
            raise SpecError(
                ("cycles",),
                "cycles pass one residual stream between stack runs, the last run's norm "
                "the final one: no parallel sublayers, reversible or other streams, and "
                "norm.final false",
            )

    def norm(self, model):
        """The norm after each stack run: the model's kind, without weights."""
        return replace(model.norm, affine=False, bias=False)

    def final_terms(self, e, model) -> None:
        d, runs = model.d_model, self.runs
        e.term("cycles.init", "bias", (d,))  # z_L_init; its add is the first run's
        e.op("cycles.add", runs * d)  # each run's input: z_L + z_H
        e.norm("cycles.norms", self.norm(model), d, runs)  # no weights: elementwise work only

    def model_module(self, model):
        return _module()(self, model)


@cache
def _module():
    import torch
    from torch import nn

    from ..blocks._torch import make_norm

    class CyclesModule(nn.Module):
        """z_L_init (``init``) and the weight-free norm; ``forward(x, run)`` passes the states through the stack
        runs, ``run(layers, h)`` running the model's layers ``layers`` (a range) on h."""

        def __init__(self, spec: Cycles, model):
            super().__init__()
            self.spec = spec
            self.init = nn.Parameter(torch.zeros(model.d_model))
            self.norm = make_norm(spec.norm(model), model.d_model)

        def run(self, x: torch.Tensor, run) -> torch.Tensor:
            n, k = self.spec.stack, 0
            high, low = x, self.init.to(x.dtype).expand_as(x)
            for _ in range(self.spec.high):
                for _ in range(self.spec.low):
                    low = self.norm(run(range(k * n, (k + 1) * n), low + high))
                    k += 1
                high = self.norm(run(range(k * n, (k + 1) * n), high + low))
                k += 1
            return high

    return CyclesModule
