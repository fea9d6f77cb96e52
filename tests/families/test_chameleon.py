"""Chameleon read whole (ChameleonForConditionalGeneration, transformers 5.23): its language model (families/chameleon.py:
Llama's layers with a LayerNorm over each head's queries and keys, swin_norm's norms after the sublayers) and its VQ-VAE
image tokenizer (parts/vqvae.py, towers/vqvae.py), by hand and against the class (tests/hf_whole, scripts/hf_whole.py)."""

import json
from pathlib import Path

import pytest

from ffncalc.analysis.count import tally
from ffncalc.analysis.records import expanded
from ffncalc.parts.vision import Vision
from ffncalc.sources import hf

HERE = Path(__file__).resolve().parents[1] / "hf_whole"
CONFIG = HERE / "configs" / "chameleon.json"


def _truth() -> dict:
    return json.loads((HERE / "truth" / "chameleon.json").read_text())


def _vision(path=CONFIG):
    _, model = hf.load(path)
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    return model, vision


def test_chameleon_whole_by_hand():
    """ChameleonConfig's defaults: 32 layers of width 4,096, 32 heads of 128, SwiGLU of 11,008, vocabulary 65,536
    (embed_tokens and an untied lm_head), q_norm and k_norm LayerNorms of (32, 128) with weights and biases; the
    VQ-VAE's 29,423,616 (tests/parts/test_vqvae.py)."""
    d, f, v, n, heads, hd = 4096, 11008, 65536, 32, 32, 128
    layer = 4 * d * d + 3 * d * f + 2 * d + 2 * (2 * heads * hd)  # q, k, v, o; the MLP; two RMSNorms; q/k LayerNorms
    text = 2 * v * d + n * layer + d
    _, model = hf.load(CONFIG)
    assert tally(model).params == text + 29_423_616 == sum(n for _, n in expanded(_truth()["params"], 2))


def test_chameleon_image_flops_by_hand():
    """One 256-pixel image through ChameleonVQVAE.encode: levels of 256, 128, 64, 32 and 16 positions a side and
    128, 128, 256, 256 and 512 channels, two ResNet blocks each (3 × 3 convolutions, a 1 × 1 shortcut where the channels
    change), a stride-2 3 × 3 downsampling after each level but the last; the middle's two ResNet blocks and attention
    block over 16 × 16 positions (q, k, v, proj_out 1 × 1; q·kᵀ and attention·v over the square); conv_out to 256
    channels, quant_conv 1 × 1, and the distances against 8,192 codes of 256: 16 × 16 = 256 tokens. 2 FLOPs a
    multiply-add; equal to FlopCounterMode's record at that size."""
    sides, widths = [256, 128, 64, 32, 16], [128, 128, 256, 256, 512]
    macs = 256 * 256 * 128 * 3 * 9  # conv_in
    c_in = 128
    for i, (s, c) in enumerate(zip(sides, widths)):
        p = s * s
        macs += p * 9 * c_in * c + p * 9 * c * c + (p * c_in * c if c_in != c else 0)  # the first block
        macs += p * 2 * 9 * c * c  # the second
        c_in = c
        if i < 4:
            macs += sides[i + 1] ** 2 * 9 * c * c  # the downsampling, at the next level's positions
    p, c = 16 * 16, 512
    macs += 2 * p * 2 * 9 * c * c + 4 * p * c * c + 2 * p * p * c  # mid: two blocks, the attention block
    macs += p * 9 * c * 256 + p * 256 * 256 + p * 256 * 8192  # conv_out, quant_conv, the distances
    model, vision = _vision()
    from dataclasses import replace

    runs = {run["size"]: run["total"] for run in _truth()["image_flops"]["runs"]}
    assert replace(vision, image_size=256).per_image(model)[:2] == (256, 2 * macs) == (256, runs[256])
    assert vision.per_image(model)[0] == 1024 and set(runs) == {512, 256}  # its processor's 512 pixels: 32 × 32 codes


def test_chameleon_images_are_tokens_of_the_sequence():
    """An image's 1,024 codes are tokens of the sequence (its prefill's), its VQ-VAE's work once a sequence."""
    import ffncalc

    plain = ffncalc.count(str(CONFIG))
    seen = ffncalc.count(str(CONFIG), images=1, image_size=512)
    assert seen.params == plain.params
    assert "1,024 tokens" in " ".join(seen.notes) and "554,252,107,776" in " ".join(seen.notes)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"num_attention_heads": 5}, "num_attention_heads"),
        ({"vq_config": {"double_latent": True}}, "double_latent"),
        ({"vq_config": {"channel_multiplier": "wide"}}, "channel_multiplier"),
    ],
)
def test_chameleon_shapes_not_read_are_one_line(tmp_path, cli, change, words):
    data = json.loads(CONFIG.read_text())
    for key, value in change.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) else value
    (tmp_path / "config.json").write_text(json.dumps(data))
    code, out, err = cli("count", str(tmp_path / "config.json"))
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1


def test_chameleon_swin_norm_places_its_norms_after_the_sublayers(tmp_path):
    """swin_norm (ChameleonSwinDecoderLayer): input_layernorm on attention's output and post_attention_layernorm on the
    MLP's, each before its residual add: the same parameters, the norms placed after."""
    data = json.loads(CONFIG.read_text())
    (tmp_path / "config.json").write_text(json.dumps({**data, "swin_norm": True}))
    _, pre = hf.load(CONFIG)
    _, post = hf.load(tmp_path / "config.json")
    assert post.norm.placement == "post" and pre.norm.placement == "pre"
    assert tally(post).params == tally(pre).params
