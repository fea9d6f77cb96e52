"""DiffusionGemma counted whole (DiffusionGemmaForBlockDiffusion at its class defaults repaired as scripts/hf_whole.py
records them): its encoder's language model (diffusion_gemma_text), Gemma 4's tower, and the decoder's self-conditioning,
with the decoder's layers, norm and table tied to the encoder's by the wrapper's tie_word_embeddings, by hand and
against transformers."""

import json
from pathlib import Path

import pytest

from ffncalc.analysis.count import tally, terms
from ffncalc.analysis.records import expanded
from ffncalc.parts.block_diffusion import BlockDiffusion
from ffncalc.sources import hf
from ffncalc.sources.hf import coverage

HERE = Path(__file__).resolve().parents[1] / "hf_whole"
CONFIG = HERE / "configs" / "diffusion_gemma.json"

# DiffusionGemmaTextConfig's defaults (configuration_diffusion_gemma.py) and the recorded repair's mixture
H, F, V, L, HEADS, KV, D, GLOBAL_D, E, M = 2304, 9216, 262_144, 30, 8, 4, 256, 512, 128, 704


def truth() -> dict:
    return json.loads((HERE / "truth" / "diffusion_gemma.json").read_text())


def layer(global_: bool) -> int:
    """One DiffusionGemmaEncoderTextLayer (modeling_diffusion_gemma.py): q_proj, k_proj, v_proj (sliding layers
    alone: a global layer's values are its keys), o_proj, q_norm and k_norm (v_norm has no weight); the MLP's
    gate_proj, up_proj and down_proj; seven RMSNorms (input, post-attention, pre- and post-feedforward, and the
    mixture's post_feedforward_layernorm_1, _2 and pre_feedforward_layernorm_2); the router's proj, scale and
    per_expert_scale; the experts' gate_up_proj (E × 2m × h) and down_proj (E × h × m)."""
    d = GLOBAL_D if global_ else D
    attention = H * HEADS * d + H * KV * d * (1 if global_ else 2) + HEADS * d * H + 2 * d
    return attention + 3 * H * F + 7 * H + H * E + H + E + E * 3 * M * H


def test_repair_is_the_recorded_one():
    assert truth()["repaired"] == {"text_config": {"num_experts": E, "moe_intermediate_size": M, "top_k_experts": 8}}
    assert "diffusion_gemma" in coverage.WHOLE_REPAIRED_AT_DEFAULTS
    assert "diffusion_gemma" not in coverage.WHOLE_REFUSED_AT_DEFAULTS | coverage.WHOLE_NOT_YET


def test_self_conditioning_by_hand():
    """DiffusionGemmaSelfConditioning: pre_norm (h, with a weight), gate_proj and up_proj h → f and down_proj f → h
    without biases, post_norm without a weight; equal to the recorded class's by name."""
    _, model = hf.load(CONFIG)
    mine = {t.component: t.numel for t in terms(model, 8) if t.component.startswith("decoder.")}
    assert mine == {"decoder.self_conditioning.mlp": 3 * H * F, "decoder.self_conditioning.pre_norm": H}
    theirs = sum(n for name, n in expanded(truth()["params"], 2) if name.startswith("model.decoder.self_conditioning."))
    assert theirs == 3 * H * F + H == 63_703_296


def test_whole_count_by_hand_tied():
    """The wrapper's tie_word_embeddings true (its default): the decoder's layers, norm and table are the encoder's and
    lm_head is the table; every layer counted once, five of thirty global (layer_types: every sixth)."""
    layers = 25 * layer(False) + 5 * layer(True)
    text = V * H + layers + H
    tower = sum(n for name, n in expanded(truth()["params"], 2) if ".vision_tower." in name)
    embed_vision = 768 * H  # DiffusionGemmaMultimodalEmbedder: Linear(768, h) without a bias, its norm without a weight
    _, model = hf.load(CONFIG)
    total = text + tower + embed_vision + 3 * H * F + H
    assert tally(model).params == total == sum(n for _, n in expanded(truth()["params"], 2)) == 21_914_754_816


def test_untied_doubles_the_text_layers(tmp_path):
    """tie_word_embeddings false "undoes all ties" (DiffusionGemmaConfig): the decoder's layers, norm and table its own,
    and lm_head its own; text_config's tie_word_embeddings is not read."""
    data = json.loads(CONFIG.read_text())
    tied = tally(hf.load(CONFIG)[1]).params
    data["tie_word_embeddings"] = False
    (tmp_path / "config.json").write_text(json.dumps(data))
    untied = tally(hf.load(tmp_path / "config.json")[1]).params
    assert untied - tied == (25 * layer(False) + 5 * layer(True)) + H + V * H + V * H == 22_285_897_216
    data["tie_word_embeddings"], data["text_config"]["tie_word_embeddings"] = True, False
    (tmp_path / "config.json").write_text(json.dumps(data))
    assert tally(hf.load(tmp_path / "config.json")[1]).params == tied


@pytest.mark.torch
@pytest.mark.parametrize("tie", [True, False])
def test_tie_rule_equals_transformers(tie):
    """The whole class built on the meta device at the recorded config with the wrapper's flag each way: every
    parameter, a tied one once, equal to the count."""
    from ffncalc.analysis.hfwhole import measure_whole

    data = {**json.loads(CONFIG.read_text()), "tie_word_embeddings": tie}
    record = measure_whole(data)
    theirs = sum(n for _, n in expanded(record["params"], 2))
    path = Path(__file__).parent / f".dgemma-{tie}.json"
    try:
        path.write_text(json.dumps(data))
        assert tally(hf.load(path)[1]).params == theirs
    finally:
        path.unlink()


def test_denoising_step_is_stated_not_charged():
    """The count's forward is the encoder's over the prompt: the decoder's work, a denoising step of the canvas, is in
    the note, its soft embeddings (c × V by V × h) and self-conditioning's three matmuls, 2 FLOPs a multiply-add."""
    _, model = hf.load(CONFIG)
    (part,) = [p for p in model.parts if isinstance(p, BlockDiffusion)]
    assert part.canvas == 256 and not part.untied
    assert part.conditioning_flops() == 2 * 256 * (V * H + 3 * H * F) == 341_852_553_216
    assert all(t.macs == 0 for t in terms(model, 8) if t.component.startswith("decoder."))
    # a canvas token's multiply-adds in a sliding layer: q, k, v and o; the MLP; the router; 8 of 128 experts of 704
    sliding = H * HEADS * D + 2 * H * KV * D + HEADS * D * H + 3 * H * F + H * E + 8 * 3 * M * H
    glob = H * HEADS * GLOBAL_D + H * KV * GLOBAL_D + HEADS * GLOBAL_D * H + 3 * H * F + H * E + 8 * 3 * M * H
    # QKᵀ and AV over the 256 canvas keys (within the 512-key window), every head; then lm_head
    products = 25 * 2 * HEADS * D * 256 + 5 * 2 * HEADS * GLOBAL_D * 256
    step = 2 * 256 * (25 * sliding + 5 * glob + products + V * H) + part.conditioning_flops()
    assert step == 2_492_389_654_528
    per_global, per_sliding = 4 * 256 * 5 * HEADS * GLOBAL_D, 4 * 256 * 25 * HEADS * D
    assert part.step_flops(model) == (step, per_global, per_sliding)
    text = f"{step:,} forward FLOPs with no prompt before it (341,852,553,216 of them soft embeddings and self-conditioning)"
    assert any(text in n and f"{per_global:,} more for each cached prompt key" in n for n in model.notes)


SMALL = {"num_experts": 4, "moe_intermediate_size": 32, "top_k_experts": 2, "hidden_size": 64, "intermediate_size": 128}
SMALL |= {"num_hidden_layers": 6, "vocab_size": 100, "head_dim": 16, "num_attention_heads": 2, "num_key_value_heads": 2}


@pytest.mark.torch
@pytest.mark.parametrize(
    "extra, tie",
    [
        ({}, True),
        ({}, False),
        ({"num_global_key_value_heads": 1, "global_head_dim": 32}, True),
        ({"attention_bias": True}, True),  # the decoder's biases, which no tie pattern names, its own
        ({"attention_bias": True}, False),
    ],
)
def test_sparse_configs_equal_the_class(tmp_path, extra, tie):
    """A config stating a few text keys (the sub-configs' model_type and vision_config left out: Gemma4VisionConfig's
    defaults) with the wrapper's flag each way: the whole count equal to the class transformers builds from it."""
    from ffncalc.analysis.hfwhole import instantiate_whole

    data = {"model_type": "diffusion_gemma", "tie_word_embeddings": tie, "canvas_length": 32, "text_config": {**SMALL, **extra}}
    (tmp_path / "config.json").write_text(json.dumps(data))
    assert tally(hf.load(tmp_path / "config.json")[1]).params == sum(p.numel() for p in instantiate_whole(data).parameters())


def test_biases_tied_stay_the_decoders_by_hand(tmp_path):
    """attention_bias with the ties: each layer's q, k, v (sliding layers) and o biases once more, in the decoder."""
    data = {"model_type": "diffusion_gemma", "text_config": {**SMALL, "attention_bias": True}}
    (tmp_path / "config.json").write_text(json.dumps(data))
    _, model = hf.load(tmp_path / "config.json")
    # five sliding layers of q (2 × 16), k and v (2 × 16 each) and o (64), one global of q (2 × 512), k (2 × 512), o (64)
    sliding, glob = 2 * 16 + 2 * 2 * 16 + 64, 2 * 512 + 2 * 512 + 64
    mine = {t.component: t.numel for t in terms(model, 8) if t.component == "decoder.layers"}
    assert mine == {"decoder.layers": 5 * sliding + glob}
