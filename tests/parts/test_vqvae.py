"""Chameleon's VQ-VAE image tokenizer counted per component: a hand derivation from its vq_config's shapes, and the
recorded transformers truth (tests/hf_whole/truth/chameleon.json, ChameleonForConditionalGeneration built on the meta
device) summed under each component's module path."""

import json
from pathlib import Path

from ffncalc.analysis.records import expanded
from ffncalc.parts.vqvae import chameleon_vqvae_params

ROOT = Path(__file__).resolve().parents[2] / "tests" / "hf_whole"


def _vq() -> dict:
    return json.loads((ROOT / "configs" / "chameleon.json").read_text())["vq_config"]


def test_chameleon_vqvae_by_hand():
    """base 128, channel_multiplier (1, 1, 2, 2, 4), 2 ResNet blocks a level, no attn_resolutions, latent and embed
    256, 8192 codes, 3 input channels."""

    def res(i, o):  # GroupNorm, 3×3 conv, GroupNorm, 3×3 conv, 1×1 shortcut where the channels change
        return 2 * i + 9 * i * o + o + 2 * o + 9 * o * o + o + (i * o + o if i != o else 0)

    down = (
        2 * res(128, 128) + (9 * 128 * 128 + 128)  # level 0, its downsample
        + 2 * res(128, 128) + (9 * 128 * 128 + 128)  # level 1
        + res(128, 256) + res(256, 256) + (9 * 256 * 256 + 256)  # level 2
        + 2 * res(256, 256) + (9 * 256 * 256 + 256)  # level 3
        + res(256, 512) + res(512, 512)  # level 4: no downsample
    )  # fmt: skip
    mid = 2 * res(512, 512) + 2 * 512 + 4 * (512 * 512 + 512)
    want = {
        "encoder.conv_in": 9 * 3 * 128 + 128,
        "encoder.down": down,
        "encoder.mid": mid,
        "encoder.norm_out": 2 * 512,
        "encoder.conv_out": 9 * 512 * 256 + 256,
        "quantize.embedding": 8192 * 256,
        "quant_conv": 256 * 256 + 256,
        "post_quant_conv": 256 * 256 + 256,
    }
    assert chameleon_vqvae_params(_vq()) == want
    assert sum(want.values()) == 29_423_616


def test_chameleon_vqvae_against_transformers():
    record = json.loads((ROOT / "truth" / "chameleon.json").read_text())
    got = chameleon_vqvae_params(_vq())
    built: dict[str, int] = {}
    for name, n in expanded(record["params"], 2):
        if name.startswith("model.vqmodel."):
            path = name.removeprefix("model.vqmodel.")
            key = next(k for k in got if path.startswith(k + "."))
            built[key] = built.get(key, 0) + n
    assert built == got
