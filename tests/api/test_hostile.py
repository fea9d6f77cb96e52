"""The library's keyword arguments under hostile values: every keyword of every question, given a value of the
wrong type, out of range, not finite, enormous or a name no file system holds, answers or raises
``ffncalc.InputError`` (with the keyword named); never another exception, a hang or an exit."""

import inspect
import math

import pytest

import ffncalc

# what each question needs besides the keyword under test (the smallest sensible call)
BASE = {
    "count": {"model": "gpt2"},
    "compare": {"model": "gpt2"},
    "train": {"model": "gpt2", "tokens": "1B"},
    "infer": {"model": "gpt2", "prompt": 100, "generate": 10},
    "fit": {"model": "gpt2", "hardware": "h100-sxm"},
    "table": {"models": ["gpt2"]},
}
SKIP = {"progress", "bench", "out", "hardware_file"}  # timing needs torch (its own tests); files are tested apart
HOSTILE = [
    -1,
    0,
    10**40,
    -(10**40),
    float("nan"),
    float("inf"),
    -0.5,
    True,
    "",
    "x" * 5000,
    "1e99999999",
    "nope",
    [1],
    {"a": 1},
    object(),
]


def cases():
    for name, base in BASE.items():
        fn = getattr(ffncalc, name)
        for kw in inspect.signature(fn).parameters:
            if kw in SKIP or kw in ("model", "models") and name != "table":
                continue
            for value in HOSTILE:
                yield pytest.param(name, base, kw, value, id=f"{name}-{kw}-{type(value).__name__}-{str(value)[:12]}")


def test_every_question_has_cases():
    """The enumeration below covers each question's keywords (a renamed keyword cannot drop out unseen)."""
    seen = {(name, kw) for name, _, kw, _ in (c.values for c in cases())}
    assert ("train", "tokens") in seen and ("infer", "batch") in seen and ("count", "seq_len") in seen
    assert ("fit", "hardware") in seen and ("compare", "multiple_of") in seen and ("table", "models") in seen
    assert len(seen) > 60


@pytest.mark.parametrize("name, base, kw, value", list(cases()))
def test_a_hostile_keyword_answers_or_raises_input_error(name, base, kw, value):
    call = {**base, kw: value}
    try:
        result = getattr(ffncalc, name)(**call)
    except ffncalc.InputError as exc:
        text = str(exc)
        assert "\n" not in text and len(text) < 1200, text
        return
    # an answer: a value the keyword accepts (a bool where a flag is, 0 where none is allowed); its figures finite
    for value in result.to_dict().values() if hasattr(result, "to_dict") else []:
        if isinstance(value, float):
            assert not math.isnan(value), (kw, value)


@pytest.mark.parametrize("source", ["x" * 5000, "a/" + "y" * 300 + "/spec.yaml", "\0", " "])
@pytest.mark.parametrize("name", ["count", "train", "infer", "fit", "compare"])
def test_a_model_no_file_system_can_hold_is_input_error(name, source):
    """A model argument no file system can hold (a name past 255 bytes, a NUL byte, a blank) is bad input."""
    call = {**BASE[name], "model": source}
    with pytest.raises(ffncalc.InputError):
        getattr(ffncalc, name)(**call)
