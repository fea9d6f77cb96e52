"""Tables fit the terminal: every command's default table within COLUMNS=80, no figure cut or dropped."""

import json
import re

import pytest
from checkpoints.test_checkpoint import LLAMA, llama_tensors, write_safetensors  # tests/ is on the path (pyproject)
from rich.cells import cell_len

from ffncalc.cli import main


def run(monkeypatch, capsys, columns, *args):
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    assert exc.value.code in (0, None), err
    return out


def widest(text: str) -> int:
    return max(cell_len(line.rstrip()) for line in text.splitlines())


COMMANDS = [
    ("count", "llama3-8b"),
    ("count", "mixtral-8x7b"),
    ("count", "deepseek-v3", "--per-layer"),
    ("count", "gpt3-175b", "--convention", "kaplan"),
    ("compare", "llama3-8b"),
    ("compare", "--d-model", "4096", "--d-ff", "16384", "--sweep", "1:8:1"),
    ("table", "all"),
    ("presets",),
    ("families",),
    ("conventions",),
    ("explain",),
    ("train", "llama3-8b", "--tokens", "15T", "--hardware", "h100-sxm"),
    (
        "train",
        "deepseek-v3",
        "--tokens",
        "14.8T",
        "--hardware",
        "h100-sxm",
        "--gpus",
        "2048",
        "--dp",
        "128",
        "--pp",
        "16",
        "--ep",
        "8",
        "--tokens-per-s",
        "3e6",
    ),
    ("infer", "llama3-70b", "--prompt", "4000", "--generate", "500", "--hardware", "h100-sxm", "--batch", "8"),
    ("infer", "deepseek-v3", "--prompt", "4000", "--generate", "500"),
    pytest.param(("verify", "gpt2"), marks=pytest.mark.torch, id="verify gpt2"),
    pytest.param(
        ("bench", "gpt2", "--tokens", "8", "--repeats", "1", "--warmup", "0", "--device", "cpu"),
        marks=pytest.mark.torch,
        id="bench gpt2",
    ),
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
def test_default_table_fits_80_columns(monkeypatch, capsys, steady_peak, args):
    # steady_peak: bench's table, not its probe, is under test (a busy machine can slow a real probe's turns)
    assert widest(run(monkeypatch, capsys, "80", *args)) <= 80


def test_checkpoint_table_fits_80_columns(monkeypatch, capsys, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    write_safetensors(tmp_path / "model.safetensors", llama_tensors())
    assert widest(run(monkeypatch, capsys, "80", "count", str(tmp_path / "model.safetensors"))) <= 80


def test_every_figure_survives_the_fitting(monkeypatch, capsys):
    """At 80 columns the train table still shows every exact integer its JSON holds."""
    args = ("train", "llama3-70b", "--tokens", "15T", "--hardware", "h100-sxm", "--gpus", "64", "--tp", "8", "--dp", "8")
    narrow = run(monkeypatch, capsys, "80", *args)
    figures = json.loads(run(monkeypatch, capsys, "80", *args, "--format", "json"))["figures"]
    exact = [f["value"] for f in figures.values() if isinstance(f["value"], int) and abs(f["value"]) >= 10_000]
    assert exact
    for value in exact:
        assert f"{value:,}" in narrow


def test_count_figures_survive_at_80(monkeypatch, capsys):
    narrow = run(monkeypatch, capsys, "80", "count", "mixtral-8x7b")
    data = json.loads(run(monkeypatch, capsys, "80", "count", "mixtral-8x7b", "--format", "json"))
    for c in data["components"]:
        for key in ("params", "forward_flops_per_token", "elementwise_flops_per_token"):
            if c[key] and not c["tied"]:
                assert f"{c[key]:,}" in narrow, (c["component"], key)


def test_columns_env(monkeypatch, capsys):
    wide = run(monkeypatch, capsys, None, "count", "llama3-8b", "--wide")
    assert widest(wide) > 120  # the natural width of the component table
    assert widest(run(monkeypatch, capsys, None, "count", "llama3-8b")) <= 80  # off a terminal: 80 by default
    assert widest(run(monkeypatch, capsys, "abc", "count", "llama3-8b")) <= 80
    assert widest(run(monkeypatch, capsys, "-5", "count", "llama3-8b")) <= 80
    at_140 = run(monkeypatch, capsys, "140", "count", "llama3-8b")
    assert 80 < widest(at_140) <= 140  # a wider terminal is used
    # --wide prints each table whole: one line per component
    assert len(wide.splitlines()) < len(run(monkeypatch, capsys, "80", "count", "llama3-8b").splitlines())


def test_long_labels_become_footnotes(monkeypatch, capsys):
    out = run(monkeypatch, capsys, "80", "train", "llama3-8b", "--tokens", "1T", "--hardware", "h100-sxm")
    marks = set(re.findall(r"\[(\d+)\]", out))
    assert marks
    for n in marks:  # every mark has its footnote, a line of its own
        assert re.search(rf"^\[{n}\] \S", out, re.MULTILINE)
    wide = run(monkeypatch, capsys, "80", "train", "llama3-8b", "--tokens", "1T", "--hardware", "h100-sxm", "--wide")
    assert not re.search(r"^\[\d+\] ", wide, re.MULTILINE)


def test_alignment_in_every_format(monkeypatch, capsys):
    """Figures right-aligned, text (a unit, a name) left-aligned, in markdown and LaTeX as on the terminal."""
    args = ("infer", "llama3-8b", "--prompt", "100", "--generate", "10")
    md = run(monkeypatch, capsys, "80", *args, "--format", "markdown")
    rule = next(line for line in md.splitlines() if line.startswith("| ---"))
    assert [c.strip() for c in rule.strip("|").split("|")] == ["---", "---:", "---"]  # label, value, unit
    tex = run(monkeypatch, capsys, "80", *args, "--format", "latex")
    assert "\\begin{tabular}{lrl}" in tex
