"""The command line: every output format, presets, and every kind of bad input."""

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# GPT-3 175B (Brown et al. 2020, Table 2.1: 96 layers, d_model 12288, context 2048; GPT-2's 50,257-token
# vocabulary, the head tied to it): token and position embeddings; per layer Q, K, V, O (4d² + 4d biases),
# the 4d-wide FFN (8d² + 4d + d biases) and two LayerNorms (4d); the final LayerNorm (2d).
D = 12288
GPT3 = 50257 * D + 2048 * D + 96 * (12 * D**2 + 13 * D) + 2 * D
# Mixtral 8x7B (Jiang et al. 2024, Table 1: 32 layers, dim 4096, 32 heads and 8 KV heads of 128, experts
# 14336 wide, 8 experts and 2 per token, vocabulary 32000, head untied, RMSNorm without bias)
EXPERT = 3 * 4096 * 14336  # gate, up and down
MIXTRAL_SHARED = 2 * 32000 * 4096 + 4096 + 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 8 + 2 * 4096)
MIXTRAL = MIXTRAL_SHARED + 32 * 8 * EXPERT
MIXTRAL_ACTIVE = MIXTRAL_SHARED + 32 * 2 * EXPERT
# Llama 2 7B (Touvron et al. 2023: 32 layers, d 4096, SwiGLU 11008, vocabulary 32000, head untied)
LLAMA2_7B = 2 * 32000 * 4096 + 4096 + 32 * (4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096)


def counted(cli, *args):
    code, out, err = cli("count", *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_count_gpt3_table(cli):
    code, out, err = cli("count", "gpt3")
    assert code == 0 and err == ""
    assert f"{GPT3:,}" in out and "174.6B" in out
    assert "convention: exact" in out
    assert "ffn.up.weight" in out and "49152×12288" in out


def test_count_json_is_integers(cli):
    data = counted(cli, "gpt3")
    assert data["convention"]["name"] == "exact"
    assert data["totals"]["params"] == GPT3
    for row in data["components"]:
        for key in ("count", "params", "active_params", "matrices", "forward_flops_per_token", "elementwise_flops_per_token"):
            assert isinstance(row[key], int) and not isinstance(row[key], bool)
    assert all(isinstance(v, int) for v in data["totals"].values())


def test_3b1b_printed(cli):
    code, out, _ = cli("count", "gpt3", "--convention", "3b1b")
    assert code == 0
    assert "175,181,291,520" in out and "27,938" in out
    assert "convention: 3b1b" in out
    for figure in (50257 * D, 96 * D**2, 96 * D * 4 * D):  # the embedding, Q (or K, V, O), the FFN up (or down)
        assert f"{figure:,}" in out


def test_markdown(cli):
    code, out, _ = cli("count", "llama2-7b", "--format", "markdown")
    assert code == 0
    assert "| component |" in out and f"{LLAMA2_7B:,}" in out and "convention: exact" in out


def test_csv_rows_sum_to_total(cli):
    code, out, _ = cli("count", "mixtral-8x7b", "--format", "csv", "-c", "causal")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    total = rows[-1]
    assert total["component"] == "total" and total["convention"] == "causal"
    assert int(total["params"]) == MIXTRAL == sum(int(r["params"]) for r in rows[:-1])
    assert int(total["active_params"]) == MIXTRAL_ACTIVE


def test_moe_table_shows_active(cli):
    code, out, _ = cli("count", "mixtral-8x7b")
    assert code == 0 and "active per token" in out and f"{MIXTRAL_ACTIVE:,}" in out


def test_seq_len_and_batch(cli):
    data = counted(cli, "gpt2", "--seq-len", "512", "--batch", "3")
    assert (data["seq_len"], data["batch"], data["tokens"]) == (512, 3, 1536)
    d, l, v, s = 768, 12, 50_257, 512
    per_token = l * (2 * 12 * d * d + 2 * 2 * s * d) + 2 * d * v
    assert data["totals"]["forward_flops"] == per_token * 3 * 512


def test_per_layer_splits_runs(cli, tmp_path):
    spec = tmp_path / "stack.yaml"
    spec.write_text(
        "vocab_size: 1000\nd_model: 64\nn_layers: 4\ncontext_length: 128\n"
        "attention: {n_heads: 4}\n"
        "ffn: {kind: moe, n_experts: 8, top_k: 2, expert: {kind: gated, d_ff: 32}}\n"
        "layers:\n  - {repeat: 1, ffn: {kind: gated, d_ff: 256}}\n  - {repeat: 3}\n"
    )
    merged = counted(cli, str(spec))
    split = counted(cli, str(spec), "--per-layer")
    assert merged["totals"] == split["totals"]
    q = [r for r in split["components"] if r["component"] == "attn.q.weight"]
    assert [r["layers"] for r in q] == [[0, 1], [1, 4]]
    assert [r["params"] for r in q] == [64 * 64, 3 * 64 * 64]
    up = [r for r in split["components"] if r["component"] == "ffn.up.weight"]
    assert up[0]["layers"] == [0, 1] and up[0]["params"] == 64 * 256
    code, out, _ = cli("count", str(spec), "--per-layer")
    assert code == 0 and "1–3" in out


def test_presets_list(cli):
    code, out, _ = cli("presets", "--format", "json")
    assert code == 0
    entries = {e["name"]: e for e in json.loads(out)["presets"]}
    expected = {
        "gpt3-125m",
        "gpt3-350m",
        "gpt3-760m",
        "gpt3-1.3b",
        "gpt3-2.7b",
        "gpt3-6.7b",
        "gpt3-13b",
        "gpt3-175b",
        "gpt2",
        "gpt2-medium",
        "gpt2-large",
        "gpt2-xl",
        "llama2-7b",
        "llama2-13b",
        "llama2-70b",
        "llama3-8b",
        "llama3-70b",
        "llama3.1-405b",
        "mistral-7b",
        "mixtral-8x7b",
        "mixtral-8x22b",
        "microgpt",
    }
    assert expected <= set(entries)
    assert entries["gpt3-175b"]["aliases"] == ["gpt3"]
    assert entries["mixtral-8x7b"]["active_params"] == MIXTRAL_ACTIVE
    code, out, _ = cli("presets")
    assert code == 0 and "mixtral-8x22b" in out and "gpt3-175b (alias gpt3)" in out


def test_presets_cite_sources():
    from ffncalc.sources import presets

    for name in presets.names():
        first = presets.text(name).splitlines()[0]
        assert first.startswith("# ") and len(first) > 20, name


def test_presets_show_round_trips(cli, tmp_path):
    from ffncalc.sources import presets

    for name in presets.names():
        code, out, _ = cli("presets", "show", name)
        assert code == 0
        path = tmp_path / f"{name}.yaml"
        path.write_text(out)
        assert counted(cli, str(path))["totals"] == counted(cli, name)["totals"], name


def test_conventions_listed(cli):
    code, out, _ = cli("conventions", "--format", "json")
    names = [c["name"] for c in json.loads(out)["conventions"]]
    assert code == 0
    assert {"exact", "causal", "kaplan", "chinchilla", "megatron", "palm", "6n", "3b1b"} <= set(names)


def test_every_convention_prints_its_name(cli):
    for conv in ("exact", "causal", "kaplan", "chinchilla", "megatron", "palm", "6n", "3b1b"):
        code, out, _ = cli("count", "llama3-8b", "-c", conv)
        assert code == 0 and f"convention: {conv}" in out


# --- bad input --------------------------------------------------------------------------------

SPEC = "vocab_size: 100\nd_model: 64\nn_layers: 2\ncontext_length: 16\n"


@pytest.mark.parametrize(
    "text,expected",
    [
        (SPEC + "attention:\n  n_heads: 5\nffn: {kind: dense, d_ff: 8}\n", ":6: attention.n_heads: 5 heads do not divide d_model 64"),
        (
            SPEC + "attention:\n  n_heads: 4\n  n_kv_heads: 3\nffn: {kind: dense, d_ff: 8}\n",
            ":7: attention.n_kv_heads: 3 KV heads do not divide 4 query heads",
        ),
        (SPEC + "attention: {n_heads: 4}\nffn:\n  kind: gated\n  d_ff: 0\n", ":8: ffn.d_ff: Input should be greater than 0"),
        (SPEC + "attention: {n_heads: 4}\nffn:\n  kind: dense\n  d_ff: -3\n", ":8: ffn.d_ff: Input should be greater than 0"),
        (SPEC + "attention: {n_heads: 4}\nffn:\n  kind: dense\n  d_ff: 8\n  colour: red\n", ":9: ffn.colour: unknown key"),
        (SPEC + "attention: {n_heads: 4}\nffn: {kind: dense, d_ff: 8}\nhidden: 3\n", ":7: hidden: unknown key"),
        (
            "vocab_size: 100\nd_model: '64'\nn_layers: 2\ncontext_length: 16\nattention: {n_heads: 4}\nffn: {kind: dense, d_ff: 8}\n",
            ":2: d_model: Input should be a valid integer",
        ),
        (
            SPEC + "attention: {n_heads: 4}\nffn:\n  kind: moe\n  n_experts: 4\n  top_k: 5\n  expert: {kind: gated, d_ff: 8}\n",
            ":9: ffn.top_k: top_k 5 exceeds n_experts 4",
        ),
        (SPEC + "attention: {n_heads: 4}\nffn:\n  kind: dense\n", ":6: ffn.d_ff: required field is missing"),
        (SPEC + "ffn: {kind: dense, d_ff: 8}\n", "attention: required field is missing"),
        (SPEC + "attention: {n_heads: 4}\nffn: {kind: tiny, d_ff: 8}\n", ":6: ffn: Input tag 'tiny'"),
        (SPEC + "attention: {n_heads: 4}\nffn: {kind: dense, d_ff: 8, activation: swish}\n", ":6: ffn.activation: Input should be"),
        (
            SPEC + "attention: {n_heads: 4}\nffn: {kind: dense, d_ff: 8}\nlayers:\n  - {repeat: 1}\n",
            ":7: layers: layer groups repeat 1 layers in all, but n_layers is 2",
        ),
        ("vocab_size: [1\n", ":2: YAML syntax error"),
        ("", "empty file"),
        ("- 1\n- 2\n", ":1: the document is a list, not a mapping"),
        ("just a string\n", ":1: the document is a str, not a mapping"),
    ],
)
def test_bad_spec_files(cli, tmp_path, text, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    code, out, err = cli("count", str(path))
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"ffncalc: error: {path}")
    assert expected in err


def test_python_tag_is_never_executed(cli, tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.yaml"
    path.write_text(f'vocab_size: !!python/object/apply:os.system ["touch {marker}"]\n')
    code, _, err = cli("count", str(path))
    assert code == 2 and "YAML tag not allowed" in err and f"{path}:1" in err
    assert not marker.exists()


@pytest.mark.parametrize(
    "args,expected",
    [
        (["count", "gpt-3"], "unknown preset 'gpt-3'; closest: gpt3"),
        (["count", "lama2-7b"], "closest: llama2-7b"),
        (["count", "missing.yaml"], "missing.yaml: no such file"),
        (["count", "gpt3", "--convention", "flops"], "Invalid value for '--convention'"),
        (["count", "gpt3", "--format", "xml"], "Invalid value for '--format'"),
        (["count", "gpt3", "--seq-len", "0"], "--seq-len"),
        (["count", "gpt3", "--batch", "-1"], "--batch"),
        (["count", "gpt3", "--seq-len", "4096"], "--seq-len 4096 exceeds context_length 2048"),
        (["count", "gpt3", "--recompute", "some"], "Invalid value for '--recompute'"),
        (["count"], "Missing argument"),
        (["presets", "show", "gpt5"], "unknown preset 'gpt5'"),
    ],
)
def test_bad_arguments(cli, args, expected):
    code, out, err = cli(*args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and expected in err


def test_directory_is_not_a_spec(cli, tmp_path):
    code, _, err = cli("count", str(tmp_path))
    assert code == 2 and "is a directory" in err


def test_unreadable_file(cli, tmp_path):
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"\xff\xfe\x00bad")
    code, _, err = cli("count", str(path))
    assert code == 2 and "not UTF-8" in err


def _script():
    beside = Path(sys.executable).parent / "ffncalc"
    exe = str(beside) if beside.exists() else shutil.which("ffncalc")
    assert exe, "the ffncalc console script is not installed"
    return exe


def test_console_script_from_any_directory(tmp_path):
    """The installed command finds its presets from an unrelated directory and reads files there."""
    out = subprocess.run([_script(), "count", "gpt3", "--format", "json"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["totals"]["params"] == GPT3
    (tmp_path / "mine.yaml").write_text(
        subprocess.run([_script(), "presets", "show", "llama2-7b"], cwd=tmp_path, capture_output=True, text=True).stdout
    )
    out = subprocess.run([_script(), "count", "mine.yaml", "-f", "json"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["totals"]["params"] == LLAMA2_7B


def test_module_entry_point_bad_input_has_no_traceback(tmp_path):
    (tmp_path / "bad.yaml").write_text(
        SPEC.replace("d_model: 64", "d_model: 0") + "attention: {n_heads: 4}\nffn: {kind: dense, d_ff: 8}\n"
    )
    out = subprocess.run([sys.executable, "-m", "ffncalc", "count", "bad.yaml"], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("ffncalc: error: bad.yaml:2: d_model:") and "Traceback" not in out.stderr


def test_help_keeps_its_defaults(cli):
    code, out, _ = cli("count", "--help")
    assert code == 0 and "the model's context" in " ".join(out.split())


def test_narrow_terminal_never_cuts_a_figure(capsys, monkeypatch):
    from ffncalc.cli import main

    monkeypatch.setenv("COLUMNS", "60")
    with pytest.raises(SystemExit):
        main(["count", "mixtral-8x7b"])
    out = capsys.readouterr().out
    assert "…" not in out
    # the totals, one expert matrix over 32 layers × 8 experts, its forward FLOPs (2 per multiply-add, 2 experts
    # a token), the embedding
    for figure in (MIXTRAL, MIXTRAL_ACTIVE, 32 * 8 * 4096 * 14336, 2 * 2 * 32 * 4096 * 14336, 32000 * 4096):
        assert f"{figure:,}" in out


def test_short_help_and_version(cli):
    from importlib.metadata import version

    code, out, _ = cli("-h")
    assert code == 0 and "count" in out and "Usage" in out
    code, out, _ = cli("count", "-h")
    assert code == 0 and "--seq-len" in out
    code, out, _ = cli("--version")
    assert code == 0 and out == f"ffncalc {version('ffncalc')}\n"


@pytest.mark.parametrize("columns", ["60", "130", "200"])
@pytest.mark.parametrize(
    "args",
    [
        ["count", "gpt3"],
        ["count", "mixtral-8x7b", "--per-layer"],
        ["count", "deepseek-v3", "--convention", "6n"],
        ["count", "gemma-3-27b"],
        ["count", "gpt3", "--convention", "3b1b"],
        ["compare", "llama2-7b"],
        ["compare", "--d-model", "768", "--sweep", "2:4:1"],
        ["train", "gpt3", "--tokens", "300B", "--gpus", "1024"],
        ["infer", "llama3-8b", "--prompt", "100", "--generate", "10"],
        ["table", "gpt3", "llama3-8b", "mixtral-8x22b"],
        ["presets"],
        ["conventions"],
    ],
)
def test_plain_text_is_what_rich_prints(capsys, monkeypatch, args, columns):
    """Off a terminal, tables are written without rich's console: the same bytes as rich prints there."""
    from ffncalc.cli import main, options

    monkeypatch.setenv("COLUMNS", columns)
    printed = []
    for plain in (True, False):
        monkeypatch.setattr(options, "plain", lambda plain=plain: plain)
        with pytest.raises(SystemExit) as exc:
            main(list(args))
        printed.append((exc.value.code, capsys.readouterr().out))
    assert printed[0] == printed[1] and printed[0][0] == 0


def test_explain_names_every_figure_the_planning_commands_print(cli):
    """Each figure key of a train, an infer and a fit run is explained, with its unit; a convention by name too."""
    _, out, _ = cli("explain", "-f", "json")
    known = {e["term"]: e for e in json.loads(out)["explain"]}
    for args in (
        ["train", "llama3-8b", "--tokens", "15T", "--hardware", "h100-sxm", "--gpus", "64", "--tp", "8"],
        ["infer", "llama3-8b", "--prompt", "1000", "--generate", "100", "--hardware", "h100-sxm"],
        ["fit", "qwen3-32b", "--hardware", "rtx4090", "--dtype", "q4_k_m"],
    ):
        code, out, _ = cli(*args, "-f", "json")
        assert code == 0
        for key, figure in json.loads(out)["figures"].items():
            assert key in known, key
            assert known[key]["unit"] == figure["unit"] and known[key]["source"]
    assert {"6n", "palm", "megatron-lm", "executed", "useful"} <= set(known)


def test_explain_one_term_and_an_unknown_one(cli):
    code, out, _ = cli("explain", "mfu", "-f", "json")
    found = json.loads(out)["explain"]
    assert code == 0 and [e["term"] for e in found] == ["mfu"] and "Chowdhery" in found[0]["source"]
    code, out, err = cli("explain", "tokens_per_sec")
    assert code == 2 and out == "" and err.count("\n") == 1 and "nearest: tokens_per_s" in err
