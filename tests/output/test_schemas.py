"""Every command's JSON carries its schema's name and validates against that schema (docs/schemas/KIND.json,
written by ``ffncalc docs`` from ffncalc/output/schemas.py): every preset through count, compare, train, infer and
fit, and each other command's records. The checkpoint tests validate every checkpoint count they make."""

import json
from pathlib import Path

import jsonschema
import pytest

import ffncalc
from ffncalc.output import schemas
from ffncalc.sources import presets

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "schemas"


def validate(data):
    """The record against the schema its ``schema`` key names, read from docs/schemas/."""
    kind, _, version = data["schema"].removeprefix("ffncalc.").partition("/")
    schema = json.loads((DOCS / f"{kind}.json").read_text())
    assert schema["properties"]["schema"]["const"] == f"ffncalc.{kind}/{version}"
    jsonschema.Draft202012Validator(schema).validate(data)
    return kind


def cli_json(cli, *args):
    code, out, err = cli(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_every_kind_has_a_valid_schema_file():
    assert sorted(p.stem for p in DOCS.glob("*.json")) == sorted(schemas.VERSIONS)
    for kind in schemas.VERSIONS:
        schema = json.loads((DOCS / f"{kind}.json").read_text())
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["required"][0] == "schema" and schema["additionalProperties"] is False


def test_a_schema_refuses_what_it_does_not_describe():
    data = ffncalc.count("gpt2").to_dict()
    validate(data)
    schema = json.loads((DOCS / "count.json").read_text())
    for broken in (
        {**data, "extra": 1},
        {**data, "totals": {**data["totals"], "params": data["totals"]["params"] + 0.5}},  # exact integers stay integers
        {**data, "totals": {**data["totals"], "params": str(data["totals"]["params"])}},
        {k: v for k, v in data.items() if k != "components"},
        {**data, "schema": "ffncalc.count/0"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft202012Validator(schema).validate(broken)


@pytest.mark.parametrize("name", presets.names())
def test_every_preset_through_every_counting_command(cli, name):
    spec = presets.load(name)[1]
    ctx = spec.context_length
    runs = {
        "count": [["count", name], ["count", name, "--per-layer", "-c", "6n", "--recompute", "full"]],
        "compare": [["compare", name], ["compare", name, "--match", "flops"]],
        "train": [["train", name, "--tokens", "1T", "--hardware", "h100-sxm", "--gpus", "64"]],
        "infer": [["infer", name, "--prompt", str(max(1, ctx // 2)), "--generate", str(max(1, ctx // 4)), "--hardware", "h100-sxm"]],
        "fit": [["fit", name, "--hardware", "h100-sxm"]],
    }
    if spec.bidirectional:  # it generates nothing: serving plans refuse it (tests/families/test_encoders.py)
        del runs["infer"], runs["fit"]
    if any(p.unplanned for p in spec.parts):  # no plan built for it yet (tests/families/test_encoder_decoders.py)
        del runs["train"], runs["infer"], runs["fit"]
    for kind, commands in runs.items():
        for args in commands:
            assert validate(cli_json(cli, *args)) == kind, args


@pytest.mark.parametrize(
    "args, kind",
    [
        (["compare", "--d-model", "768", "--d-ff", "3072", "--sweep", "1:8:1"], "sweep"),
        (["compare", "--d-model", "4096", "--d-ff", "16384", "--to", "gated", "--multiple-of", "256"], "compare"),
        (["table", "all"], "table"),
        (["table", "gpt3", "deepseek-v3", "--columns", "model,heads,ffn,d_ff"], "table"),
        (["presets"], "presets"),
        (["families"], "families"),
        (["conventions"], "conventions"),
        (["explain"], "explain"),
        (["explain", "mfu"], "explain"),
        (["count", str(ROOT / "tests" / "hf_configs" / "qwen1.5-moe-a2.7b.json")], "count"),
        ("train deepseek-v3 --tokens 14.8T --hardware h100-sxm --gpus 2048 --pp 16 --ep 8".split(), "train"),
        (
            "infer deepseek-v3 --prompt 2000 --generate 200 --dtype fp8 --hardware h200 --gpus 8 --draft 1 --accept 0.7".split(),
            "infer",
        ),
    ],
)
def test_other_commands(cli, args, kind):
    assert validate(cli_json(cli, *args)) == kind


def test_the_api_results_carry_the_same_schema():
    assert ffncalc.count("gpt3").to_dict()["schema"] == "ffncalc.count/1"
    assert validate(ffncalc.table("all").to_dict()) == "table"
    assert validate(ffncalc.presets().to_dict()) == "presets"


@pytest.mark.torch
def test_verify_records(cli, tmp_path):
    from ffncalc.api.results import Verification

    one = ffncalc.verify("gpt2")
    assert validate(cli_json(cli, "verify", "gpt2")) == "verify"
    assert validate(Verification(one.reports, [("x", "why")], every=True).to_dict()) == "verify-all"
    config = ROOT / "tests" / "hf_configs" / "llama3-8b.json"
    assert validate(cli_json(cli, "verify", "--hf", str(config))) == "verify-hf"


@pytest.mark.torch
def test_bench_records(cli, tmp_path, steady_peak):
    out = tmp_path / "bench.json"
    args = ["bench", "gpt2", "--compare-ffn", "--tokens", "16", "--repeats", "1", "--warmup", "0", "--device", "cpu"]
    assert validate(cli_json(cli, *args, "--out", str(out))) == "bench"
    assert validate(json.loads(out.read_text())) == "bench"
    assert validate(cli_json(cli, "compare", "gpt2", "--bench", "--tokens", "16", "--repeats", "1", "--device", "cpu")) == "compare"
