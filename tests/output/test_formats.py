"""Every command in every format: JSON and CSV parse, markdown and LaTeX have their table structure."""

import csv
import io
import json

import pytest

COMMANDS = {
    "count": ["count", "mixtral-8x7b", "--seq-len", "512"],
    "count per layer": ["count", "microgpt", "--per-layer"],
    "verify": ["verify", "microgpt"],
    "compare": ["compare", "llama2-7b"],
    "compare sweep": ["compare", "--d-model", "768", "--sweep", "2:4:1"],
    "bench": ["bench", "microgpt", "--tokens", "16", "--repeats", "2", "--warmup", "0"],
    "train": ["train", "gpt3", "--tokens", "300B", "--hardware", "a100-80gb", "--gpus", "1024"],
    "infer": ["infer", "llama3-8b", "--prompt", "100", "--generate", "10", "--hardware", "h100-sxm"],
    "presets": ["presets"],
    "conventions": ["conventions"],
    "table": ["table", "gpt3", "llama3-8b", "mixtral-8x22b"],
}


TORCH = {"verify", "bench"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.torch) if n in TORCH else n for n in COMMANDS])
def test_every_format(cli, name, steady_peak):
    args = COMMANDS[name]
    code, out, err = cli(*args, "--format", "json")
    assert code == 0, err
    assert isinstance(json.loads(out), dict)  # every command's JSON is an object of stable keys

    code, out, _ = cli(*args, "--format", "csv")
    rows = list(csv.reader(io.StringIO(out)))
    assert code == 0 and len(rows) >= 2 and len({len(r) for r in rows}) == 1  # a header and same-width rows

    code, out, _ = cli(*args, "--format", "markdown")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("**")
    tables = [i for i, line in enumerate(lines) if line.startswith("| ") and set(line) <= set("|-: ")]
    assert tables, out
    for i in tables:  # the alignment row sits under a header of the same width, rows follow
        width = lines[i].count("|")
        assert lines[i - 1].count("|") - lines[i - 1].count("\\|") == width
        assert lines[i + 1].startswith("| ")

    code, out, _ = cli(*args, "--format", "latex")
    assert code == 0 and out.count("\\begin{tabular}") == out.count("\\end{tabular}") >= 1
    assert "\\toprule" in out and "\\bottomrule" in out
    for line in out.splitlines():
        if line.endswith("\\\\"):
            assert "_" not in line.replace("\\_", "") and "%" not in line.replace("\\%", "")

    code, out, _ = cli(*args, "--format", "table")
    assert code == 0 and out.strip()


def test_exact_drops_short_forms(cli):
    _, human, _ = cli("count", "gpt3")
    _, full, _ = cli("count", "gpt3", "--exact")
    assert "(174.6B)" in human and "174,604,259,328" in full and "(174.6B)" not in full


def test_table_figures(cli):
    data = json.loads(cli("table", "gpt3", "llama2-7b", "--format", "json")[1])["models"]
    gpt3, llama = data
    d, l = 12_288, 96
    assert gpt3["attention_params"] == l * (4 * d * d + 4 * d)  # q, k, v, o weights and biases
    assert gpt3["ffn_params"] == l * (2 * 4 * d * d + 4 * d + d)
    assert gpt3["ffn_share"] == 10_000 * gpt3["ffn_params"] // 174_604_259_328
    assert (llama["params"], llama["heads"], llama["ffn"], llama["d_ff"]) == (6_738_415_616, "32/32", "SwiGLU", 11008)
    code, out, err = cli("table", "gpt3", "--columns", "model,nonsense")
    assert code == 2 and "--columns: unknown nonsense" in err
