"""Chameleon and Emu3 read whole (ChameleonForConditionalGeneration, Emu3ForConditionalGeneration, transformers 5.23):
Chameleon's language model (families/chameleon.py: Llama's layers with a LayerNorm over each head's queries and keys,
swin_norm's norms after the sublayers), and their VQ-VAE image tokenizers (parts/vqvae.py, parts/emu3_vqvae.py,
towers/vqvae.py), by hand and against the classes (tests/hf_whole, scripts/hf_whole.py)."""

import json
from pathlib import Path

import pytest

from ffncalc.analysis.count import tally
from ffncalc.analysis.records import expanded
from ffncalc.parts.vision import Vision
from ffncalc.sources import hf

HERE = Path(__file__).resolve().parents[1] / "hf_whole"
CONFIG = HERE / "configs" / "chameleon.json"


def _truth(model_type: str = "chameleon") -> dict:
    return json.loads((HERE / "truth" / f"{model_type}.json").read_text())


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


EMU3 = HERE / "configs" / "emu3.json"


def test_emu3_whole_and_its_image_tokens():
    """Emu3Config's defaults: its language model (tests/families/test_whole_models.py) and the VQ-VAE's 270,740,287
    parameters (the decoder's 161,120,859 among them) are the class's; a 512-pixel image is 64 rows of 64 codes and a
    row-end token each (Emu3Processor: height · (width + 1))."""
    model, vision = _vision(EMU3)
    built = dict(expanded(_truth("emu3")["params"], 2))
    assert tally(model).params == sum(built.values())
    assert sum(n for name, n in built.items() if name.startswith("model.vqmodel.")) == 270_740_287
    assert vision.per_image(model)[0] == 64 * 65


def test_emu3_image_flops_by_hand():
    """One 256-pixel image through Emu3VQVAE.encode, repeated as 4 frames: each frame through conv_in, levels of 256,
    128, 64 and 32 positions a side and 256, 512, 512 and 1,024 channels (two ResNet blocks each, a 1 × 1 shortcut where
    the channels change, a stride-2 downsampling after each level but the last), at the last level an attention block
    after each ResNet block (q, k, v and out_proj Linear(1,024) a position, q·kᵀ and attention·v over the 1,024
    positions, one head), the middle's two ResNet blocks and attention block, conv_out to 4 channels; then over the
    frames two 4 × 3 × 3 temporal downsamplings (4 frames to 2, 2 to 1), two temporal ResNet blocks of 3 × 3 × 3
    convolutions over the last frame, quant_conv (3 × 1 × 1, 4 to 4), and the distances against 32,768 codes of 4.
    2 FLOPs a multiply-add; the decoder does no work; equal to FlopCounterMode's record at that size."""
    sides, widths, frames = [256, 128, 64, 32], [256, 512, 512, 1024], 4
    macs = 256 * 256 * 256 * 3 * 9  # conv_in, a frame
    c_in = 256
    for i, (s, c) in enumerate(zip(sides, widths)):
        p = s * s
        macs += p * 9 * c_in * c + p * 9 * c * c + (p * c_in * c if c_in != c else 0)  # the first block
        macs += p * 2 * 9 * c * c  # the second
        c_in = c
        if i == 3:  # an attention block after each block
            macs += 2 * (4 * p * c * c + 2 * p * p * c)
        else:
            macs += sides[i + 1] ** 2 * 9 * c * c  # the downsampling
    p, c = 32 * 32, 1024
    macs += 2 * p * 2 * 9 * c * c + 4 * p * c * c + 2 * p * p * c  # the middle
    macs += p * 9 * c * 4  # conv_out
    macs *= frames
    macs += (2 + 1) * p * 4 * 4 * 36  # the temporal downsamplings: 2 frames out, then 1
    macs += 2 * 2 * p * 4 * 4 * 27 + p * 4 * 4 * 3 + p * 4 * 32768  # temporal blocks, quant_conv, the distances
    model, vision = _vision(EMU3)
    from dataclasses import replace

    runs = {run["size"]: run["total"] for run in _truth("emu3")["image_flops"]["runs"]}
    assert replace(vision, image_size=256).per_image(model)[1] == 2 * macs == runs[256]
    assert set(runs) == {512, 256}
    decoder = [t for _, t in vision.image_terms(model) if ".decoder." in t.name or "post_quant" in t.name]
    assert decoder and not any(t.macs or t.elementwise for t in decoder)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"temporal_downsample_factor": 3}, "temporal_downsample_factor"),
        ({"hidden_size": 512}, "hidden_size"),
        ({"attn_resolutions": [7]}, "attn_resolutions"),
    ],
)
def test_emu3_vqvae_shapes_not_read_are_one_line(tmp_path, cli, change, words):
    data = json.loads(EMU3.read_text())
    data["vq_config"] = {**data["vq_config"], **change}
    (tmp_path / "config.json").write_text(json.dumps(data))
    code, out, err = cli("count", str(tmp_path / "config.json"))
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1
