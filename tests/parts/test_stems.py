"""A vision tower from the pixels up (parts/_stem.py: FastViT, DaViT, MobileNetV5, Chameleon's and Emu3's VQ-VAEs) in
place of the patch embedding and layers: one a tower, its patch size its stride, whole outputs a side where it needs
them; a spec that states otherwise is refused naming the field."""

from dataclasses import replace
from pathlib import Path

import pytest

from ffncalc.model.schema import SpecError
from ffncalc.parts.emu3_vqvae import Emu3VqVae
from ffncalc.parts.vision import Vision
from ffncalc.sources import hf

CHAMELEON = Path(__file__).resolve().parents[1] / "hf_whole" / "configs" / "chameleon.json"


def tower():
    model = hf.load(CHAMELEON)[1]
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    return model, vision


def test_chameleon_stem_is_its_vqvae():
    """Chameleon's VQ-VAE (its vq_config's channel_multiplier [1, 1, 2, 2, 4]): 5 levels, a stride-2 downsampling after
    each but the last, 2⁴ = 16 pixels a code; the projector reads its embed_dim of 256."""
    model, vision = tower()
    assert vision.stem is vision.vqvae and vision.stem.stride == 16 == vision.patch_size
    assert vision.width(model) == vision.vqvae.embed_dim == 256


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        ({"emu3_vqvae": Emu3VqVae()}, ("vision", "emu3_vqvae"), "one tower from the pixels: this one states vqvae too"),
        ({"class_token": True}, ("vision", "vqvae"), "a whole tower: no layers, tables or class token, patch_size 16"),
        ({"patch_size": 8}, ("vision", "vqvae"), "patch_size 16"),
        ({"image_size": 520}, ("vision", "image_size"), "520 pixels: its codes are 16 a side"),
    ],
)
def test_a_stem_stated_otherwise_is_refused(change, path, words):
    model, vision = tower()
    with pytest.raises(SpecError) as exc:
        replace(vision, **change).check(model)
    assert exc.value.path == path and words in exc.value.message
