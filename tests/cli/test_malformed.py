"""Malformed input, generated: mutations of a YAML spec and of a config.json across their fields, and odd option
values. Each run must end with exit status 2, one line on stderr naming what is wrong, no traceback, in bounded
time and memory, and leave the user's files as they were."""

import json
import os
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
    value=st.sampled_from(["inf", "nan", "1e400", "-1", "0", "9" * 5000, "x", "1e12:1", "-inf"]),
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
