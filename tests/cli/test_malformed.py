"""Malformed input, generated: mutations of a YAML spec and of a config.json across their fields, and odd option
values. Each run must end with exit status 2, one line on stderr naming what is wrong, no traceback, in bounded
time and memory, and leave the user's files as they were."""

import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
CONFIG = json.loads((ROOT / "tests" / "hf_configs" / "llama2-7b.json").read_text())
SPEC = {
    "vocab_size": 1000,
    "d_model": 64,
    "n_layers": 2,
    "context_length": 128,
    "attention": {"n_heads": 4},
    "ffn": {"kind": "gated", "d_ff": 172, "activation": "silu"},
}

# values no field accepts as it stands: wrong types, out of range, non-finite, huge, nested
BAD = st.one_of(
    st.sampled_from(
        [
            float("inf"),
            float("-inf"),
            float("nan"),
            -1,
            0,
            2**70,
            10**400 // 10**300,
            "x",
            "",
            True,
            [],
            {},
            [1, 2],
            {"a": 1},
            None,
            -0.5,
            1e300,
        ]
    ),
    st.text(min_size=1, max_size=20),
)
SETTINGS = settings(
    max_examples=30, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


def limits():
    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))  # memory: 3 GiB
    resource.setrlimit(resource.RLIMIT_CPU, (60, 60))


def run(args, cwd):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    return subprocess.run(
        [sys.executable, "-m", "ffncalc", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=60, preexec_fn=limits
    )


def assert_refused(out, *, allow_ok=False):
    if allow_ok and out.returncode == 0:
        return
    assert out.returncode == 2, (out.returncode, out.stderr[-2000:])
    assert "Traceback" not in out.stderr
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("ffncalc: error: "), out.stderr
    assert "\x1b" not in out.stderr


def _paths(data, prefix=()):
    """Every key path of nested mappings."""
    for k, v in data.items():
        yield prefix + (k,)
        if isinstance(v, dict):
            yield from _paths(v, prefix + (k,))


def _set(data, path, value):
    data = json.loads(json.dumps(data))
    node = data
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return data


@pytest.mark.parametrize("kind", ["yaml", "json"])
@SETTINGS
@given(data=st.data())
def test_mutated_files(tmp_path_factory, kind, data):
    """One field of a valid spec (YAML) or config.json set to a bad value: refused in one line (or, where the
    value happens to be valid for that field, counted)."""
    import yaml

    base = SPEC if kind == "yaml" else CONFIG
    path = data.draw(st.sampled_from(sorted(_paths(base), key=str)))
    value = data.draw(BAD)
    mutated = _set(base, path, value)
    folder = tmp_path_factory.mktemp("m")
    name = "spec.yaml" if kind == "yaml" else "config.json"
    if kind == "yaml":
        text = (
            yaml.safe_dump(mutated)
            if all(v == v for v in _leaves(mutated))
            else yaml.safe_dump(_set(base, path, "NaNvalue")).replace("NaNvalue", ".nan")
        )
    else:
        text = json.dumps(mutated)
    (folder / name).write_text(text)
    out = run(["count", name], folder)
    assert_refused(out, allow_ok=True)
    assert (folder / name).read_text() == text  # the user's file as it was


def _leaves(data):
    if isinstance(data, dict):
        for v in data.values():
            yield from _leaves(v)
    elif isinstance(data, float):
        yield data
    else:
        yield 0


@SETTINGS
@given(
    option=st.sampled_from(["--tokens", "--tflops", "--mfu", "--budget", "--tokens-per-s", "--gpus", "--micro-batch", "--seq-len"]),
    value=st.sampled_from(["inf", "nan", "1e400", "-1", "0", "9" * 5000, "x", "1e12:1", "-inf", "1e99999999", "1e-99999999"]),
)
def test_odd_train_options(tmp_path_factory, option, value):
    folder = tmp_path_factory.mktemp("o")
    args = ["train", "gpt2", "--tokens", "1B", "--hardware", "h100-sxm", option, value]
    out = run(args, folder)
    assert_refused(out)


@pytest.mark.parametrize(
    "args",
    [
        ["compare", "--d-model", "64", "--d-ff", "128", "--sweep", "1:1000000000:1"],
        ["compare", "--d-model", "64", "--d-ff", "128", "--sweep", "inf"],
        ["infer", "gpt2", "--prompt", "10", "--generate", "1e12"],
        ["infer", "gpt2", "--prompt", "10", "--generate", "1000000000000"],
        ["count", "/dev/zero"],
        ["count", "gpt2", "--batch", "9" * 5000],
        ["verify", "llama3-8b", "--seq-len", "1000000000000"],
    ],
)
def test_unbounded_requests_are_bounded(tmp_path, args):
    assert_refused(run(args, tmp_path))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("[" * 50_000 + "]" * 50_000, "nested too deeply"),
        ('{"model_type": ["llama"]}', "model_type: expected a string"),
        ('{"model_type": {"a": 1}}', "model_type: expected a string"),
        ("{}", "model_type: required key is missing"),
        ('{"model_type": "llama", "hidden_size": ' + "9" * 5000 + "}", "4,300 digits"),
    ],
)
def test_odd_config_json(tmp_path, text, expected):
    (tmp_path / "config.json").write_text(text)
    out = run(["count", "config.json"], tmp_path)
    assert_refused(out)
    assert expected in out.stderr


def test_duplicate_yaml_keys_and_escapes(tmp_path):
    (tmp_path / "dup.yaml").write_text("d_model: 64\nd_model: 128\n")
    out = run(["count", "dup.yaml"], tmp_path)
    assert_refused(out)
    assert "dup.yaml:2: duplicate key" in out.stderr
    spec = dict(SPEC, name="\x1b[31mred\x1b[0m" + "n" * 5000)
    (tmp_path / "esc.yaml").write_text(json.dumps(spec))
    out = run(["count", "esc.yaml"], tmp_path)
    assert out.returncode == 0 and "\x1b" not in out.stdout and "\\x1b[31mred" in out.stdout


def test_odd_environments(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "ascii", "COLUMNS": "abc"}
    out = subprocess.run([sys.executable, "-m", "ffncalc", "count", "llama3-8b"], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0 and "Traceback" not in out.stderr
    assert "\\xd7" in out.stdout  # × written as an escape, not an error
    with open("/dev/full", "w") as full:
        out = subprocess.run(
            [sys.executable, "-m", "ffncalc", "count", "gpt2"], stdout=full, stderr=subprocess.PIPE, text=True, env=env, timeout=60
        )
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "No space left" in out.stderr
    out = subprocess.run(
        [sys.executable, "-m", "ffncalc", "count", "gpt2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=60,
        preexec_fn=lambda: os.close(1),
    )
    assert out.returncode == 2 and "standard output is closed" in out.stderr


# --- each class of bad input, hardened at its root: one generated test a class ---------------------------------------

MODEL_COMMANDS = [
    ["count"],
    ["compare"],
    ["table"],
    ["train", "--tokens", "1B", "--hardware", "h100-sxm"],
    ["infer", "--prompt", "8", "--generate", "8"],
    ["fit", "--hardware", "h100-sxm"],
    ["bench", "--device", "cpu"],
    ["verify"],
    ["import"],
]


@SETTINGS
@given(command=st.sampled_from(MODEL_COMMANDS), name=st.sampled_from(["", " ", "a" * 5000, "a/" * 2500, "n" * 256, "é" * 300]))
def test_model_names_that_name_nothing(tmp_path_factory, command, name):
    """An empty name (the current folder is not meant) and one longer than the file system takes a name (255 bytes)
    or a path (4,096): one line that names the argument."""
    out = run([command[0], name, *command[1:]], tmp_path_factory.mktemp("n"))
    assert_refused(out)
    if name.strip():
        assert name[:20] in out.stderr and "File name too long" in out.stderr
    else:
        assert re.search(r"^ffncalc: error: (model|models|config): empty; give ", out.stderr)


@pytest.mark.parametrize(
    "args",
    [
        ["docs", "--out", ""],
        ["docs", "--check", "site", "--readme", " "],
        ["bench", "gpt2", "--out", ""],
        ["plot", "sweep", "--d-model", "64", "--bench-results", "", "--out", "s.svg"],
        ["count", "gpt2", "--as", ""],
        ["verify", "--hf", ""],
        ["table", "gpt2", ""],
    ],
)
def test_empty_values_name_nothing(tmp_path, args):
    """An empty value names no file, folder or family (not the current folder, not the option left out): one line
    that names the option, and nothing written."""
    out = run(args, tmp_path)
    assert_refused(out)
    assert "empty" in out.stderr and list(tmp_path.iterdir()) == []


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    digits=st.text("0123456789", min_size=1, max_size=40),
    point=st.integers(0, 40),
    exponent=st.one_of(st.integers(-60, 60), st.integers(-(10**12), 10**12)),
    suffix=st.sampled_from(["", "k", "M", "B", "T"]),
)
def test_counts_of_any_exponent(digits, point, exponent, suffix):
    """--tokens and --budget: a count of any exponent is its exact whole number from 1 to 1e30, or refused in one
    line; the exponent's size is judged before any arithmetic (1e99999999 once overflowed the decimal parser)."""
    from fractions import Fraction

    from ffncalc.analysis.training import parse_count
    from ffncalc.errors import InputError

    point = min(point, len(digits))
    mantissa = digits[: len(digits) - point] + "." + digits[len(digits) - point :] if point else digits
    text = f"{mantissa}e{exponent}{suffix}"
    # by hand: int(digits) · 10^(exponent - point + the suffix's power of ten)
    n, e = int(digits), exponent - point + {"": 0, "k": 3, "M": 6, "B": 9, "T": 12}[suffix]
    expected = None
    if n and -100 < e <= 30:
        value = Fraction(n) * Fraction(10) ** e
        expected = int(value) if value.denominator == 1 and 1 <= value <= 10**30 else None
    if expected is None:
        with pytest.raises(InputError, match=r"^--tokens .*: (must be a positive whole number|beyond the limit of 1e30)$"):
            parse_count(text, "--tokens")
    else:
        assert parse_count(text, "--tokens") == expected


def test_huge_counts_on_the_command_line(tmp_path):
    for option in ("--tokens", "--budget"):
        out = run(["train", "gpt2", "--tokens", "1B", "--hardware", "h100-sxm", option, "1e99999999"], tmp_path)
        assert_refused(out)
        assert "beyond the limit of 1e30" in out.stderr


def _depth_keys():
    """(recorded config, the key path of its depth) for every recorded config of a supported type that states one."""
    from ffncalc.sources.hf.coverage import ENCODERS_NOT_YET, SEQ2SEQ_NOT_YET

    out = []
    for folder in ("hf_configs", "hf_defaults/configs"):
        for path in sorted((ROOT / "tests" / folder).glob("*.json")):
            data = json.loads(path.read_text())
            if data.get("model_type") in {**ENCODERS_NOT_YET, **SEQ2SEQ_NOT_YET}:  # recorded for the coverage table alone
                continue
            for prefix in ((), ("text_config",)):
                node = data
                for k in prefix:
                    node = node.get(k) if isinstance(node, dict) else None
                for key in ("num_hidden_layers", "n_layer", "n_layers", "num_layers", "num_layers_per_stack", "H_cycles", "L_cycles"):
                    if isinstance(node, dict) and isinstance(node.get(key), int) and not isinstance(node.get(key), bool):
                        out.append((path, prefix + (key,)))
    return out


DEPTH_KEYS = _depth_keys()


@SETTINGS
@given(found=st.sampled_from(DEPTH_KEYS), depth=st.sampled_from([2**11 + 1, 10**5, 10**8, 10**12, 2**40]))
def test_depths_past_the_bound(tmp_path_factory, found, depth):
    """A config.json of 10⁸ or 10¹² layers (or cycles of a stack) is refused in one line that names the bound,
    before any per-layer list is built; or, where its family reads another key for the depth, counted as the
    config is without it."""
    path, key = found
    folder = tmp_path_factory.mktemp("d")
    (folder / "config.json").write_text(json.dumps(_set(json.loads(path.read_text()), key, depth)))
    out = run(["count", "config.json", "-f", "json"], folder)
    if out.returncode == 0:  # a key this family does not read (another name states the depth)
        (folder / "config.json").write_text(path.read_text())
        assert run(["count", "config.json", "-f", "json"], folder).stdout == out.stdout
        return
    assert_refused(out)
    assert "beyond the limit of 2,048" in out.stderr and "layers" in out.stderr


@pytest.mark.parametrize("depth", [2**11 + 1, 10**8, 10**12, 2**40])
@pytest.mark.parametrize("grouped", [False, True])
def test_spec_depths_past_the_bound(tmp_path, depth, grouped):
    """A spec's n_layers, or a layer group's repeat, past the bound: one line that names the bound."""
    spec = dict(SPEC, n_layers=depth)
    if grouped:
        spec["layers"] = [{"repeat": depth - 1}, {"repeat": 1, "attention": {"n_heads": 2}}]
    (tmp_path / "spec.yaml").write_text(json.dumps(spec))
    out = run(["count", "spec.yaml"], tmp_path)
    assert_refused(out)
    assert ("n_layers" in out.stderr or "repeat" in out.stderr) and "beyond the limit of 2,048" in out.stderr


def test_the_deepest_stack_allowed_is_counted_exactly(tmp_path):
    """2,048 layers, every one unlike the next (alternating window sizes): counted exactly, and planned, within the
    suite's CPU limit. By hand, a layer of d = 64: attention 4·64² weights, a SwiGLU of 3·64·172, two RMSNorms of 64;
    the table 1,000 × 64 untied from the head, and a final norm."""
    groups = [{"repeat": 1, "attention": {"n_heads": 4, "window": 16 + i % 2}} for i in range(2048)]
    (tmp_path / "deep.yaml").write_text(json.dumps(dict(SPEC, n_layers=2048, layers=groups)))
    out = run(["count", "deep.yaml", "--per-layer", "-f", "json"], tmp_path)
    assert out.returncode == 0, out.stderr
    layer = 4 * 64 * 64 + 3 * 64 * 172 + 2 * 64
    assert json.loads(out.stdout)["totals"]["params"] == 2 * 1000 * 64 + 2048 * layer + 64
    for args in (
        ["train", "deep.yaml", "--tokens", "1B", "--hardware", "h100-sxm"],
        ["infer", "deep.yaml", "--prompt", "8", "--generate", "8"],
    ):
        out = run(args, tmp_path)
        assert out.returncode == 0, out.stderr


def _flat_and_merged(kv, width, listed):
    head = "vocab_size: 1000\nd_model: 64\nn_layers: 2\ncontext_length: 128\n"
    flat = head + (
        "attention: {n_heads: 4, n_kv_heads: 4}\nffn: {kind: gated, d_ff: 172, activation: silu}\nlayers:\n  - repeat: 1\n"
        f"  - repeat: 1\n    attention: {{n_heads: 4, n_kv_heads: {kv}}}\n    ffn: {{kind: gated, d_ff: {width}, activation: silu}}\n"
    )
    merge = "[*attn]" if listed else "*attn"
    merged = head + (
        "attention: &attn {n_heads: 4, n_kv_heads: 4}\nffn: &ffn {kind: gated, d_ff: 172, activation: silu}\nlayers:\n"
        f"  - repeat: 1\n  - repeat: 1\n    attention: {{<<: {merge}, n_kv_heads: {kv}}}\n    ffn:\n      <<: *ffn\n"
        f"      d_ff: {width}\n"
    )
    return flat, merged


@settings(max_examples=50, derandomize=True, deadline=None)
@given(kv=st.sampled_from([1, 2, 4]), width=st.integers(1, 4096), listed=st.booleans())
def test_yaml_merge_keys(kv, width, listed):
    """A variant written with a merge key (``<<: *base``, plain YAML that safe_load reads) is the spec written out in
    full; a key it states overrides the base's."""
    from ffncalc.sources.yaml import parse_spec

    flat, merged = _flat_and_merged(kv, width, listed)
    assert parse_spec(merged, "merged.yaml") == parse_spec(flat, "flat.yaml")


@pytest.mark.parametrize("value", ["5", "[1, 2]", "x", "[*a, 3]"])
def test_a_merge_of_no_mapping_is_no_tag(value):
    from ffncalc.errors import InputError
    from ffncalc.sources.yaml import parse_spec

    with pytest.raises(InputError) as exc:
        parse_spec(f"a: &a {{n: 1}}\nb: {{<<: {value}}}\n", "m.yaml")
    assert "m.yaml:2: " in str(exc.value) and "tag" not in str(exc.value) and "merging" in str(exc.value)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(d_model=st.integers(1, 2**20), multiple_of=st.integers(1, 4096), multiplier=st.floats(1e-12, 1e12))
def test_derived_widths_are_widths(d_model, multiple_of, multiplier):
    """Llama's width rule with any multiplier: the width it derives (by hand, as meta-llama's FeedForward computes
    it) is counted where it is a width, from 1 to 2^40, and refused in one line that names ffn.d_ff where it rounds
    to zero or passes the bound."""
    import math

    import yaml

    from ffncalc.errors import InputError
    from ffncalc.sources.yaml import parse_spec

    hidden = int(multiplier * int(2 * (4 * d_model) / 3))
    expected = multiple_of * math.ceil(hidden / multiple_of)
    spec = dict(SPEC, d_model=d_model, attention={"n_heads": 1})
    spec["ffn"] = {"kind": "gated", "d_ff": {"rule": "llama", "multiple_of": multiple_of, "multiplier": multiplier}}
    text = yaml.safe_dump(spec)  # floats as YAML writes them (1.0e-06: YAML 1.1 reads 1e-06 as text)
    if 0 < expected <= 2**40:
        assert parse_spec(text, "w.yaml").layers[0].ffn.d_ff == expected
    else:
        with pytest.raises(InputError, match=r"^w\.yaml:\d+: ffn\.d_ff: the llama rule gives a width of "):
            parse_spec(text, "w.yaml")


@settings(max_examples=50, derandomize=True, deadline=None)
@given(text=st.text(", \t", max_size=8), option=st.sampled_from(["--ratios", "--sweep"]))
def test_ratio_lists_of_no_ratio(text, option):
    from ffncalc.analysis.compare import parse_ratios
    from ffncalc.errors import InputError

    with pytest.raises(InputError, match=f"^{option} .*: "):
        parse_ratios(text, option)


@pytest.mark.parametrize("ratios", ["", ",,,"])
def test_plot_sweep_of_no_ratio(tmp_path, ratios):
    out = run(["plot", "sweep", "--d-model", "64", "--ratios", ratios, "--out", "s.svg"], tmp_path)
    assert_refused(out)
    assert "--ratios" in out.stderr and ("no ratio given" in out.stderr or "is empty" in out.stderr)
    assert not (tmp_path / "s.svg").exists()


def _nested_files(folder: Path, kind: str) -> tuple[list[str], str]:
    """A file of ``kind`` whose JSON (or YAML) nests 100,000 deep, and the command that reads it."""
    deep = "[" * 100_000 + "]" * 100_000
    if kind == "config":
        (folder / "config.json").write_text('{"model_type": "llama", "x": ' + deep + "}")
        return ["count", "config.json"], "config.json"
    if kind == "bench-results":
        (folder / "bench.json").write_text(deep)
        return ["plot", "sweep", "--d-model", "64", "--bench-results", "bench.json", "--out", "s.svg"], "bench.json"
    if kind == "hardware-file":
        (folder / "hw.yaml").write_text(deep)
        return ["train", "gpt2", "--tokens", "1B", "--hardware", "h100-sxm", "--hardware-file", "hw.yaml"], "hw.yaml"
    if kind == "safetensors":
        header = ('{"a": ' + deep + "}").encode()
        (folder / "w.safetensors").write_bytes(len(header).to_bytes(8, "little") + header)
        return ["count", "w.safetensors"], "w.safetensors"
    (folder / "ckpt").mkdir()
    (folder / "ckpt" / "model.safetensors.index.json").write_text('{"weight_map": ' + deep + "}")
    return ["count", "ckpt"], "model.safetensors.index.json"


@pytest.mark.parametrize("kind", ["config", "bench-results", "hardware-file", "safetensors", "index"])
def test_nesting_past_the_parser_names_the_file(tmp_path, kind):
    args, name = _nested_files(tmp_path, kind)
    out = run(args, tmp_path)
    assert_refused(out)
    assert name in out.stderr and "nested too deeply" in out.stderr


@SETTINGS
@given(data=st.data())
def test_a_failed_write_of_a_set_leaves_nothing(tmp_path_factory, data):
    """docs --out writes a set of files in folders it makes: where any one cannot be written, the folders it made
    are gone again, and what was there before is as it was."""
    from ffncalc.errors import InputError
    from ffncalc.files import write_all

    root = tmp_path_factory.mktemp("w")
    (root / "theirs.txt").write_text("kept")
    paths = data.draw(
        st.lists(st.lists(st.sampled_from("abc"), min_size=1, max_size=4).map("/".join), min_size=1, max_size=6, unique=True)
    )
    paths = [p + ".md" for p in paths]
    bad = data.draw(st.sampled_from(paths))
    (root / "out").mkdir()
    before = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    blocked = root / "out" / "blocked"  # a file where a folder must go: that write fails
    blocked.write_text("")
    files = {root / "out" / "set" / p: "x" for p in paths} | {root / "out" / "blocked" / "sub" / bad: "x"}
    with pytest.raises(InputError):
        write_all(files)
    blocked.unlink()
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == before
    assert (root / "theirs.txt").read_text() == "kept"


INTERRUPT = """
import os, signal, sys
from ffncalc.output import docs
from ffncalc.analysis import count
from ffncalc.cli import main
docs.build = lambda verify=True: {"index.md": b"x"}
def interrupted(*args, **kw):
    os.kill(os.getpid(), getattr(signal, sys.argv[1]))
    signal.pause()
count.tally = interrupted
main(["docs", "--out", "site", "--readme", "README.md"])
"""


@pytest.mark.parametrize("signal_name, code", [("SIGINT", 130), ("SIGTERM", 143), ("SIGHUP", 129)])
def test_an_interrupted_docs_run_exits_as_interrupted(tmp_path, signal_name, code):
    """A signal while docs runs an example stops the run with the signal's exit status (128 + its number), not the
    example's, and nothing is written."""
    (tmp_path / "README.md").write_text("```text\n$ ffncalc count gpt2\n```\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", INTERRUPT, signal_name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        preexec_fn=limits,
    )
    assert out.returncode == code, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "site").exists() and (tmp_path / "README.md").read_text().endswith("```\n")
