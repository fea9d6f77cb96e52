"""--text-only: a multimodal model's language model alone, as its text-only class builds it. A config.json's wrapper is
read by its text_config (its head tied by the text_config's flag, not the wrapper's); a spec (a preset, a spec file, a
Model) leaves out the towers beside its layers."""

import json
from pathlib import Path

import pytest

import ffncalc
from ffncalc.analysis.count import tally
from ffncalc.analysis.records import expanded
from ffncalc.sources import hf, presets

TESTS = Path(__file__).resolve().parents[1]
GEMMA3 = TESTS / "hf_configs" / "gemma-3-27b-it.json"
MISTRAL3 = TESTS / "hf_whole" / "configs" / "mistral3.json"


def recorded(path: Path) -> int:
    """A ground-truth record's parameters (tests/hf_truth: the text-only class transformers builds)."""
    return sum(n for _, n in expanded(json.loads(path.read_text())["params"], 2))


def test_gemma3_is_gemma3_for_causal_lm():
    """Gemma 3 27B's config.json and the gemma-3-27b preset (counted whole), each with --text-only: the parameters of
    Gemma3ForCausalLM built from the same config.json (tests/hf_truth), without the SigLIP tower and its projector."""
    truth = json.loads((TESTS / "hf_truth" / "gemma-3-27b-it.json").read_text())
    assert truth["model_class"] == "Gemma3ForCausalLM"
    text = recorded(TESTS / "hf_truth" / "gemma-3-27b-it.json")
    for ref in (str(GEMMA3), "gemma-3-27b"):
        _, whole = presets.load(ref)
        _, alone = presets.load(ref, text_only=True)
        assert tally(alone).params == text
        tower = sum(r.params for r in tally(whole).rows if r.name.startswith("vision."))
        assert tally(whole).params - tower == text
        assert not alone.parts and "text only: the language model alone, without its vision" in alone.notes


def test_the_text_configs_tie_decides_the_head():
    """Mistral3Config ties the whole model's head (true by default) where its text_config (a MistralConfig) says false:
    MistralForCausalLM, the text-only class, holds its head apart, vocab × hidden more than the whole model's text part."""
    data = json.loads(MISTRAL3.read_text())
    assert data["tie_word_embeddings"] is True and data["text_config"]["tie_word_embeddings"] is False
    v, h = data["text_config"]["vocab_size"], data["text_config"]["hidden_size"]
    _, whole = hf.load(MISTRAL3)
    _, alone = presets.load(str(MISTRAL3), text_only=True)
    tower = sum(r.params for r in tally(whole).rows if r.name.startswith("vision."))
    assert tally(alone).params == tally(whole).params - tower + v * h


@pytest.mark.torch
def test_the_text_only_class_as_transformers_builds_it():
    """MistralForCausalLM from Mistral 3's text_config, built on the meta device: every parameter, once."""
    import torch
    from transformers import AutoModelForCausalLM, MistralConfig

    data = json.loads(MISTRAL3.read_text())["text_config"]
    with torch.device("meta"):
        net = AutoModelForCausalLM.from_config(MistralConfig(**{k: v for k, v in data.items() if k != "model_type"}))
    assert type(net).__name__ == "MistralForCausalLM"
    assert tally(presets.load(str(MISTRAL3), text_only=True)[1]).params == sum(p.numel() for p in net.parameters())


def test_a_model_object_and_the_library():
    """ffncalc.count(..., text_only=True) of a loaded Model and of a preset's name agree; the whole count is larger."""
    whole = ffncalc.load("gemma-3-27b")
    by_name = ffncalc.count("gemma-3-27b", text_only=True)
    by_model = ffncalc.count(whole, text_only=True)
    assert by_name.tally.params == by_model.tally.params < ffncalc.count(whole).tally.params


def test_plans_take_it(cli):
    """infer and fit plan the language model alone: the weights' bytes no tower's."""
    code, out, _ = cli("infer", "gemma-3-27b", "--text-only", "--prompt", "64", "--generate", "8", "-f", "json")
    assert code == 0
    code_whole, out_whole, _ = cli("infer", "gemma-3-27b", "--prompt", "64", "--generate", "8", "-f", "json")
    assert code_whole == 0

    def weights(text: str) -> int:
        return json.loads(text)["figures"]["weight_bytes"]["value"]

    tower = sum(r.params for r in tally(presets.load("gemma-3-27b")[1]).rows if r.name.startswith("vision."))
    assert weights(out_whole) - weights(out) == 2 * tower  # bf16: two bytes a parameter
    assert json.loads(out)["inputs"]["text_only"] is True and "text_only" not in json.loads(out_whole)["inputs"]


@pytest.mark.parametrize(
    "args", [("count", "gpt2", "--text-only"), ("infer", "llama3-8b", "--text-only", "--prompt", "8", "--generate", "8")]
)
def test_a_language_model_alone_is_refused_in_one_line(cli, args):
    code, out, err = cli(*args)
    assert code == 2 and out == "" and err.count("\n") == 1 and "--text-only" in err and "no tower" in err


def test_the_note_names_every_part_left_out():
    """DiffusionGemma's text_config is its encoder's language model: --text-only leaves out the vision tower and the
    block-diffusion decoder (self_conditioning, 3 × 2,304 × 9,216 + 2,304 parameters at the repaired defaults), and its
    note names both."""
    config = TESTS / "hf_whole" / "configs" / "diffusion_gemma.json"
    _, whole = presets.load(str(config))
    _, alone = presets.load(str(config), text_only=True)
    assert "text only: the language model alone, without its vision and block diffusion" in alone.notes
    left_out = sum(r.params for r in tally(whole).rows if r.name.startswith(("vision.", "decoder.")))
    assert tally(whole).params - tally(alone).params == left_out
    assert sum(r.params for r in tally(whole).rows if r.name.startswith("decoder.self_conditioning")) == 3 * 2304 * 9216 + 2304


def test_images_of_a_model_without_its_towers_are_refused_saying_why(cli):
    code, out, err = cli("count", "gemma-3-27b", "--text-only", "--images", "1")
    assert code == 2 and out == "" and err.count("\n") == 1 and "--text-only leaves its towers out" in err
