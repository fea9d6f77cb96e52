"""A vision tower from the pixels up (FastViT, DaViT, MobileNetV5, a VQ-VAE's encoder path), held by a ``vision`` part
in place of its patch embedding and layers: what the part asks of each, with the defaults most of them keep."""

from __future__ import annotations

from typing import ClassVar


class PixelStem:
    """The protocol of a tower from the pixels up (a mixin of its dataclass): ``check()``, ``stride`` (pixels a side of
    one output position), ``features`` (channels the projector reads), ``terms(image_size)`` and ``modules()`` /
    ``run(modules, pixels)``, and the defaults below."""

    # what its outputs a side are, where an image's side must hold them whole (None: any side, as timm pads)
    whole: ClassVar[str | None] = None

    def own_tokens(self, image_size: int) -> int | None:
        """Tokens of the language model one image makes, where the stem decides them (None: the projector does)."""
        return None

    def attach(self, module, projector) -> None:
        """Its modules added to the vision part's ``module``, beside the ``projector`` reading them."""
        for name, child in self.modules().items():  # type: ignore[attr-defined]
            module.add_module(name, child)

    def apply(self, module, pixels) -> None:
        """One forward of ``pixels`` through it and the projector."""
        module.projector(self.run(module, pixels))  # type: ignore[attr-defined]


class CodeStem(PixelStem):
    """A VQ-VAE's encoder path (Chameleon's, Emu3's): each position's code a token of the model's own table. Its
    dataclass states ``embed_dim``, the codes' width."""

    whole: ClassVar[str | None] = "its codes"

    @property
    def features(self) -> int:
        return self.embed_dim  # type: ignore[attr-defined]

    def attach(self, module, projector) -> None:
        """Its encoder, quant_conv, quantizer and post_quant_conv (and Emu3's decoder), as one module."""
        module.vqvae = self.modules()  # type: ignore[attr-defined]

    def apply(self, module, pixels) -> None:
        """Each position's code, a token of the model's own table: no projector's work."""
        self.run(module.vqvae, pixels)  # type: ignore[attr-defined]
