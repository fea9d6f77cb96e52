"""Every decoder-only text model_type and every encoder of transformers 5.23.0, at its configuration class's
defaults, counted exactly against what transformers builds from the same config.json (the causal LM; an
encoder's masked LM).

``scripts/hf_defaults.py`` writes each default configuration as a config.json (hf_defaults/configs/) and
records the causal-LM class transformers builds from it on the meta device (hf_defaults/truth/: every
parameter by name, the buffers, the versions); CI reruns it with --check. Here each supported type's
default config.json is read as a user's would be and compared in total and component by component. This is
the coverage table: ``ffncalc families`` and docs/model-types.md are generated from the same status data,
which tests/families/test_model_types.py keeps equal to the families registered.
"""

import json
from pathlib import Path

import pytest

from ffncalc.analysis import hfcheck
from ffncalc.analysis.count import tally
from ffncalc.sources import hf
from ffncalc.sources.hf import coverage

HERE = Path(__file__).resolve().parents[1]
CONFIGS, TRUTH = HERE / "hf_defaults" / "configs", HERE / "hf_defaults" / "truth"
# every decoder-only text type (its causal LM), every encoder (its masked LM), every encoder-decoder
DECODERS = [t for t in coverage.CAUSAL_LM_TYPES if t not in coverage.NOT_TEXT_DECODERS]
TEXT_TYPES = list(dict.fromkeys(DECODERS + list(coverage.ENCODER_TYPES) + list(coverage.ENCODER_DECODER_TYPES)))
RECORDS = {t: json.loads((TRUTH / f"{t}.json").read_text()) for t in TEXT_TYPES if (TRUTH / f"{t}.json").is_file()}
NOT_READ = {**coverage.NOT_YET, **coverage.ENCODERS_NOT_YET, **coverage.SEQ2SEQ_NOT_YET}
SUPPORTED = sorted(t for t in TEXT_TYPES if t not in NOT_READ)
BUILT = [t for t in SUPPORTED if "refused" not in RECORDS.get(t, {})]


def test_every_text_type_is_recorded_with_one_version():
    assert sorted(RECORDS) == sorted(TEXT_TYPES)
    assert sorted(p.stem for p in CONFIGS.glob("*.json")) == sorted(TEXT_TYPES)
    assert {r["transformers"] for r in RECORDS.values()} == {coverage.TRANSFORMERS_VERSION}


def test_types_transformers_cannot_build_are_refused_for_a_stated_reason():
    """A type whose defaults transformers itself refuses is listed with transformers' reason; every other
    supported type is compared below."""
    refused = {t: r["refused"] for t, r in RECORDS.items() if "refused" in r}
    # a type recorded at a repair keeps transformers' reason for refusing its raw defaults
    refused |= {t: r["refused_unrepaired"] for t, r in RECORDS.items() if "refused_unrepaired" in r}
    assert all("transformers refuses this config" in reason for reason in refused.values()), refused
    assert set(refused) == set(coverage.REFUSED_AT_DEFAULTS)
    # the types counted at their repair are those recorded with one beside transformers' reason
    repaired = {t for t, r in RECORDS.items() if "refused_unrepaired" in r and "params" in r}
    assert repaired == set(coverage.REPAIRED_AT_DEFAULTS)


def _measured(model_type: str) -> hfcheck.Measured:
    return hfcheck.Measured.from_record(RECORDS[model_type])


@pytest.mark.parametrize("model_type", BUILT)
def test_total_at_defaults_equals_transformers(model_type):
    label, spec = hf.load(CONFIGS / f"{model_type}.json", text=True)  # the recorded class is the language model
    assert tally(spec, partial=True).params == sum(n for _, n in _measured(model_type).params)


def test_types_whose_defaults_leave_the_work_open_are_listed():
    """A type whose defaults transformers builds but whose work they leave unstated (DeepSeek-V2's null top-k) is
    counted in its parameters and marked; the coverage table says what is open."""
    marked = {t for t in BUILT if hf.load(CONFIGS / f"{t}.json")[1].needs}
    assert marked == set(coverage.OPEN_AT_DEFAULTS)


def test_deepseek_v2_defaults_count_what_transformers_builds(cli):
    """DeepseekV2Config's defaults leave num_experts_per_tok None; transformers builds the model all the same. By hand:
    the token table and the untied head, 102,400 × 4,096 each; per layer MLA (q_a 4,096 × 1,536 and its norm,
    q_b 1,536 × 32·192, kv_a 4,096 × 576, its norm of 512, kv_b 512 × 32·256, o 32·128 × 4,096), a router of
    64 × 4,096, 64 routed and 2 shared SwiGLU experts of 3 · 4,096 · 1,407, two norms; 32 layers and a final norm."""
    d, layers, vocab, width = 4096, 32, 102_400, 3 * 4096 * 1407
    mla = d * 1536 + 1536 + 1536 * 32 * 192 + d * 576 + 512 + 512 * 32 * 256 + 32 * 128 * d
    layer = mla + 64 * d + (64 + 2) * width + 2 * d
    total = 2 * vocab * d + layers * layer + d
    assert total == 38_612_307_968 == sum(n for _, n in _measured("deepseek_v2").params)
    code, out, err = cli("count", str(CONFIGS / "deepseek_v2.json"))
    assert code == 0 and f"{total:,}" in out and err == ""
    text = " ".join(out.split())  # the note as one line, wherever the table's width wraps it
    assert "num_experts_per_tok is null" in text and "active parameters and FLOPs need a top-k" in text
    assert "FLOPs per token" not in out and "active per token" not in out  # nothing rests on the stand-in
    code, out, err = cli("count", str(CONFIGS / "deepseek_v2.json"), "-f", "json")
    record = json.loads(out)
    assert code == 0 and record["totals"]["params"] == total and record["totals"]["forward_flops_per_token"] is None
    for args in (("train", "--tokens", "1B", "--hardware", "h100-sxm"), ("infer", "--prompt", "8", "--generate", "8")):
        code, out, err = cli(args[0], str(CONFIGS / "deepseek_v2.json"), *args[1:])
        assert code == 2 and out == "" and err.count("\n") == 1 and "need a top-k" in err


@pytest.mark.parametrize("model_type", BUILT)
def test_every_component_at_defaults_equals_transformers(model_type):
    report = hfcheck.check(hf.read_config(CONFIGS / f"{model_type}.json"), model=model_type, measured=_measured(model_type))
    assert report.ok, report.failures
    assert not any(ch.component.startswith("(unmatched)") for ch in report.checks)


@pytest.mark.parametrize("model_type", BUILT)
def test_a_config_of_model_type_alone_means_the_class_defaults(model_type, tmp_path):
    """A sparse config.json takes the configuration class's default for every key it leaves out, as transformers
    reads it: one stating only its model_type (and any repair the defaults need) counts what the class builds."""
    record = RECORDS[model_type]
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": model_type, **record.get("repaired", {})}))
    assert tally(hf.load(path, text=True)[1], partial=True).params == sum(n for _, n in _measured(model_type).params)
