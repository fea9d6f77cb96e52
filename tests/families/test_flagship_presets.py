"""The flagship presets: each one exactly what its public config.json describes, and each against the
total (and, for a mixture, the active count) its model card or paper states.

(a) Parameter for parameter: the preset's count, component by component and run by run, equals ffncalc's
count of the real config.json in hf_configs/, which test_coverage.py holds equal to what transformers
5.23.0 builds from that file.
(b) Published figures: each quoted with its source; a figure rounded to whole billions ("80B") allows
±0.5B, one rounded to a tenth ("30.7B") ±0.05B, "1T" ±0.05T. Cards differ in what they count as active:
every expert a token meets plus everything else (``active``), the same without the input embedding
(``active_without_input_embedding``, as DeepSeek and NVIDIA count), or without both embedding matrices
(``active_without_embeddings``, as Qwen3-Next, GLM and MiniMax count); the test names which one the
figure matches. A card that counts a multimodal checkpoint is compared with the language model plus the
towers transformers builds from the same file.
"""

import json
from pathlib import Path

import pytest

from ffncalc.analysis.count import tally
from ffncalc.sources import hf, presets

HERE = Path(__file__).resolve().parents[1]
CONFIGS = HERE / "hf_configs"
WHOLE = HERE / "hf_whole" / "public"
B = 10**9

# preset -> the public config.json it is imported from
FLAGSHIPS = {
    "llama4-scout": "llama-4-scout-17b-16e-instruct",
    "llama4-maverick": "llama-4-maverick-17b-128e-instruct",
    "qwen3-next-80b-a3b": "qwen3-next-80b-a3b-thinking",
    "qwen3.5-27b": "qwen3.5-27b",
    "qwen3.5-35b-a3b": "qwen3.5-35b-a3b",
    "qwen3.5-397b-a17b": "qwen3.5-397b-a17b",
    "deepseek-v3.2": "deepseek-v3.2",
    "kimi-k2": "kimi-k2-instruct",
    "glm-4.7": "glm-4.7",
    "glm-5": "glm-5",
    "minimax-m2.5": "minimax-m2.5",
    "gemma-4-31b": "gemma-4-31b-it-nvfp4",
    "nemotron-3-nano-30b-a3b": "nemotron-3-nano-30b-a3b",
    "olmo3-32b": "olmo-3-1125-32b",
}


# configs whose copy in hf_configs/ leaves the tower's keys out, read whole from hf_whole/public/ (the released
# vision_config restored, its source in public/sources.json)
WHOLE_COPY = {"llama-4-scout-17b-16e-instruct"}


def config_path(config: str) -> Path:
    return WHOLE / f"{config}.json" if config in WHOLE_COPY else CONFIGS / f"{config}.json"


def rows(spec) -> dict:
    """Every counted row: (component, layers) -> (params, forward FLOPs per token)."""
    return {(r.component, r.layers): (r.params, r.flops) for r in tally(spec, seq_len=4096).rows}


@pytest.mark.parametrize("preset,config", FLAGSHIPS.items())
def test_preset_is_exactly_its_config(preset, config):
    _, ours = presets.load(preset)
    _, theirs = hf.load(config_path(config))  # whole, as the multimodal presets are
    assert rows(ours) == rows(theirs)
    a, b = tally(ours), tally(theirs)
    assert (a.params, a.active, a.mtp_params) == (b.params, b.active, b.mtp_params)
    assert ours.name and preset in presets.names()


def within(value: int, stated: float, tolerance: float) -> bool:
    return abs(value - stated) <= tolerance


def with_towers(config: str) -> int:
    """All the parameters of the multimodal checkpoint, as transformers builds it from the file (meta device)."""
    import torch
    import transformers

    data = json.loads((CONFIGS / f"{config}.json").read_text())
    data.pop("quantization_config", None)
    transformers.logging.set_verbosity_error()
    cls = getattr(transformers, data["architectures"][0])
    with torch.device("meta"):
        net = cls(transformers.AutoConfig.for_model(**data))
    return sum(p.numel() for p in net.parameters())


def count(preset: str):
    return tally(presets.load(preset)[1])


def test_llama4():
    # Meta's Llama 4 model card: Scout "17B (Activated) 109B (Total)", Maverick "17B (Activated) 400B (Total)".
    # The presets count the multimodal checkpoints whole, as transformers builds them from the released configs
    # (tests/hf_whole/public_truth, the Maverick copy's own record): Scout's 108.6B rounds to the card's 109B;
    # Maverick's 401.6B is 1.6B over its "400B", whose language model alone is 400.7B (the card rounds it down).
    for preset in ("llama4-scout", "llama4-maverick"):
        assert within(count(preset).active, 17 * B, 0.5 * B)
    assert within(count("llama4-scout").params, 109 * B, 0.5 * B)
    assert 400 * B < count("llama4-maverick").params < 402 * B


@pytest.mark.torch  # the whole class is built by transformers
@pytest.mark.parametrize(
    "preset,config", [("llama4-scout", "llama-4-scout-17b-16e-instruct"), ("llama4-maverick", "llama-4-maverick-17b-128e-instruct")]
)
def test_llama4_presets_are_the_whole_checkpoints(preset, config):
    """Each Llama 4 preset's parameters equal what transformers builds for the whole checkpoint (tower, adapter,
    projector and language model) from its released config, on the meta device."""
    from ffncalc.analysis.hfwhole import measure_whole
    from ffncalc.analysis.records import expanded

    data = json.loads(config_path(config).read_text())
    built = sum(n for _, n in expanded(measure_whole(data)["params"], 2))
    assert count(preset).params == built
    assert built - hf_total(config) > 0  # the tower and projector beside the language model


def test_qwen3_next():
    # Qwen/Qwen3-Next-80B-A3B-Instruct card: "Number of Parameters: 80B in total and 3B activated".
    t = count("qwen3-next-80b-a3b")
    assert within(t.params, 80 * B, 0.5 * B)
    assert within(t.active_without_embeddings, 3 * B, 0.5 * B)


@pytest.mark.torch  # the vision tower is built by transformers
@pytest.mark.parametrize(
    "preset,config,total,active",
    [
        # Qwen3.5 cards: "Number of Parameters: 27B"; "35B in total and 3B activated"; "397B in total and 17B activated"
        ("qwen3.5-27b", "qwen3.5-27b", 27, None),
        ("qwen3.5-35b-a3b", "qwen3.5-35b-a3b", 35, 3),
        ("qwen3.5-397b-a17b", "qwen3.5-397b-a17b", 397, 17),
    ],
)
def test_qwen3_5(preset, config, total, active):
    t = count(preset)
    whole = with_towers(config)
    towers = whole - hf_total(config)  # the vision tower and merger transformers adds
    assert 0 < towers < B
    # the preset and its config.json counted whole: the multimodal checkpoint transformers builds, the card's figure
    assert t.params == tally(hf.load(CONFIGS / f"{config}.json")[1]).params == whole
    assert within(t.params, total * B, 0.5 * B)
    if active is not None:
        assert within(t.active, active * B, 0.5 * B)


def hf_total(config: str) -> int:
    """The language model's parameters, as its config.json counts them."""
    return tally(hf.load(config_path(config), text=True)[1]).params


def test_deepseek_v3_2():
    # DeepSeek-V3 (arXiv:2412.19437): 671B total, 37B activated; DeepSeek-V3's own config builds
    # 671,026,404,352 parameters (test_counts.py). V3.2 adds the DSA indexer on each of its 61 layers
    # (config: index_n_heads 64, index_head_dim 128, q_lora_rank 1536, hidden_size 7168):
    #   wq_b 1536 × (64·128) + wk 7168 × 128 + k_norm LayerNorm(128) weight and bias + weights_proj 7168 × 64
    per_layer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    assert per_layer == 13_959_424
    t = count("deepseek-v3.2")
    assert t.params == 671_026_404_352 + 61 * per_layer
    assert within(t.active_without_input_embedding, 37 * B, 0.5 * B)


def test_kimi_k2():
    # moonshotai/Kimi-K2-Instruct card: "Total Parameters 1T", "Activated Parameters 32B".
    t = count("kimi-k2")
    assert within(t.params, 10**12, 0.05 * 10**12)
    # the card's 32B lies between the two counts of what a token meets (32.86B with the input embedding,
    # 31.69B without); neither is within ±0.5B of it, so the card's rounding is looser than a whole billion
    assert t.active_without_input_embedding < 32 * B < t.active


def test_glm():
    # GLM-5 report (arXiv:2602.15763), Table 1: GLM-4.5 "355B" total and "32B" activated, GLM-5 "744B" and "40B".
    glm5 = count("glm-5")
    assert within(glm5.params, 744 * B, 0.5 * B)
    assert within(glm5.active_without_embeddings, 40 * B, 0.5 * B)
    glm47 = count("glm-4.7")  # GLM-4.5's architecture
    assert within(glm47.active_without_embeddings, 32 * B, 0.5 * B)
    # 355B counts the multi-token-prediction layer too (Table 1: "# MTP Layers 1"), which is not part of
    # Glm4MoeForCausalLM: the causal LM is below it (no rounding tolerance applies)
    assert glm47.params < 355 * B


def test_minimax_m2_5():
    # MiniMaxAI/MiniMax-M2.5 card: "230B total parameters with 10B active"
    t = count("minimax-m2.5")
    assert within(t.active_without_embeddings, 10 * B, 0.5 * B)
    # the checkpoint's three multi-token-prediction modules are not in MiniMaxM2ForCausalLM
    # and the card's total counts them: the causal LM is below it (no rounding tolerance applies)
    assert t.params < 230 * B


@pytest.mark.torch  # the vision tower is built by transformers
def test_gemma_4_31b():
    # Gemma 4 model card, model table: 31B dense, "30.7B" parameters (the vision encoder, ~550M, apart): the language
    # model; the preset is the whole multimodal checkpoint transformers builds from the same file
    config = "gemma-4-31b-it-nvfp4"
    assert within(hf_total(config), 30.7 * B, 0.05 * B)
    towers = count("gemma-4-31b").params - hf_total(config)
    assert 0.5 * B < towers < 0.6 * B
    assert count("gemma-4-31b").params == with_towers(config)


def test_nemotron_3_nano():
    # nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 card: "31.6B total parameters, approximately 3.2B active
    # (3.6B including embeddings)"
    t = count("nemotron-3-nano-30b-a3b")
    assert within(t.params, 31.6 * B, 0.05 * B)
    assert within(t.active_without_input_embedding, 3.2 * B, 0.05 * B)
    assert within(t.active, 3.6 * B, 0.05 * B)


def test_olmo3_32b():
    # allenai/Olmo-3-1125-32B card: "OLMo 3 32B"; 64 layers, hidden size 5120, 40 Q heads, 8 KV heads
    assert within(count("olmo3-32b").params, 32 * B, 0.5 * B)
