"""Layer groups that run an earlier group's layers again, with its parameters (the Hierarchical Reasoning Model's two
weight-shared stacks, each run several times); and HRM's cycles, the two states those runs pass between them.

Reuse: a layer group names itself (``name``) and a later group of as many layers says ``reuses: name``: its k-th
layer is the named group's k-th layer run again, the same blocks with the same parameters. Resolved, such a layer
holds ``reuse``, how many layers earlier the layer that stores its parameters is (a reuse of a reuse points at the
layer that stores them); it is a layer of its own for every analysis (its work, its cache), but its terms store
nothing (``Term.stored`` 0): each tensor is counted once, where it is stored, and its work at every run. The reference
model ties each reusing layer's parameters to those of the layer it runs again (``shared.tie``).

Cycles (HrmTextModel.forward, Wang et al. 2025, arXiv:2506.21734): the layers are stack runs of ``stack`` layers
each; a high state z_H starts as the embeddings and a low state z_L as a learned vector of d (z_L_init); in each of
``high`` cycles, ``low`` runs update z_L = norm(run(z_L + z_H)), then one run updates z_H = norm(run(z_H + z_L)); the
head reads the last z_H. Each stack run adds the two states (d per token) and ends in a norm of the model's kind
without weights (the last of them the model's final norm, so ``norm.final`` is false).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from .schema import Positive, SpecError


def check(groups) -> None:
    """A group's ``reuses`` names an earlier group of as many layers; a reusing group states no blocks, norms or
    shared block of its own (it runs the named group's), and neither group runs a shared block."""
    seen: dict[str, object] = {}
    for i, group in enumerate(groups):
        if group.reuses is not None:
            source = seen.get(group.reuses)
            if source is None:
                raise SpecError(("layers", i, "reuses"), f"no earlier layer group named {group.reuses!r}")
            if source.repeat != group.repeat:
                raise SpecError(("layers", i, "reuses"), f"group {group.reuses!r} has {source.repeat} layers, this "
                                                         f"group {group.repeat}: a group reuses one of as many")
            stated = [f for f in ("attention", "ffn", "norms", "shared") if getattr(group, f) is not None]
            if stated or source.shared is not None:
                raise SpecError(("layers", i, "reuses"), "a reusing group runs the named group's layers as they are: "
                                                         "no attention, ffn, norms or shared block of its own, and "
                                                         "none in the named group")
        if group.name is not None:
            if group.name in seen:
                raise SpecError(("layers", i, "name"), f"two layer groups are named {group.name!r}")
            seen[group.name] = group


def reused(layers: list, start: int, source: int, repeat: int) -> list:
    """The ``repeat`` layers from ``start`` on, each running the layer ``start - source`` places earlier again,
    pointed at the layer that stores its parameters."""
    out = []
    for k in range(repeat):
        layer = layers[source + k]
        stored = source + k - (layer.reuse or 0)
        out.append(replace(layer, reuse=start + k - stored))
    return out


@dataclass(frozen=True)
class Cycles:
    """HRM's two states over its stack runs (module docstring): ``stack`` layers a run, ``low`` runs of the low
    stack in each of ``high`` cycles, then one of the high stack; n_layers = stack · high · (low + 1)."""

    stack: Positive
    low: Positive
    high: Positive

    @property
    def runs(self) -> int:
        return self.high * (self.low + 1)

    def check(self, n_layers: int) -> None:
        if self.stack * self.runs != n_layers:
            raise SpecError(("stack",), f"{self.runs} stack runs of {self.stack} layers are {self.stack * self.runs} "
                                        f"layers, but n_layers is {n_layers}")

    def norm(self, model):
        """The norm after each stack run: the model's kind, without weights."""
        return replace(model.norm, affine=False, bias=False)

    def model_terms(self, e, model) -> None:
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

        def forward(self, x: torch.Tensor, run) -> torch.Tensor:
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
