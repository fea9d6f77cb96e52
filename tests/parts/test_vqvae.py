"""Chameleon's VQ-VAE image tokenizer counted per component: a hand derivation from its vq_config's shapes, and the
recorded transformers truth (tests/hf_whole/truth/chameleon.json, ChameleonForConditionalGeneration built on the meta
device) summed under each component's module path."""

import json
from pathlib import Path

import pytest

from ffncalc.analysis.records import expanded
from ffncalc.parts.vqvae import chameleon_vqvae_params, emu3_vqvae_params

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


@pytest.mark.parametrize(("model_type", "count"), [("chameleon", chameleon_vqvae_params), ("emu3", emu3_vqvae_params)])
def test_vqvae_against_transformers(model_type, count):
    record = json.loads((ROOT / "truth" / f"{model_type}.json").read_text())
    got = count(json.loads((ROOT / "configs" / f"{model_type}.json").read_text())["vq_config"])
    built: dict[str, int] = {}
    for name, n in expanded(record["params"], 2):
        if name.startswith("model.vqmodel."):
            path = name.removeprefix("model.vqmodel.")
            key = next(k for k in got if path.startswith(k + "."))
            built[key] = built.get(key, 0) + n
    assert built == got


def test_emu3_vqvae_by_hand():
    """base 256, channel_multiplier (1, 2, 2, 4), 2 ResNet blocks a level, attention (hidden_size 1024) at level 3,
    latent and embed 4, 32768 codes, temporal_downsample_factor 4 (two temporal convolutions), 3 channels in and out."""
    vq = json.loads((ROOT / "configs" / "emu3.json").read_text())["vq_config"]

    def res(i, o, q=0):  # two norms (GroupNorm, or a SpatialNorm from q channels), two 3×3 convs, a 1×1 shortcut
        norms = 2 * i + 2 * o + (2 * (q * i + i) + 2 * (q * o + o) if q else 0)
        return norms + 9 * i * o + o + 9 * o * o + o + (i * o + o if i != o else 0)

    attn = 4 * (1024 * 1024 + 1024)  # q, k, v, out_proj
    sn = 2 * 1024 + 2 * (4 * 1024 + 1024)  # a SpatialNorm of 1024 from 4 channels
    down = (
        2 * res(256, 256) + (9 * 256 * 256 + 256)
        + res(256, 512) + res(512, 512) + (9 * 512 * 512 + 512)
        + 2 * res(512, 512) + (9 * 512 * 512 + 512)
        + res(512, 1024) + res(1024, 1024) + 2 * (attn + 2 * 1024)
    )  # fmt: skip
    up = (
        3 * res(1024, 1024, 4) + 3 * (attn + sn) + (9 * 1024 * 1024 + 1024)  # level 3
        + res(1024, 512, 4) + 2 * res(512, 512, 4) + (9 * 512 * 512 + 512)  # level 2
        + 3 * res(512, 512, 4) + (9 * 512 * 512 + 512)  # level 1
        + res(512, 256, 4) + 2 * res(256, 256, 4)  # level 0: no upsample
    )  # fmt: skip
    temporal_res = 2 * 2 * (2 * 4 + 27 * 4 * 4 + 4)  # two blocks of two BatchNorm3d and 3×3×3 Conv3d(4, 4)
    want = {
        "encoder.conv_in": 9 * 3 * 256 + 256,
        "encoder.down_block": down,
        "encoder.middle_block": 2 * res(1024, 1024) + attn + 2 * 1024,
        "encoder.norm_out": 2 * 1024,
        "encoder.conv_out": 9 * 1024 * 4 + 4,
        "encoder.time_conv": 2 * (4 * 3 * 3 * 4 * 4 + 4),
        "encoder.time_res_stack": temporal_res,
        "decoder.time_res_stack": temporal_res,
        "decoder.time_conv": 2 * (27 * 4 * 4 + 4),
        "decoder.conv_in": 9 * 4 * 1024 + 1024,
        "decoder.middle_block": 2 * res(1024, 1024, 4) + attn + sn,
        "decoder.up_block": up,
        "decoder.norm_out": 2 * 256 + 2 * (4 * 256 + 256),
        "decoder.conv_out": 9 * 256 * 3 + 3,
        "quantize": 32768 * 4,
        "quant_conv": 3 * 4 * 4 + 4,
        "post_quant_conv": 3 * 4 * 4 + 4,
    }
    assert emu3_vqvae_params(vq) == want
    assert sum(want.values()) == 270_740_287
