"""Florence-2 (florence2) read whole: its DaViT tower and projector before BART's encoder, by hand and against what
transformers builds (tests/hf_whole)."""

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from ffncalc.analysis.count import terms
from ffncalc.analysis.records import expanded
from ffncalc.sources import hf

HERE = Path(__file__).resolve().parents[1] / "hf_whole"
TRUTH = json.loads((HERE / "truth" / "florence2.json").read_text())
WIDTHS, DEPTHS, GROUPS = (128, 256, 512, 1024), (1, 1, 9, 1), (4, 8, 16, 32)


def vision_of(model):
    from ffncalc.parts.vision import Vision

    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    return vision


def test_florence2_by_hand():
    """Florence2Config's defaults. The tower: stage i's embedding convolution (3 → 128 over 7 × 7; then wᵢ₋₁ → wᵢ over
    3 × 3) with a bias and a LayerNorm (over its output in the first stage, its input in the others); then depthᵢ
    pairs of a spatial and a channel block, each two depthwise 3 × 3 convolutions with biases, two LayerNorms, qkv and
    proj with biases and an MLP of 4w with biases. The projector: row and column tables of 50 rows of 512, the
    projection 1,024 → 1,024 without a bias and a LayerNorm. The language model is BART's (recorded as transformers
    built it)."""
    params, cin = 0, 3
    for i, (w, n) in enumerate(zip(WIDTHS, DEPTHS)):
        k = 7 if i == 0 else 3
        params += w * cin * k * k + w + 2 * (w if i == 0 else cin)
        block = 2 * (9 * w + w) + 2 * 2 * w + (3 * w * w + 3 * w) + (w * w + w) + (4 * w * w + 4 * w) + (4 * w * w + w)
        params += n * 2 * block
        cin = w
    projector = 2 * 50 * 512 + 1024 * 1024 + 2 * 1024
    assert (params, projector) == (90_368_000, 1_101_824)
    recorded = sum(n for _, n in expanded(TRUTH["params"], 2))
    assert recorded == params + projector + 406_291_456  # BART's encoder, decoder, tables and tied head
    _, model = hf.load(HERE / "configs" / "florence2.json")
    counted = [t for t in terms(model, 8, partial=True) if not t.tied]
    assert sum(t.numel * t.stored_count for t in counted) == recorded
    tower = sum(t.numel * t.stored_count for t in counted if t.component.startswith("vision.stage"))
    assert tower == params


def macs(size: int) -> int:
    """One image's multiply-adds by hand: each stage's embedding convolution over its output positions; each block
    pair's four depthwise convolutions (9 a channel and position), the spatial block's qkv and proj over the grid
    padded to whole 12 × 12 windows and its attention within each window (144² pairs, scores and values, the width's
    features), the channel block's qkv and proj over the positions and its attention between each group's channels
    (w² / groups pairs, scores and values, over every position), two MLPs of 4w; then 1 + positions tokens through the
    projection."""
    total, side, cin = 0, size, 3
    for i, (w, n, g) in enumerate(zip(WIDTHS, DEPTHS, GROUPS)):
        k, s, pad = (7, 4, 3) if i == 0 else (3, 2, 1)
        side = (side + 2 * pad - k) // s + 1
        p = side * side
        total += p * w * cin * k * k
        windows = -(-side // 12)
        spatial = 4 * w * w * (12 * windows) ** 2 + 2 * windows**2 * 144**2 * w
        channel = 4 * w * w * p + 2 * (w * w // g) * p
        total += n * (4 * 9 * w * p + spatial + channel + 2 * 8 * w * w * p)
        cin = w
    return total + (1 + side * side) * 1024 * 1024


def test_florence2_image_flops_by_hand():
    """768 pixels: 192, 96, 48 and 24 positions a side, every window whole, 577 tokens; 512 pixels: 128, 64, 32 and 16,
    the grid padded to 132, 72, 36 and 24 for the window attention's qkv and proj, 257 tokens. Equal to FlopCounterMode's
    count over Florence2Model.get_image_features (2 FLOPs a multiply-add)."""
    _, model = hf.load(HERE / "configs" / "florence2.json")
    vision = vision_of(model)
    runs = {r["size"]: r["total"] for r in TRUTH["image_flops"]["runs"]}
    assert {768: 2 * macs(768), 512: 2 * macs(512)} == runs == {768: 380_985_933_824, 512: 179_000_967_168}
    for size, tokens in ((768, 577), (512, 257)):
        assert replace(vision, image_size=size).per_image(model)[:2] == (tokens, 2 * macs(size))


@pytest.mark.torch
def test_florence2_reference_tower_runs_an_image_to_the_counted_flops():
    """The reference DaViT, its tables and mean and the projector run a 384-pixel image (96 to 12 positions a side:
    windows of 12 whole, 145 tokens) through FlopCounterMode to the count's FLOPs, component by component (verify; the
    image placed by hand, as --images does not place an encoder's source yet)."""
    from ffncalc.analysis.verify import verify
    from ffncalc.parts.vision import Vision

    _, stack = hf.load(HERE / "configs" / "florence2.json")
    parts = tuple(replace(p, images=1, image_size=384, source=False) if isinstance(p, Vision) else p for p in stack.parts)
    small = replace(stack, parts=parts)
    report = verify(small, model="florence2", seq_len=16)
    assert report.ok, report.failures
    flops = {c.component: c.torch_flops for c in report.checks}
    assert flops["vision.stage3.channel.attn.scores"] == 2 * (1024 * 1024 // 32) * 12 * 12
    assert flops["vision.stage0.spatial.attn.scores"] == 2 * 8 * 8 * 144**2 * 128


def test_florence2_images_and_shapes_not_read_are_one_line(tmp_path):
    """Its images take the places of image tokens in the encoder's source, which --images does not place yet; a
    projection_dim other than the encoder's width cannot replace its token embeddings."""
    from ffncalc import api
    from ffncalc.errors import InputError

    with pytest.raises(InputError, match=re.escape("its images enter the encoder's source, which --images does not place")):
        api.count(str(HERE / "configs" / "florence2.json"), images=1)
    data = json.loads((HERE / "configs" / "florence2.json").read_text())
    data["vision_config"]["projection_dim"] = 768
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match=re.escape("projection_dim: 768 features where the encoder's tokens are d_model 1024")):
        hf.load(tmp_path / "config.json")


def test_florence2_stage_lists_of_another_length_are_one_line(tmp_path):
    from ffncalc.errors import InputError

    data = json.loads((HERE / "configs" / "florence2.json").read_text())
    data["vision_config"]["num_heads"] = [4, 8, 16]
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match=re.escape("num_heads: 3 entries where embed_dim names 4 stages")):
        hf.load(tmp_path / "config.json")
