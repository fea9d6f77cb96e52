"""Layer groups that run an earlier group's layers again, with its parameters (the Hierarchical Reasoning Model's two
weight-shared stacks, each run several times; HRM's cycles, the two states those runs pass, are a part:
parts/cycles.py).

Reuse: a layer group names itself (``name``) and a later group of as many layers says ``reuses: name``: its k-th
layer is the named group's k-th layer run again, the same blocks with the same parameters. Resolved, such a layer
holds ``reuse``, how many layers earlier the layer that stores its parameters is (a reuse of a reuse points at the
layer that stores them); it is a layer of its own for every analysis (its work, its cache), but its terms store
nothing (``Term.stored`` 0): each tensor is counted once, where it is stored, and its work at every run. The reference
model ties each reusing layer's parameters to those of the layer it runs again (``shared.tie``).
"""

from __future__ import annotations

from dataclasses import replace

from .schema import SpecError


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
                raise SpecError(
                    ("layers", i, "reuses"),
                    f"group {group.reuses!r} has {source.repeat} layers, this group {group.repeat}: a group reuses one of as many",
                )
            stated = [f for f in ("attention", "ffn", "norms", "shared") if getattr(group, f) is not None]
            if stated or source.shared is not None:
                raise SpecError(
                    ("layers", i, "reuses"),
                    "a reusing group runs the named group's layers as they are: "
                    "no attention, ffn, norms or shared block of its own, and "
                    "none in the named group",
                )
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
