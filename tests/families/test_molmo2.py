"""Molmo 2 read whole (Molmo2ForConditionalGeneration, transformers 5.23's modeling_molmo2.py and
image_processing_molmo2.py): its adapter's parameters, an image's crops and tokens, and one image's FLOPs derived by
hand, against the class's record (tests/hf_whole, scripts/hf_whole.py) and the released Molmo2-4B config."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ffncalc.analysis.count import tally, terms
from ffncalc.analysis.records import expanded
from ffncalc.sources import hf

HERE = Path(__file__).resolve().parents[1] / "hf_whole"
CONFIG = HERE / "configs" / "molmo2.json"
TRUTH = json.loads((HERE / "truth" / "molmo2.json").read_text())


def vision(path=CONFIG):
    from ffncalc.parts.molmo2_vision import Molmo2Vision

    _, model = hf.load(path)
    (part,) = [p for p in model.parts if isinstance(p, Molmo2Vision)]
    return model, part


def test_adapter_parameters_by_hand():
    """Molmo2Adapter at Molmo2AdapterConfig's defaults: image_pooling_2d's q_proj, k_proj and v_proj read two tower
    layers' 1,152 features side by side (2,304) into 16 heads of 72 (1,152) with biases, o_proj 1,152 → 1,152 with a
    bias; image_projector's gate_proj and up_proj 1,152 → 18,944 and down_proj 18,944 → 3,584 (text_hidden_size), no
    biases."""
    pooling = 3 * (2304 * 1152 + 1152) + 1152 * 1152 + 1152
    swiglu = 2 * 1152 * 18944 + 18944 * 3584
    assert (pooling, swiglu) == (9_294_336, 111_542_272)
    recorded = sum(n for name, n in expanded(TRUTH["params"], 2) if name.startswith("model.multi_modal_projector."))
    model, _ = vision()
    ours = sum(t.numel * t.stored_count for t in terms(model, 8, partial=True) if t.component.startswith("vision.projector."))
    assert ours == recorded == pooling + swiglu


def test_whole_parameters_at_the_unrepaired_defaults():
    """The tower (a linear patch embedding of 14² × 3 pixels, 729 positions, 25 SigLIP-form layers), the adapter and
    the language model: the whole class's total at its defaults, its adapter writing 3,584 features."""
    d, f, layers = 1152, 4304, 25
    layer = 4 * (d * d + d) + 2 * 2 * d + (d * f + f) + (f * d + d)
    tower = 588 * d + d + 729 * d + layers * layer
    model, _ = vision()
    recorded = sum(n for name, n in expanded(TRUTH["params"], 2) if name.startswith("model.vision_tower."))
    assert tower == recorded == 382_505_936
    assert tally(model).params == sum(n for _, n in expanded(TRUTH["params"], 2)) == 8_694_602_192


@pytest.mark.parametrize(
    ("size", "tiling", "crops", "tokens"),
    [
        # 378 − 2 × 4 × 14 = 266 pixels against 19-patch (266-pixel) windows: a 1 × 1 tiling scales by exactly 1; the
        # canvas 19 + 8 = 27 patches, ⌈27 / 2⌉² = 196 tokens, and the global crop's 196
        (378, (1, 1), 2, 196 + 196),
        # 644 pixels: no tiling of 8 crops at most covers it (3 × 3 would), so the largest scale, 2 × 2's 532 / 644,
        # first among its ties; the canvas 2 × 19 + 8 = 46 patches a side, 23² = 529 tokens, and the global crop's 196
        (756, (2, 2), 5, 196 + 529),
    ],
)
def test_tokens_per_image_by_hand(size, tiling, crops, tokens):
    """Molmo2ImageProcessor's crops and tokens of one square image, against the record (the processor's own
    image_token_pooling rows and crops)."""
    _, part = vision()
    part = replace(part, image_size=size)
    assert (part.tiling, part.crops, part.tokens) == (tiling, crops, tokens)
    run = next(r for r in TRUTH["image_flops"]["runs"] if r["size"] == size)
    assert (run["crops"], run["tokens"]) == (crops, tokens)


def test_image_flops_by_hand():
    """One 378-pixel image at the repaired defaults (text_hidden_size 4,096): 2 crops of 729 patches through the patch
    embedding (588 → 1,152) and 25 layers (q, k, v, o; the 729² scores and values; fc1 and fc2), then 392 tokens
    through the adapter (q over the window's mean, k and v over its 4 slots, 16 heads × 4 slots × 72 for scores and
    for values, o, gate, up, down to 4,096), 2 FLOPs per multiply-add."""
    p, d, f, n = 729, 1152, 4304, 25
    crop = p * 588 * d + n * (4 * p * d * d + 2 * p * p * d + 2 * p * d * f)
    token = 2304 * d + 2 * 4 * 2304 * d + 2 * 16 * 4 * 72 + d * d + 2 * d * 18944 + 18944 * 4096
    run = next(r for r in TRUTH["image_flops"]["runs"] if r["size"] == 378)
    assert 2 * (2 * crop + 392 * token) == run["total"]
    assert TRUTH["image_flops"]["reduced"] == {"adapter_config": {"text_hidden_size": 4096}}


def test_count_notes_that_the_defaults_forward_refuses_an_image():
    model, part = vision()
    note = part.note(model)
    assert "392 tokens" in note and "writes 3,584 features" in note and "refuses an image" in note


def test_released_molmo2_4b_builds_the_layers_its_adapter_reads():
    """Molmo2-4B's config.json states 27 tower layers under vit_config; its adapter's vit_layers [-3, -9] are layers
    24 and 18, and Molmo2Config builds the 25 up to the deepest: 25 × 15,239,504 parameters of layers."""
    model, part = vision(HERE / "public" / "molmo2-4b.json")
    assert part.depth == 25 and part.projector.width == 2 * 1152 and part.projector.window_pooling.out == 2560
    record = json.loads((HERE / "public_truth" / "molmo2-4b.json").read_text())
    layers = sum(n for name, n in expanded(record["params"], 2) if name.startswith("model.vision_tower.layers."))
    assert layers == 25 * 15_239_504
    assert tally(model).params == sum(n for _, n in expanded(record["params"], 2))


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"adapter_config": {"vision_feature_layer": [30, 18]}}, "vision_feature_layer: [30, 18] must index the tower's 25 layers"),
        ({"vision_config": {"num_position_embeddings": 700}}, "num_position_embeddings: 700 rows where a crop is 729 patches"),
    ],
)
def test_bad_configs_are_one_line(cli, tmp_path, change, words):
    data = json.loads(CONFIG.read_text())
    for key, value in change.items():
        data[key] = {**data[key], **value}
    (tmp_path / "config.json").write_text(json.dumps(data))
    code, out, err = cli("count", str(tmp_path / "config.json"))
    assert code == 2 and words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_an_image_within_the_crops_margins_is_one_line(cli):
    """Molmo2ImageProcessor tiles the image less its crops' margins (2 × 4 patches of 14 pixels): 112 pixels or fewer
    leave nothing to tile."""
    code, _, err = cli("count", str(CONFIG), "--images", "1", "--image-size", "112")
    assert code == 2 and "--image-size 112: 112 pixels: no more than the 112 pixels of a crop's margins" in err
    assert "Traceback" not in err


@pytest.mark.torch
def test_crops_and_tokens_equal_the_processors_at_every_size():
    """Molmo2ImageProcessor.get_image_grid_and_crops (its defaults: max_crops 8, overlap_margins [4, 4], 378 pixels, 2 ×
    2 pooling) against ours for square images from 113 to 3,000 pixels: its pooled grids' tokens and its crops."""
    import importlib

    processor = importlib.import_module("transformers.models.molmo2.image_processing_molmo2").Molmo2ImageProcessor
    _, part = vision()
    for size in range(113, 3001, 7):
        (low_h, low_w, high_h, high_w), crops = processor.get_image_grid_and_crops(processor, size, size)
        ours = replace(part, image_size=size)
        assert (ours.tokens, ours.crops) == (low_h * low_w + high_h * high_w, crops), size
