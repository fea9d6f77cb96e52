"""Cohere Compass counted whole (CohereCompassForConditionalGeneration at its class defaults repaired as
scripts/hf_whole.py records them): Qwen3-VL's class, its tower (CohereCompassVisionModel, Qwen3VLVisionModel's), its
merger and deepstack mergers, and its Cohere 2-built language model, each derived by hand and held against the recorded
class; an image's tokens and FLOPs by hand and against FlopCounterMode's record."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ffncalc.analysis.count import tally, terms
from ffncalc.analysis.records import expanded
from ffncalc.sources import hf

HERE = Path(__file__).resolve().parents[1] / "hf_whole"
CONFIG = HERE / "configs" / "cohere_compass.json"
D, F, OUT = 1152, 4304, 3584  # CohereCompassVisionConfig's width, MLP and out_hidden_size


def truth() -> dict:
    return json.loads((HERE / "truth" / "cohere_compass.json").read_text())


def recorded(prefix: str) -> int:
    return sum(n for name, n in expanded(truth()["params"], 2) if name.startswith(prefix))


def ours(path: Path = CONFIG) -> dict[str, int]:
    """The count's parameters by its components' second name: the tower's (patch_embed, pos_embed, layers, …), the
    projector's, the deepstack mergers'; and the rest, the language model's."""
    out: dict[str, int] = {}
    for t in terms(hf.load(path)[1], 8, partial=True):
        if t.tied or not t.numel:
            continue
        key = t.component.split(".")[1] if t.component.startswith("vision.") else "text"
        key = key if key in ("projector", "deepstack", "text") else "tower"
        out[key] = out.get(key, 0) + t.numel * t.stored_count
    return out


def test_repair_is_the_released_models():
    """CohereCompassTextConfig's rope_parameters default to {}, which its rotary embedding indexes by layer type:
    recorded at the released North Micro Vision's null entry for full_attention (no rotary positions there)."""
    assert truth()["repaired"] == {"text_config": {"rope_parameters": {"full_attention": None}}}


def test_projector_and_deepstack_mergers_by_hand():
    """Qwen3VLVisionPatchMerger: the merger's norm, a LayerNorm of the width before the 2 × 2 shuffle (2 × 1,152),
    linear_fc1 (4 × 1,152 → 4 × 1,152) and linear_fc2 (4,608 → out_hidden_size 3,584), with biases: 37,759,232; each of
    the three deepstack mergers (deepstack_visual_indexes 8, 16, 24) the same with its LayerNorm after the shuffle
    (2 × 4,608): 37,766,144. Equal to the class's model.visual.merger and deepstack_merger_list."""
    w = 4 * D
    linears = w * w + w + w * OUT + OUT
    merger, deep = 2 * D + linears, 2 * w + linears
    assert (merger, deep) == (37_759_232, 37_766_144)
    assert recorded("model.visual.merger.") == merger
    assert recorded("model.visual.deepstack_merger_list.") == 3 * deep
    counted = ours()
    assert counted["projector"] == merger and counted["deepstack"] == 3 * deep


def test_tower_and_language_model_by_hand():
    """The tower: a Conv3d patch embedding of 2 frames × 3 × 16² pixels with a bias, a table of 2,304 rows, 27 layers
    (two LayerNorms, a fused qkv and proj with biases, linear_fc1 and linear_fc2 of 4,304 with biases): 415,891,440. The
    language model (Cohere 2's): a 256,000 × 8,192 table, 40 layers of q, k, v, o (8,192², no biases), a SwiGLU of
    22,528 and one LayerNorm without a bias (attention and MLP in parallel), a final LayerNorm; its head untied by the
    wrapper's tie_word_embeddings (false): 37,077,983,232. In all, 37,644,932,336: the class's."""
    layer = 2 * 2 * D + (D * 3 * D + 3 * D) + (D * D + D) + (D * F + F) + (F * D + D)
    tower = 2 * 3 * 16 * 16 * D + D + 2304 * D + 27 * layer
    t = 8192
    text = 2 * 256_000 * t + 40 * (4 * t * t + 3 * t * 22_528 + t) + t
    assert (tower, text) == (415_891_440, 37_077_983_232)
    assert recorded("model.visual.") - recorded("model.visual.merger.") - recorded("model.visual.deepstack_merger_list.") == tower
    assert recorded("model.language_model.") + recorded("lm_head.") == text
    counted = ours()
    assert counted["tower"] == tower and counted["text"] == text
    assert tally(hf.load(CONFIG)[1]).params == recorded("") == 37_644_932_336


def test_image_tokens_by_hand():
    """An S-pixel image is g = S / 16 patches a side and (g / 2)² tokens (2 × 2 patches a token): 196 at 448 pixels, 64 at
    256."""
    from ffncalc.parts.vision import Vision

    (vision,) = [p for p in hf.load(CONFIG)[1].parts if isinstance(p, Vision)]
    assert [replace(vision, image_size=s).tokens for s in (448, 256)] == [196, 64]


def test_image_flops_by_hand(tmp_path):
    """One image with the tower small (the record's reduced: width 64, 4 layers, MLP 128, out 64, deepstack mergers at
    layers 1 and 2), by hand and equal to FlopCounterMode's record and to the count: g² patches through the patch
    embedding (2 × 3 × 16² → 64) and each layer's qkv, proj and MLP, every patch meeting every patch; the merger and two
    deepstack mergers (256 → 256 → 64) over the g² / 4 tokens. 2 FLOPs a multiply-add."""
    from ffncalc.parts.vision import Vision

    record = truth()["image_flops"]
    d = 64

    def image(g: int) -> int:
        n = g * g
        layers = 4 * (n * (4 * d * d + 2 * d * 128) + 2 * n * n * d)
        return 2 * (n * 1536 * d + layers + 3 * (n // 4) * (4 * d * 4 * d + 4 * d * 64))

    assert [(r["size"], r["total"]) for r in record["runs"]] == [(448, image(28)), (256, image(16))]
    assert image(28) == 1_085_407_232
    data = json.loads(CONFIG.read_text())
    data = {**data, **{key: {**data[key], **value} for key, value in record["reduced"].items()}}
    (tmp_path / "config.json").write_text(json.dumps(data))
    (vision,) = [p for p in hf.load(tmp_path / "config.json")[1].parts if isinstance(p, Vision)]
    assert [replace(vision, image_size=s).per_image(hf.load(tmp_path / "config.json")[1])[:2] for s in (448, 256)] == [
        (196, image(28)),
        (64, image(16)),
    ]


@pytest.mark.torch
def test_a_sparse_config_counts_as_transformers_builds_it(tmp_path):
    """A config stating a few keys of each sub-config (the rest CohereCompassVisionConfig's and
    CohereCompassTextConfig's defaults): equal to the class it builds."""
    from ffncalc.analysis.hfwhole import instantiate_whole

    text = {"rope_parameters": {"full_attention": None}, "num_hidden_layers": 2, "hidden_size": 2048, "num_attention_heads": 16}
    data = {"model_type": "cohere_compass", "text_config": text}
    data["vision_config"] = {"depth": 3, "deepstack_visual_indexes": [1], "out_hidden_size": 2048}
    (tmp_path / "config.json").write_text(json.dumps(data))
    assert tally(hf.load(tmp_path / "config.json")[1]).params == sum(p.numel() for p in instantiate_whole(data).parameters())
