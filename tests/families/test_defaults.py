"""Every decoder-only text model_type of transformers 5.23.0, at its configuration class's defaults, counted
exactly against what transformers builds from the same config.json.

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
TEXT_TYPES = [t for t in coverage.CAUSAL_LM_TYPES if t not in coverage.NOT_TEXT_DECODERS]
RECORDS = {t: json.loads((TRUTH / f"{t}.json").read_text()) for t in TEXT_TYPES if (TRUTH / f"{t}.json").is_file()}
SUPPORTED = sorted(t for t in TEXT_TYPES if t not in coverage.NOT_YET)
BUILT = [t for t in SUPPORTED if "refused" not in RECORDS.get(t, {})]


def test_every_text_type_is_recorded_with_one_version():
    assert sorted(RECORDS) == sorted(TEXT_TYPES)
    assert sorted(p.stem for p in CONFIGS.glob("*.json")) == sorted(TEXT_TYPES)
    assert {r["transformers"] for r in RECORDS.values()} == {coverage.TRANSFORMERS_VERSION}


def test_types_transformers_cannot_build_are_refused_for_a_stated_reason():
    """A type whose defaults transformers itself refuses is listed with transformers' reason; every other
    supported type is compared below."""
    refused = {t: r["refused"] for t, r in RECORDS.items() if "refused" in r}
    assert all("transformers refuses this config" in reason for reason in refused.values()), refused
    assert set(refused) == set(coverage.REFUSED_AT_DEFAULTS)


def _measured(model_type: str) -> hfcheck.Measured:
    return hfcheck.Measured.from_record(RECORDS[model_type])


@pytest.mark.parametrize("model_type", BUILT)
def test_total_at_defaults_equals_transformers(model_type):
    label, spec = hf.load(CONFIGS / f"{model_type}.json")
    assert tally(spec).params == sum(n for _, n in _measured(model_type).params)


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
    assert tally(hf.load(path)[1]).params == sum(n for _, n in _measured(model_type).params)
