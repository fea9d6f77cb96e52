"""The two readers of a command line agree, and every example in the help runs.

A well-formed line is read by ``ffncalc.cli.parse`` from the registered commands alone (no typer, rich or
pydantic imported: the count path's speed); every other line by the typer app built from the same commands.
Here each line of a varied set is read both ways and the values each would call the command with compared;
lines the fast reader must hand over (help, errors, odd spellings) are checked to be handed over.
"""

import json
import shutil
import sys
from pathlib import Path

import pytest

from ffncalc.cli import app as _app  # noqa: F401  (registers the commands)
from ffncalc.cli import main, parse
from ffncalc.cli.options import COMMANDS, Command

HERE = Path(__file__).resolve().parents[1]

LINES = [
    ["count", "gpt3"],
    ["count", "mixtral-8x7b", "--per-layer", "--seq-len", "4096", "-c", "6n", "-f", "json"],
    ["count", "llama3-8b", "--seq-len=512", "--batch", "4", "--recompute", "full", "--exact", "--wide"],
    ["count", "config.json", "--as", "mistral"],
    ["verify", "--all", "--convention", "causal"],
    ["verify", "gpt2", "--every-layer", "--seq-len", "64", "-f", "csv"],
    ["compare", "--d-model", "768", "--d-ff", "3072", "--kind", "gated", "--no-bias", "--sweep", "1:8:1"],
    ["compare", "llama2-7b", "--to", "dense", "--activation", "gelu", "--match", "flops", "--bias"],
    ["table", "gpt3", "llama3-8b", "--columns", "model,params", "-c", "palm"],
    [
        "train",
        "gpt3",
        "--tokens",
        "300B",
        "--hardware",
        "h100-sxm",
        "--gpus",
        "1024",
        "--mfu",
        "0.45",
        "--tflops",
        "400.5",
        "--tokens-per-s",
        "1e6",
        "--zero",
        "3",
        "--reserve",
        "0.05",
        "--no-mtp",
    ],
    ["train", "deepseek-v3", "--tokens", "14.8T", "--mtp", "--dtype", "fp8", "--precision", "fp8"],
    [
        "infer",
        "llama3-70b",
        "--prompt",
        "4000",
        "--generate",
        "500",
        "--accept",
        ".7",
        "--draft",
        "3",
        "--decode",
        "expanded",
        "--kv-dtype",
        "fp8",
    ],
    ["fit", "qwen3-32b", "--hardware", "rtx4090", "--dtype", "q4_k_m", "--context", "32768"],
    [
        "infer",
        "deepseek-v3",
        "--prompt",
        "100",
        "--generate",
        "10",
        "--gpus",
        "16",
        "--pp",
        "2",
        "--ep",
        "16",
        "--link-gbs",
        "400",
        "--link-latency-us",
        "0",
        "--network-gbs",
        "25",
        "--tflops",
        "900",
        "--draft",
        "1",
        "--accept",
        "0.8",
        "--draft-model",
        "llama3-8b",
    ],
    ["train", "llama3-70b", "--tokens", "1T", "--no-sequence-parallel", "--goodput", "0.9", "--tp", "8"],
    ["fit", "llama3-70b", "--hardware", "mi300x", "--gpus", "8", "--pp", "2", "--tflops", "1000.5"],
    ["plot", "share", "gpt3", "llama3-8b", "--out", "x.svg"],
    ["plot", "sweep", "--out", "x.pdf", "--bias"],
    ["presets"],
    ["presets", "-f", "json"],
    ["presets", "show", "gpt2"],
    ["families", "-f", "csv"],
    ["conventions"],
    ["docs", "--check", "site", "--readme", "README.md"],
    ["docs", "--out", "site", "--readme", "README.md", "--pages", "site/guide", "--force"],
    ["import", "config.json", "--out", "m.yaml"],
]

HANDED_OVER = [
    [],
    ["-h"],
    ["--version"],
    ["count"],
    ["count", "--help"],
    ["count", "gpt3", "-h"],
    ["plot"],
    ["count", "gpt3", "--seq-len", "0"],  # below its bound: typer says so
    ["count", "gpt3", "--seq-len", "1_000"],  # a spelling typer reads its own way
    ["count", "gpt3", "--seq-len", " 5"],
    ["count", "gpt3", "--seq-len", "+5"],
    ["count", "gpt3", "--seq-len", "9" * 50],
    ["count", "gpt3", "-c", "bogus"],
    ["count", "gpt3", "--bogus"],
    ["count", "gpt3", "llama3-8b"],
    ["count", "gpt3", "--batch", "2", "--batch", "3"],
    ["count", "gpt3", "--per-layer=yes"],
    ["count", "gpt3", "--seq-len"],
    ["count", "gpt3", "--seq-len", "-5"],
    ["count", "--", "gpt3"],
    ["train", "gpt3", "--tokens", "1B", "--mfu", "inf"],
    ["train", "gpt3", "--tokens", "1B", "--mfu", "nan"],
    ["train", "gpt3"],  # --tokens is required
    ["infer", "gpt3", "--prompt", "1"],
    ["presets", "bogus"],
    ["plot", "bogus"],
    ["nonesuch"],
]


def _typer_values(monkeypatch, line):
    """The values the typer app would call the command with (the command itself not run)."""
    from ffncalc.cli import _typer

    seen = {}
    monkeypatch.setattr(Command, "call", lambda self, values: seen.update(path=self.path, values=values))
    _typer(list(line))
    return seen


@pytest.mark.parametrize("line", LINES, ids=" ".join)
def test_both_readers_call_the_command_with_the_same_values(monkeypatch, line):
    found = parse.read(line)
    assert found is not None, "the fast reader should answer for this line"
    command, values = found
    theirs = _typer_values(monkeypatch, line)
    assert theirs == {"path": command.path, "values": values}


@pytest.mark.parametrize("line", HANDED_OVER, ids=lambda line: " ".join(line) or "(none)")
def test_lines_needing_help_or_an_error_are_handed_to_typer(line):
    assert parse.read(line) is None


def test_every_command_has_examples_each_read_by_the_fast_reader():
    for path, command in COMMANDS.items():
        assert command.examples, f"{' '.join(path)} has no example"
        for example in command.examples:
            found = parse.read(example.split())
            assert found is not None and found[0] is command, example


def test_help_shows_the_examples_and_no_type_placeholders_for_switches(cli):
    code, out, _ = cli("count", "--help")
    assert code == 0 and "Examples:" in out and "ffncalc count gpt3" in out
    assert "<bool>" not in out
    code, out, _ = cli("--help")
    assert code == 0 and "<bool>" not in out


def test_counting_imports_no_command_line_library():
    import subprocess

    code = (
        "import sys\nfrom ffncalc.cli import main\ntry:\n    main(['count', 'gpt3'])\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write(','.join(m for m in ('typer', 'rich.console', 'pydantic', 'annotated_types') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stderr == ""


# docs' examples build the whole docs set, which tests/output/test_docs.py does; serve's run a server until it is
# stopped, which tests/web/ does as they show; they are read above like the rest
EXAMPLES = [e for path, c in COMMANDS.items() for e in c.examples if path not in (("docs",), ("serve",))]


@pytest.mark.torch  # verify, bench and plot need torch or matplotlib; the rest run in the same environment
@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_every_example_runs(example, tmp_path, monkeypatch, capsys, steady_peak):
    """Each example in the help runs as written (exit 0), in a folder holding the config.json it names."""
    shutil.copy(HERE / "hf_configs" / "llama3.2-1b.json", tmp_path / "config.json")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as exc:
        main(example.split())
    out, err = capsys.readouterr()
    assert exc.value.code in (0, None), err
    if "-f json" in example:
        json.loads(out)


@pytest.mark.parametrize(
    "words, cword, expected",
    [
        ("ffncalc cou", 1, {"count"}),
        ("ffncalc count -c megatron", 3, {"megatron", "megatron-lm"}),
        ("ffncalc count gpt2-", 2, {"gpt2-medium", "gpt2-large", "gpt2-xl"}),
        ("ffncalc presets show mixtral-8x2", 3, {"mixtral-8x22b"}),
    ],
)
def test_shell_completion_offers_commands_choices_and_presets(words, cword, expected, tmp_path):
    """What bash's completion function (ffncalc --install-completion) asks the program for, and gets."""
    import os
    import subprocess

    env = {**os.environ, "_FFNCALC_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    out = subprocess.run([sys.executable, "-m", "ffncalc"], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert expected <= set(out.stdout.split()), out.stdout
