"""The library's API: every command's answer one call away, equal to the command line's JSON for the same
arguments (the command line is the reference: each command renders what the same function returns), results
that render in a notebook, and errors raised, never an exit."""

import json
from pathlib import Path

import pytest
import yaml

import ffncalc
from ffncalc.sources import presets

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "tests" / "hf_configs"
TRUTH = ROOT / "tests" / "hf_truth"
PRESETS = ["gpt3", "llama3-8b", "deepseek-v3", "mixtral-8x7b"]
CONFIG = str(CONFIGS / "qwen1.5-moe-a2.7b.json")


def cli_json(cli, *args):
    code, out, err = cli(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def layers(ranges):
    """'0-31' -> 32 layers, '5' -> 1."""
    total = 0
    for r in ranges:
        first, _, last = r.partition("-")
        total += int(last or first) - int(first) + 1
    return total


def test_llama3_8b_has_its_published_parameter_count():
    """Meta's Llama 3 8B: 8.03B parameters (its model card); exactly what transformers' LlamaForCausalLM holds for
    its config.json (recorded in tests/hf_truth)."""
    truth = json.loads((TRUTH / "llama3-8b.json").read_text())
    held = sum(numel * (layers(rest[0]) if rest else 1) for _, numel, *rest in truth["params"])
    r = ffncalc.count("llama3-8b")
    assert r.params == held and round(r.params / 1e9, 2) == 8.03
    assert ffncalc.count(str(CONFIGS / "llama3-8b.json")).params == held


@pytest.mark.parametrize("model", PRESETS + [CONFIG])
@pytest.mark.parametrize(
    "flags, kw",
    [
        ([], {}),
        (["--seq-len", "1024", "--convention", "6n", "--per-layer"], dict(seq_len=1024, convention="6n", per_layer=True)),
        (["--batch", "4", "--recompute", "selective", "-c", "palm"], dict(batch=4, recompute="selective", convention="palm")),
    ],
)
def test_count_equals_the_command_line(cli, model, flags, kw):
    assert ffncalc.count(model, **kw).to_dict() == cli_json(cli, "count", model, *flags)


def test_count_attributes_are_the_totals_and_rows(cli):
    r = ffncalc.count("mixtral-8x7b")
    data = cli_json(cli, "count", "mixtral-8x7b")
    for key, value in data["totals"].items():
        assert getattr(r, key) == value, key
    assert [c.name for c in r.components] == [c["component"] for c in data["components"]]
    assert sum(c.params for c in r.components if not c.tied) == r.params  # the rows make up the total
    assert (r.seq_len, r.batch, r.convention) == (data["seq_len"], data["batch"], data["convention"]["name"])


def test_a_config_read_as_a_family_and_a_path_object(cli):
    path = CONFIGS / "mixtral-8x7b.json"
    assert ffncalc.count(path).to_dict() == cli_json(cli, "count", str(path))
    assert ffncalc.load(path).d_model == json.loads(path.read_text())["hidden_size"]


@pytest.mark.parametrize(
    "args, call",
    [
        (["compare", "llama2-7b"], lambda: ffncalc.compare("llama2-7b")),
        (["compare", "mixtral-8x7b", "--match", "flops"], lambda: ffncalc.compare("mixtral-8x7b", match="flops")),
        (
            ["compare", "--d-model", "4096", "--d-ff", "16384", "--to", "gated", "--multiple-of", "256"],
            lambda: ffncalc.compare(d_model=4096, d_ff=16384, to="gated", multiple_of=256),
        ),
        (
            ["compare", "--d-model", "768", "--d-ff", "3072", "--sweep", "1:8:1"],
            lambda: ffncalc.compare(d_model=768, d_ff=3072, sweep="1:8:1"),
        ),
        (["compare", "--d-model", "768", "--sweep", "2,2.5,4"], lambda: ffncalc.compare(d_model=768, sweep=[2, 2.5, 4])),
    ],
)
def test_compare_equals_the_command_line(cli, args, call):
    assert call().to_dict() == cli_json(cli, *args)


@pytest.mark.parametrize(
    "args, model, kw",
    [
        (
            ["--tokens", "15T", "--hardware", "h100-sxm", "--gpus", "1024"],
            "llama3-8b",
            dict(tokens="15T", hardware="h100-sxm", gpus=1024),
        ),
        (
            ["--tokens", "14.8T", "--hardware", "h100-sxm", "--gpus", "2048", "--dp", "128", "--pp", "16", "--ep", "8"],
            "deepseek-v3",
            dict(tokens="14.8T", hardware="h100-sxm", gpus=2048, dp=128, pp=16, ep=8),
        ),
        (
            ["--tokens", "300B", "--recompute", "selective", "--attention-kernel", "eager", "--no-sequence-parallel", "--tp", "2"],
            "gpt3",
            dict(tokens="300B", recompute="selective", attention_kernel="eager", sequence_parallel=False, tp=2),
        ),
        (["--tokens", "1T"], CONFIG, dict(tokens="1T")),
    ],
)
def test_train_equals_the_command_line(cli, args, model, kw):
    assert ffncalc.train(model, **kw).to_dict() == cli_json(cli, "train", model, *args)


def test_tokens_as_text_or_a_count():
    as_text = ffncalc.train("llama3-8b", tokens="1T", hardware="h100-sxm", gpus=8)
    as_count = ffncalc.train("llama3-8b", tokens=10**12, hardware="h100-sxm", gpus=8)
    assert as_text.to_dict() == as_count.to_dict()
    assert as_text.figures["tokens"].value == 10**12 and as_text["train_flops"] is as_text.figures["train_flops"]


@pytest.mark.parametrize(
    "args, model, kw",
    [
        (
            ["--prompt", "4000", "--generate", "500", "--hardware", "h100-sxm", "--gpus", "4"],
            "llama3-70b",
            dict(prompt=4000, generate=500, hardware="h100-sxm", gpus=4),
        ),
        (
            ["--prompt", "2000", "--generate", "200", "--dtype", "fp8", "--hardware", "h200", "--gpus", "8"],
            "deepseek-v3",
            dict(prompt=2000, generate=200, dtype="fp8", hardware="h200", gpus=8),
        ),
        (
            [
                "--prompt",
                "1000",
                "--generate",
                "100",
                "--draft",
                "4",
                "--accept",
                "0.7",
                "--draft-model",
                str(CONFIGS / "llama3.2-1b.json"),
            ],
            "llama3-8b",
            dict(prompt=1000, generate=100, draft=4, accept=0.7, draft_model=CONFIGS / "llama3.2-1b.json"),
        ),
        (
            ["--prompt", "1000", "--generate", "200", "--prefill-chunk", "512"],
            CONFIG,
            dict(prompt=1000, generate=200, prefill_chunk=512),
        ),
    ],
)
def test_infer_equals_the_command_line(cli, args, model, kw):
    assert ffncalc.infer(model, **kw).to_dict() == cli_json(cli, "infer", model, *args)


@pytest.mark.parametrize(
    "args, model, kw",
    [
        (["--hardware", "h100-sxm", "--gpus", "2"], "llama3-70b", dict(hardware="h100-sxm", gpus=2)),
        (["--hardware", "rtx4090", "--dtype", "q4_k_m"], "qwen3-32b", dict(hardware="rtx4090", dtype="q4_k_m")),
        (["--hardware", "h200", "--gpus", "8", "--context", "32768"], "mixtral-8x7b", dict(hardware="h200", gpus=8, context=32768)),
        (["--hardware", "h100-sxm"], CONFIG, dict(hardware="h100-sxm")),
    ],
)
def test_fit_equals_the_command_line(cli, args, model, kw):
    assert ffncalc.fit(model, **kw).to_dict() == cli_json(cli, "fit", model, *args)


def test_a_model_built_in_code_counts_as_its_spec_file(cli, tmp_path):
    data = yaml.safe_load(presets.text("llama3-8b"))
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(data))
    m = ffncalc.Model.from_dict(data, label="mine")
    assert m.title == cli_json(cli, "count", str(path))["model"]
    assert ffncalc.count(m).to_dict() == cli_json(cli, "count", str(path))
    assert ffncalc.train(m, tokens="1T").to_dict() == cli_json(cli, "train", str(path), "--tokens", "1T")
    assert ffncalc.load(m) is m and ffncalc.load(str(path)).stack == m.stack


def test_notebook_display_has_every_component_and_the_totals(cli):
    r = ffncalc.count("mixtral-8x7b")
    html = r._repr_html_()
    assert html.startswith("<div>") and html.count("<table>") == 2
    for c in r.components:
        assert f'<td style="text-align:left">{c.name}</td>' in html, c.name
    for figure in (r.params, r.active_params, r.forward_flops_per_token, r.train_flops):
        assert f"{figure:,}" in html
    assert ">parameters<" in html and ">training step FLOPs (3 × forward)<" in html
    assert r._repr_markdown_() == cli("count", "mixtral-8x7b", "--format", "markdown")[1]


@pytest.mark.parametrize(
    "result",
    [
        lambda: ffncalc.train("gpt3", tokens="300B"),
        lambda: ffncalc.infer("llama3-8b", prompt=100, generate=10),
        lambda: ffncalc.fit("llama3-8b", hardware="h100-sxm"),
        lambda: ffncalc.compare("gpt2"),
        lambda: ffncalc.compare(d_model=64, sweep="1:2:1"),
    ],
)
def test_every_result_renders_in_a_notebook(result):
    r = result()
    assert "<table>" in r._repr_html_() and "| ---" in r._repr_markdown_() and r.to_csv()


def test_an_invalid_spec_file_names_its_file_line_and_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("vocab_size: 100\nd_model: 64\nn_layers: 2\nattention: {n_heads: 4}\nffn:\n  kind: dense\n  d_ff: -5\n")
    with pytest.raises(ffncalc.SpecError) as exc:
        ffncalc.count(str(path))
    assert (exc.value.file, exc.value.line, exc.value.field) == (str(path), 7, "ffn.d_ff")
    assert isinstance(exc.value, ffncalc.InputError) and str(exc.value).startswith(f"{path}:7: ffn.d_ff: ")


def test_a_spec_in_code_names_its_field():
    data = yaml.safe_load(presets.text("gpt2"))
    with pytest.raises(ffncalc.SpecError) as exc:
        ffncalc.Model.from_dict({**data, "attention": {**data["attention"], "n_heads": 0}})
    assert exc.value.field == "attention.n_heads" and exc.value.file is None
    with pytest.raises(ffncalc.SpecError) as exc:
        ffncalc.Model.from_dict({**data, "d_modle": 8})
    assert exc.value.field == "d_modle" and "unknown key" in str(exc.value)


@pytest.mark.parametrize(
    "call, error, field",
    [
        (lambda: ffncalc.count("gpt2", batch=0), ffncalc.OptionError, "batch"),
        (lambda: ffncalc.count("gpt2", convention="nonesuch"), ffncalc.OptionError, "convention"),
        (lambda: ffncalc.count("gpt2", seq_len=True), ffncalc.OptionError, "seq_len"),
        (lambda: ffncalc.train("gpt2", tokens="lots"), ffncalc.InputError, None),
        (lambda: ffncalc.train("gpt2", tokens=1.5), ffncalc.InputError, "tokens"),
        (lambda: ffncalc.infer("gpt2", prompt=10, generate=10, reserve=1.5), ffncalc.OptionError, "reserve"),
        (lambda: ffncalc.fit("gpt2", hardware="nonesuch"), ffncalc.InputError, None),
        (lambda: ffncalc.count("nonesuch-7b"), ffncalc.InputError, None),
        (lambda: ffncalc.count(42), ffncalc.InputError, None),
        (lambda: ffncalc.compare("gpt2", d_model=64), ffncalc.InputError, None),
        (lambda: ffncalc.verify(), ffncalc.InputError, None),
        (lambda: ffncalc.count("gpt2", seq_len=4096), ffncalc.InputError, None),  # past its learned positions
    ],
)
def test_errors_are_raised_never_an_exit(call, error, field):
    try:
        call()
    except error as exc:
        assert exc.field == field
    except BaseException as exc:  # SystemExit included
        pytest.fail(f"raised {type(exc).__name__}: {exc}")
    else:
        pytest.fail("no error")


def test_public_names():
    assert set(ffncalc.__all__) <= set(dir(ffncalc))
    for name in ffncalc.__all__:
        assert getattr(ffncalc, name) is not None, name
    with pytest.raises(AttributeError):
        ffncalc.nonesuch  # noqa: B018
    assert (ROOT / "ffncalc" / "py.typed").is_file()


@pytest.mark.parametrize(
    "args, call",
    [
        (["table", "gpt3", "llama3-8b", "mixtral-8x7b"], lambda: ffncalc.table(["gpt3", "llama3-8b", "mixtral-8x7b"])),
        (["table", "all"], lambda: ffncalc.table("all")),
        (
            ["table", "gpt3", "deepseek-v3", "--columns", "model,params,heads", "--seq-len", "1024", "-c", "6n"],
            lambda: ffncalc.table(["gpt3", "deepseek-v3"], columns=["model", "params", "heads"], seq_len=1024, convention="6n"),
        ),
        (["table", CONFIG, "--columns", "model,ffn"], lambda: ffncalc.table(ffncalc.load(CONFIG), columns="model,ffn")),
        (["presets"], lambda: ffncalc.presets()),
    ],
)
def test_table_and_presets_equal_the_command_line(cli, args, call):
    assert call().to_dict() == cli_json(cli, *args)


def test_table_rows_and_presets_entries():
    t = ffncalc.table(["gpt3", "llama3-8b"])
    assert [r["params"] for r in t.rows] == [ffncalc.count("gpt3").params, ffncalc.count("llama3-8b").params]
    p = ffncalc.presets()
    assert sorted(p.names) == sorted(presets.names())
    assert "<table" in p._repr_html_() and "<table" in t._repr_html_()
    with pytest.raises(ffncalc.InputError, match="--columns: unknown nope"):
        ffncalc.table("gpt3", columns="model,nope")
