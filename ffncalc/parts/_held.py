"""Parts held beside the model's layers that a forward over its tokens does not run (a speech talker, a waveform
decoder, an audio codec, a diffusion decoder's own weights): each component's parameters counted, as one tensor in the
reference model, with no work and no token's active parameters. What generating with them costs is their notes'."""

from __future__ import annotations

from functools import cache

from . import Part, module_name


class HeldPart(Part):
    """A part whose parameters are held and not run: ``held_numels(model)`` by component (default: ``numels()``),
    its reference module (``module_name``) holding one tensor a component."""

    def numels(self) -> dict[str, int]:
        """Its parameters by component."""
        raise NotImplementedError

    def held_numels(self, model) -> dict[str, int]:
        return self.numels()

    def sequence_terms(self, e, model, seq_len) -> None:
        """Its parameters, held and not run by a forward over the tokens: no work, no token's active parameters."""
        for name, n in self.held_numels(model).items():
            e.term(name, "weight", (n,), 1, 0, numel=n, per_sequence=True)

    def model_module(self, model):
        return held_module()(self.held_numels(model), module_name(self))


@cache
def held_module():
    """A module of held parameters, one tensor a component, nested as the components' dotted names (``talker.layers.mlp``
    is ``layers.mlp`` under the part's module): a forward over tokens reads none of them."""
    import torch
    from torch import nn

    class Held(nn.Module):
        def __init__(self, numels: dict[str, int], key: str):
            super().__init__()
            for name, n in numels.items():
                *path, leaf = name.split(".")[1:] if name.split(".")[0] == key else name.split(".")
                module: nn.Module = self
                for piece in path:
                    if not hasattr(module, piece):
                        module.add_module(piece, nn.Module())
                    module = getattr(module, piece)
                module.register_parameter(leaf, nn.Parameter(torch.zeros(n)))

    return Held
