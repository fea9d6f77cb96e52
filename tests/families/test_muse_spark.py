"""MUSE Spark (muse_spark) read whole: its language model (muse_spark_text), MUSE Glimmer's vision tower and adapter, and
its audio tower, by hand and against what transformers builds (tests/hf_whole)."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ffncalc.analysis.count import tally, terms
from ffncalc.analysis.records import expanded
from ffncalc.sources import hf

HERE = Path(__file__).resolve().parents[1] / "hf_whole"
CONFIG = HERE / "configs" / "muse_spark.json"
TRUTH = json.loads((HERE / "truth" / "muse_spark.json").read_text())
PATCHES, WIDTHS, DEPTHS, KERNEL, RATIO = (16, 6, 5, 4), (256, 512, 1024, 2048), (2, 2, 2, 2), 7, 4
TEXT_MODULES = ("model.language_model.", "lm_head.")


def audio_of(model):
    from ffncalc.parts.muse_audio import MuseAudio

    (audio,) = [p for p in model.parts if isinstance(p, MuseAudio)]
    return audio


def recorded(prefixes: tuple[str, ...]) -> int:
    return sum(n for name, n in expanded(TRUTH["params"], 2) if name.startswith(prefixes))


def ours(model, prefix: str) -> int:
    return sum(t.numel * t.stored_count for t in terms(model, 8, partial=True) if t.component.startswith(prefix) and not t.tied)


def test_muse_spark_audio_tower_by_hand():
    """MuseSparkAudioConfig's defaults. Stage i (patch pᵢ, width wᵢ, 2 blocks): the patch embedding Linear(c · pᵢ, wᵢ)
    with a bias (c = 1 sample, then wᵢ₋₁) and its RMSNorm (wᵢ); each block a depthwise Conv1d(wᵢ, wᵢ, 7, groups wᵢ)
    with a bias, an RMSNorm, fc1 wᵢ → 4wᵢ and fc2 back with biases. Then an RMSNorm of 2,048, proj 2,048 → 8,192 with a
    bias and post_proj_norm (8,192)."""
    stages = 0
    for i, (p, w, depth) in enumerate(zip(PATCHES, WIDTHS, DEPTHS)):
        c = 1 if i == 0 else WIDTHS[i - 1]
        block = w * KERNEL + w + w + (w * RATIO * w + RATIO * w) + (RATIO * w * w + w)
        stages += c * p * w + w + w + depth * block
    tower = stages + 2048 + 2048 * 8192 + 8192 + 8192
    assert tower == 117_840_384 == recorded(("model.audio_tower.",))
    _, model = hf.load(CONFIG)
    assert ours(model, "audio.") == tower


def test_muse_spark_audio_flops_a_token_by_hand():
    """A token is 16 · 6 · 5 · 4 = 1,920 samples (80 ms at 24 kHz); stage i runs over a token's ∏ of the later patch
    sizes: 120, 20, 4 and 1 positions. Per position, its patch embedding's c · pᵢ · wᵢ multiply-adds and each block's
    7wᵢ (depthwise) and 2 · 4wᵢ² (the MLP); per token, the projection's 2,048 × 8,192. 2 FLOPs a multiply-add:
    792,928,256 a token, as FlopCounterMode counted get_audio_features (30 s and 10 s)."""
    positions = [120, 20, 4, 1]
    macs = 2048 * 8192
    for i, (n, p, w, depth) in enumerate(zip(positions, PATCHES, WIDTHS, DEPTHS)):
        c = 1 if i == 0 else WIDTHS[i - 1]
        macs += n * (c * p * w + depth * (KERNEL * w + 2 * RATIO * w * w))
    assert 2 * macs == 792_928_256
    _, model = hf.load(CONFIG)
    audio = audio_of(model)
    assert audio.hop == 1920 and audio.flops(1) == 2 * macs
    runs = TRUTH["audio_token_flops"]["runs"]
    assert [r["tokens"] for r in runs] == [375, 125]
    for run in runs:
        assert run["samples"] == 1920 * run["tokens"]
        assert run["total"] == run["tokens"] * 2 * macs == audio.flops(run["tokens"])
    assert replace(audio, seconds=30).request_tokens() == 375 and replace(audio, seconds=0.09).request_tokens() == 2


def test_muse_spark_audio_adds_its_flops_to_a_sequence():
    """10 s of audio in a 1,024-token sequence add FlopCounterMode's 99,116,032,000 FLOPs (125 tokens) to count."""
    import ffncalc

    plain = ffncalc.count(str(CONFIG), seq_len=1024).to_dict()["totals"]["forward_flops"]
    heard = ffncalc.count(str(CONFIG), seq_len=1024, audio_seconds=10).to_dict()["totals"]["forward_flops"]
    run = next(r for r in TRUTH["audio_token_flops"]["runs"] if r["tokens"] == 125)
    assert heard - plain == run["total"] == 99_116_032_000


def test_muse_spark_language_model_by_hand():
    """MuseSparkTextConfig's defaults: a 202,048 × 8,192 table and an untied head; 62 layers, each of q, the output
    gate's gate_proj and o (8,192 × 128 · 64), k and v (16 KV heads of 64), no biases, the weightless q/k norms and
    o_norm; three norms with weights (input_layernorm, pre_feedforward_layernorm, post_feedforward_layernorm; the
    post-attention norm has none) and two residual gates of 8,192; a mixture: the router's 256 × 8,192, pre_expert_proj
    8,192 → 4,096 and its norm, 256 SwiGLU experts of 4,096 over 4,096 (gate_up_proj 2 · 4,096 × 4,096, down_proj), one
    post_expert_norm of 4,096, post_expert_proj back; a final norm of 8,192."""
    d, v, heads, kv, hd, experts, m, f = 8192, 202_048, 128, 16, 64, 256, 4096, 4096
    attention = 3 * d * heads * hd + 2 * d * kv * hd
    mixture = experts * d + d * m + m + experts * 3 * m * f + m + m * d
    layer = attention + mixture + 3 * d + 2 * d
    text = 2 * v * d + 62 * layer + d
    assert text == 819_990_536_192 == recorded(TEXT_MODULES)
    _, model = hf.load(CONFIG)
    vision = 1536 * 3 * 2 * 14 * 14 + 1024 * 1536 + 2 * 1536  # patch embedding, position table, ln_pre
    vision += 50 * (4 * (1536 * 1536 + 1536) + 2 * 1536 * 8960 + 8960 + 1536 + 4 * 1536) + 2 * 1536  # layers, ln_post
    projector = 6144 * 4096 + 4096 * 4096 + 4096 * 8192  # vision_adapter fc1, fc2; vision_projection
    assert tally(model).params == text + vision + projector + 117_840_384 == 822_036_513_792
    assert (
        ours(model, "vision.")
        == vision + projector
        == recorded(("model.vision_tower.", "model.vision_adapter.", "model.vision_projection."))
    )


SMALL_TEXT = {
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "num_hidden_layers": 4,
    "vocab_size": 128,
    "intermediate_size": 96,
    "moe_intermediate_size": 48,
    "moe_hidden_size": 32,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "mlp_layer_types": ["dense", "sparse", "sparse", "dense"],
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
    "layer_rope_theta": [10000.0, 0, 10000.0, 0],
    "sliding_window": 16,
}
SMALL_AUDIO = {"patch_sizes": [4, 3], "hidden_sizes": [16, 24], "depths": [1, 0], "num_hidden_layers": 2, "out_hidden_size": 64}
SMALL_AUDIO |= {"mlp_ratio": 2.5, "conv_kernel_size": 3}


def small(tmp_path) -> Path:
    data = json.loads(CONFIG.read_text())
    data["text_config"] = {**data["text_config"], **SMALL_TEXT}
    data["audio_config"] = {**data["audio_config"], **SMALL_AUDIO}
    data["vision_config"] = {**data["vision_config"], "num_hidden_layers": 2, "layer_types": ["window_attention", "full_attention"]}
    (tmp_path / "config.json").write_text(json.dumps(data))
    return tmp_path / "config.json"


@pytest.mark.torch
def test_a_small_muse_spark_equals_the_class_it_builds(tmp_path):
    """Dense and mixture layers, a narrow space of 32 for experts of 48, an audio tower of two stages (one without
    blocks, an MLP ratio that rounds down: int(16 · 2.5) = 40), equal part by part to the class transformers builds."""
    from ffncalc.analysis.hfwhole import instantiate_whole

    path = small(tmp_path)
    net = instantiate_whole(json.loads(path.read_text()))
    _, model = hf.load(path)
    theirs = {name: p.numel() for name, p in net.named_parameters()}
    assert tally(model).params == sum(theirs.values())
    audio = sum(n for name, n in theirs.items() if name.startswith("model.audio_tower."))
    first = (1 * 4 * 16 + 16 + 16) + (16 * 3 + 16 + 16 + 16 * 40 + 40 + 40 * 16 + 16)  # patch 4 into 16; one block
    second = 16 * 3 * 24 + 24 + 24  # patch 3 of 16 into 24; no block
    assert audio == ours(model, "audio.") == first + second + 24 + 24 * 64 + 64 + 64  # norm, proj, post_proj_norm
    text = sum(n for name, n in theirs.items() if name.startswith(TEXT_MODULES))
    assert text == tally(model).params - ours(model, "audio.") - ours(model, "vision.")


@pytest.mark.torch
def test_the_small_language_model_verifies_against_its_reference(tmp_path):
    """The narrow experts, their norms, the weightless post-attention norm and o_norm, and the residual gates: the
    count's parameters and FLOPs equal the reference modules', component by component."""
    from ffncalc.analysis.verify import verify

    (tmp_path / "text.json").write_text(json.dumps({"model_type": "muse_spark_text", **SMALL_TEXT}))
    label, model = hf.load(tmp_path / "text.json")
    report = verify(model, model=label, seq_len=32)
    assert report.ok, report.failures
    names = {c.component for c in report.checks}
    assert {"ffn.pre_proj.weight", "ffn.pre_norm", "ffn.expert_norm", "ffn.post_proj.weight", "residual_gates"} <= names


def test_residual_gates_and_bare_norm_flops_by_hand(tmp_path):
    """Per token and layer: the residual gates' α ⊙ x and β ⊙ h at each of two adds (4 · 64), the weightless
    post-attention RMSNorm's square, add and scale (3 · 64), o_norm's over each head's output (3 · 4 · 16)."""
    (tmp_path / "text.json").write_text(json.dumps({"model_type": "muse_spark_text", **SMALL_TEXT}))
    _, model = hf.load(tmp_path / "text.json")
    by_name: dict = {}
    for t in terms(model, 32):
        by_name[t.name] = by_name.get(t.name, 0) + t.elementwise
    assert by_name["residual_gates"] == 4 * 4 * 64
    assert by_name["norms.bare"] == 4 * 3 * 64
    assert by_name["attn.o_norm"] == 4 * 3 * 4 * 16
    assert by_name["ffn.expert_norm"] == 2 * 2 * 4 * 32  # two mixture layers, two chosen experts, RMSNorm with a weight


@pytest.mark.parametrize(
    "section, change, words",
    [
        ("audio_config", {"depths": [2, 2, 2]}, "num_hidden_layers"),
        ("audio_config", {"out_hidden_size": 4096}, "out_hidden_size"),
        ("audio_config", {"patch_sizes": [16, 0, 5, 4]}, "patch_sizes"),
        ("text_config", {"mlp_layer_types": ["sparse"] * 3}, "mlp_layer_types"),
        ("text_config", {"num_experts_per_tok": 300}, "num_experts_per_tok"),
    ],
)
def test_muse_spark_shapes_not_read_are_one_line(cli, tmp_path, section, change, words):
    data = json.loads(CONFIG.read_text())
    data[section] = {**data[section], **change}
    (tmp_path / "config.json").write_text(json.dumps(data))
    code, _, err = cli("count", str(tmp_path / "config.json"))
    assert code == 2 and words in err and err.count("\n") == 1, err
