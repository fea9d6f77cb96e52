"""``Model.from_text``: a file's text read as the command line reads a file of that name, no file opened."""

from pathlib import Path

import pytest

import ffncalc

CONFIGS = Path(__file__).resolve().parents[1] / "hf_configs"
SPEC = "vocab_size: 100\nd_model: 16\nn_layers: 2\ncontext_length: 32\nattention: {n_heads: 4}\nffn: {kind: dense, d_ff: 64}\n"


@pytest.mark.parametrize("label", ["config.json", "pasted"])
def test_a_config_json(label):
    path = CONFIGS / "qwen3-30b-a3b.json"
    m = ffncalc.Model.from_text(path.read_text(), label=label)
    assert m.label == label
    assert ffncalc.count(m).totals == ffncalc.count(str(path)).totals


@pytest.mark.parametrize("label", ["tiny.yaml", "pasted"])
def test_a_spec(label, tmp_path):
    (tmp_path / "tiny.yaml").write_text(SPEC)
    assert ffncalc.count(ffncalc.Model.from_text(SPEC, label=label)).totals == ffncalc.count(str(tmp_path / "tiny.yaml")).totals


def test_a_spec_as_json_text_without_a_model_type():
    import json

    import yaml

    text = json.dumps(yaml.safe_load(SPEC))
    assert ffncalc.count(ffncalc.Model.from_text(text)).params == ffncalc.count(ffncalc.Model.from_yaml(SPEC)).params


def test_as_family_reads_a_config_as_another_type():
    text = (CONFIGS / "llama3-8b.json").read_text()
    m = ffncalc.Model.from_text(text, label="config.json", as_family="mistral")
    assert ffncalc.count(m).params == ffncalc.count(str(CONFIGS / "llama3-8b.json"), as_family="mistral").params
    with pytest.raises(ffncalc.InputError, match="only a Hugging Face config.json is read as a family"):
        ffncalc.Model.from_text(SPEC, label="tiny.yaml", as_family="llama")


@pytest.mark.parametrize(
    "text, label, message",
    [
        (b"{}", "x.json", "x.json: a model's text is a string, not a bytes"),
        ("{nope", "x.json", "x.json:1: not JSON (Expecting property name enclosed in double quotes)"),
        ("[1]", "x.json", "x.json:1: a config.json is a JSON object, not a list"),
        ("", "x.yaml", "x.yaml: empty file: a spec is a mapping of fields (vocab_size, d_model, …)"),
    ],
)
def test_bad_text_is_one_line_naming_the_label(text, label, message):
    with pytest.raises(ffncalc.InputError) as exc:
        ffncalc.Model.from_text(text, label=label)
    assert str(exc.value) == message
