"""Weight-shared blocks by name (the spec's ``shared_blocks: {name: block}``, blocks of the slot "shared"), each
stored once and run by every layer whose group names it (``shared: name``): Zamba's shared transformer block,
Zamba2's ``num_mem_blocks`` of them in alternation. Resolved, each such layer holds a ``SharedUse``
(model/shared.py), which the count and the reference model read as the layer's third block."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated

from ..model.schema import Slot, SpecError
from ..model.shared import uses
from ..model.spec import check_block
from . import Part, register

Shared = Annotated[object, Slot("shared")]  # a weight-shared block several layers run


@register
@dataclass(frozen=True)
class SharedBlocks(Part):
    key = "shared_blocks"
    order = 40
    summary = "weight-shared blocks, each stored once and run by the layers that name it (Zamba, Zamba2)"

    blocks: tuple[tuple[str, object], ...] = ()

    @classmethod
    def annotation(cls):
        return dict[str, Shared]

    @classmethod
    def read(cls, value):
        return cls(tuple(value.items())) if value else None

    def holds(self, name: str) -> bool:
        return name in dict(self.blocks)

    def check(self, spec) -> None:
        for name, block in self.blocks:
            try:
                check_block(block, spec.d_model)
            except SpecError as exc:
                raise exc.within("shared_blocks", name) from None

    def resolve_layers(self, spec, layers, groups):
        """Each layer's use of its shared block, numbered: a use is a layer of its own."""
        shared = {name: block.resolve(spec.d_model) for name, block in self.blocks}
        names = [group.shared if group is not None else None for group in groups]
        return [replace(layer, shared=use) if use else layer for layer, use in zip(layers, uses(names, shared))]
