"""Weight-shared blocks: one block's tensors stored once and run by several layers (Zamba's shared transformer
block, Zamba2's ``num_mem_blocks`` of them in alternation).

The spec names them beside the layers (``shared_blocks: {name: block}``, blocks of the slot "shared") and a layer
group says which one its layers also run (``shared: name``). Resolved, each such layer holds a ``SharedUse``: the
block, its name, which of its uses the layer is and how many there are. A shared block's terms are written for each
use with the emitter's ``shared`` set, so that each tensor is stored once, in the run of the block's first use
(``Term.stored``), and its work is charged at every use; what a use holds of its own (a per-use projection, the
adapters Zamba2 keeps inside the block, one per use) the block states itself. The reference model builds the
block's module in every layer that uses it and ties each later use's parameters to the first's (``tie``), so torch
lists each tensor once, under its first use, and counts each use's work where it runs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SharedUse:
    """A layer's use of a weight-shared block."""

    name: str
    use: int  # 0 for the block's first use
    uses: int  # layers that use the block in all
    block: object

    @property
    def first(self) -> bool:
        return self.use == 0


def uses(names: list[str | None], blocks: dict[str, object]) -> list[SharedUse | None]:
    """Each layer's use (or None) from the name of the shared block it runs, numbered in layer order."""
    total = {name: names.count(name) for name in blocks}
    seen: dict[str, int] = {}
    out: list[SharedUse | None] = []
    for name in names:
        if name is None:
            out.append(None)
            continue
        out.append(SharedUse(name, seen.get(name, 0), total[name], blocks[name]))
        seen[name] = seen.get(name, 0) + 1
    return out


def tie(first, later) -> None:
    """Make every parameter of the module ``later`` the same Parameter as ``first``'s at the same path (a tied
    Parameter is one tensor: named_parameters lists it once, under the first path it meets), except those under
    the submodules it names in ``per_use`` (each use's own). A shared block's module is built with
    ``torch_module(model, causal, uses=...)`` and called as ``module(x, embeddings, use)``."""
    own = getattr(later, "per_use", ())
    for path, module in later.named_modules():
        if path.split(".")[0] in own:
            continue
        source = first.get_submodule(path)
        for name in list(module._parameters):
            if module._parameters[name] is not None:
                module._parameters[name] = source._parameters[name]
