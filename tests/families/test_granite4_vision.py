"""Granite 4 Vision counted whole (Granite4VisionForConditionalGeneration at its class defaults repaired as
scripts/hf_whole.py records them): its CLIP tower, its eight Window Q-Former downsamplers (four layerwise, four spatial)
and image_newline, and its Granite language model, each derived by hand and held against the recorded class; one
crop's tokens and FLOPs by hand and against FlopCounterMode's record."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ffncalc.analysis.count import tally, terms
from ffncalc.analysis.records import expanded
from ffncalc.sources import hf

HERE = Path(__file__).resolve().parents[1] / "hf_whole"
CONFIG = HERE / "configs" / "granite4_vision.json"
D, F, T = 768, 3072, 4096  # the tower's width and MLP, the text width


def truth() -> dict:
    return json.loads((HERE / "truth" / "granite4_vision.json").read_text())


def recorded(prefix: str) -> int:
    return sum(n for name, n in expanded(truth()["params"], 2) if name.startswith(prefix))


def window_qformer() -> int:
    """One Granite4VisionWindowQFormerDownsampler at downsample_rate "4/8": norm (LayerNorm of 768), query (4² rows),
    image_positions (8² rows), the Blip2QFormerModel's layernorm and its one layer (attention and cross-attention: query,
    key, value and output dense with biases, each followed by a LayerNorm; intermediate_query 768 → 3,072 and
    output_query 3,072 → 768 with biases and a LayerNorm), out_linear 768 → 4,096 with a bias."""
    attention = 4 * (D * D + D) + 2 * D
    mlp = D * F + F + F * D + D + 2 * D
    return 2 * D + 16 * D + 64 * D + 2 * D + 2 * attention + mlp + (D * T + T)


def model(tmp_path=None, **changes):
    data = json.loads(CONFIG.read_text())
    if not changes:
        return hf.load(CONFIG)[1]
    for key, value in changes.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) else value
    (tmp_path / "config.json").write_text(json.dumps(data))
    return hf.load(tmp_path / "config.json")[1]


def test_repair_is_the_released_models():
    """Granite4VisionConfig's downsample_rate and deepstack_layer_map default to None (transformers builds no class):
    recorded at the released Granite Vision 4.1's "4/8" and four pairs."""
    assert truth()["repaired"] == {"downsample_rate": "4/8", "deepstack_layer_map": [[-19, 9], [-13, 6], [-7, 3], [-1, 0]]}


def test_every_sub_config_is_read():
    """Its qformer_config is read (each Window Q-Former's): the count names no sub-config as not counted."""
    assert not any("not counted" in n for n in model().notes)


def test_projectors_by_hand():
    """Each of the eight Window Q-Formers 12,666,112 parameters, by hand; the four layerwise and four spatial equal to
    the class's; the four spatial ones are the projector (with image_newline, 4,096), the four layerwise its deepstack."""
    one = window_qformer()
    assert one == 12_666_112
    assert recorded("model.layerwise_projectors.") == recorded("model.spatial_projectors.") == 4 * one
    m = model()
    mine: dict[str, int] = {}
    for t in terms(m, 8, partial=True):
        if t.component.startswith("vision.") and t.numel:
            key = t.component.split(".")[1]
            mine[key] = mine.get(key, 0) + t.numel * t.stored_count
    assert mine["projector"] == 4 * one and mine["deepstack"] == 4 * one and mine["image_newline"] == T


def test_tower_and_language_model_by_hand():
    """CLIPVisionConfig's defaults: a 32-pixel patch convolution without a bias (3 × 32² → 768), a class token, 7² + 1
    positions, pre_layrnorm, 12 layers (two LayerNorms, q, k, v, o with biases, an MLP of 3,072 with biases),
    post_layernorm: 87,456,000. Granite4VisionTextConfig's (Granite's): a 32,000 × 4,096 table, 32 layers of q, k, v, o
    (4,096², no biases), a SwiGLU of 11,008 and two RMSNorms, a final RMSNorm, an untied head: 6,738,415,616. In all
    with the eight projectors and the newline row, 6,927,204,608: the class's."""
    layer = 4 * (D * D + D) + 2 * 2 * D + D * F + F + F * D + D
    tower = 3 * 32 * 32 * D + D + 50 * D + 2 * D + 12 * layer + 2 * D
    text = 2 * 32_000 * T + 32 * (4 * T * T + 3 * T * 11_008 + 2 * T) + T
    assert (tower, text) == (87_456_000, 6_738_415_616)
    assert recorded("model.vision_tower.") == tower
    assert recorded("model.language_model.") + recorded("lm_head.") == text
    total = tower + text + 8 * window_qformer() + T
    assert tally(model()).params == total == 6_927_204_608 == recorded("")


def crop_flops(g: int, layers: int) -> int:
    """One crop of g × g patches of 32 pixels through a CLIP tower of ``layers`` layers (g² + 1 positions, every one
    meeting every one) and the eight Window Q-Formers: (g / 8)² windows of 8² patches, 16 queries each (g² / 4 in all),
    each query meeting its window's 16 queries and 64 patches; keys and values of the cross-attention over every patch;
    out_linear over every query. 2 FLOPs a multiply-add."""
    n, w, q = g * g + 1, (g // 8) ** 2, g * g // 4
    tower = g * g * D * 3 * 32 * 32 + layers * (n * (4 * D * D + 2 * D * F) + 2 * n * n * D)
    qformer = 4 * q * D * D + 2 * q * 16 * D + 2 * q * D * D + 2 * w * 64 * D * D + 2 * q * 64 * D + 2 * q * D * F
    return 2 * (tower + 8 * (qformer + q * D * T))


def test_image_tokens_by_hand():
    """An S-pixel crop is g = S / 32 patches a side, (g / 8)² windows of 4² queries: g² / 4 tokens (16 at 256 pixels,
    64 at 512); its default 224 pixels (7 patches a side) make no whole window, refused in one line."""
    from ffncalc.parts.vision import Vision

    (vision,) = [p for p in model().parts if isinstance(p, Vision)]
    assert [replace(vision, image_size=s).tokens for s in (256, 512, 1024)] == [16, 64, 256]


def test_image_flops_by_hand():
    """One crop's FLOPs with the tower at the record's 27 layers (so the released map's layer -19 is one of its hidden
    states), by hand and equal to FlopCounterMode's record at 256 and 512 pixels and to the count."""
    from ffncalc.parts.vision import Vision

    record = truth()["image_flops"]
    assert record["reduced"] == {"vision_config": {"num_hidden_layers": 27}}
    assert [(r["size"], r["total"]) for r in record["runs"]] == [(256, crop_flops(8, 27)), (512, crop_flops(16, 27))]
    assert crop_flops(8, 27) == 29_654_467_584
    (vision,) = [p for p in model().parts if isinstance(p, Vision)]
    assert replace(vision, image_size=512).per_image(model())[:2] == (64, crop_flops(16, 12))


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"downsample_rate": None}, "downsample_rate: none stated"),
        ({"downsample_rate": "8/4"}, "downsample_rate: '8/4'"),
        ({"deepstack_layer_map": None}, "deepstack_layer_map: None"),
        ({"vision_feature_select_strategy": "full"}, "vision_feature_select_strategy: 'full'"),
    ],
)
def test_configs_not_read_are_one_line(cli, tmp_path, changes, words):
    """What transformers cannot build or run (no downsample_rate or deepstack_layer_map; a query side larger than its
    window; the class token read where the Window Q-Former reads a square grid of patches): one line, exit 2."""
    data = {**json.loads(CONFIG.read_text()), **changes}
    (tmp_path / "config.json").write_text(json.dumps(data))
    code, _, err = cli("count", str(tmp_path / "config.json"))
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err


def test_image_of_no_whole_window_is_one_line(cli):
    """Its default 224 pixels: 7 patches a side, no whole 8 × 8 window (Granite4VisionWindowQFormerDownsampler's
    windows cannot be cut): one line naming the size, exit 2."""
    code, _, err = cli("count", str(CONFIG), "--images", "1")
    assert code == 2 and "7 patches a side are not whole 8 × 8 tiles" in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.torch
@pytest.mark.parametrize(
    "data",
    [
        # the repaired keys alone: Granite4VisionConfig's CLIP tower and one-layer Q-Former (its init_kwargs)
        {"downsample_rate": "4/8", "deepstack_layer_map": [[-19, 9], [-13, 6], [-7, 3], [-1, 0]]},
        # a Q-Former of its own (Blip2QFormerConfig's defaults for the rest), 2 × 2 queries a window of 4 × 4
        {
            "downsample_rate": "2/4",
            "deepstack_layer_map": [[-2, 1]],
            "qformer_config": {"num_hidden_layers": 2, "intermediate_size": 1000},
        },
        # the released form: a SigLIP tower (no class token, "full"), a narrower language model
        {
            "downsample_rate": "4/8",
            "deepstack_layer_map": [[-1, 0], [-2, 1]],
            "vision_feature_select_strategy": "full",
            "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152, "intermediate_size": 4304}
            | {"num_attention_heads": 16, "num_hidden_layers": 3, "patch_size": 16, "image_size": 384},
            "text_config": {"hidden_size": 2560, "num_hidden_layers": 2},
        },
    ],
)
def test_sparse_configs_count_as_transformers_builds_them(tmp_path, data):
    """Configs that state a few keys: every other as Granite4VisionConfig fills it, equal to the class it builds."""
    from ffncalc.analysis.hfwhole import instantiate_whole

    data = {"model_type": "granite4_vision", **data}
    (tmp_path / "config.json").write_text(json.dumps(data))
    assert tally(hf.load(tmp_path / "config.json")[1]).params == sum(p.numel() for p in instantiate_whole(data).parameters())
