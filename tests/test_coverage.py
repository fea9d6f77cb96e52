"""Every public config.json in hf_configs/ counted exactly against what transformers instantiates.

The truth is recorded by ``scripts/hf_truth.py`` into hf_truth/ (the transformers class built from the
config on the meta device: every parameter by name with its element count, and the buffers); CI reruns
the script with --check, so the recording is what transformers 5.23.0 builds today. Here each config is
imported, counted and compared with it, in total and component by component, by the family's own map
of module names; and the imported spec is proven against ffncalc's reference torch modules.
"""

import json
from pathlib import Path

import pytest

from ffncalc.analysis import hfcheck
from ffncalc.analysis.count import tally
from ffncalc.analysis.verify import verify
from ffncalc.sources import hf

HERE = Path(__file__).resolve().parent
CONFIGS, TRUTH = HERE / "hf_configs", HERE / "hf_truth"
NAMES = sorted(p.stem for p in CONFIGS.glob("*.json"))
SOURCES = json.loads((HERE / "hf_configs.sources.json").read_text())


def truth(name: str) -> hfcheck.Measured:
    return hfcheck.Measured.from_record(json.loads((TRUTH / f"{name}.json").read_text()))


def test_every_config_has_its_truth_and_its_source():
    assert sorted(p.stem for p in TRUTH.glob("*.json")) == NAMES
    assert sorted(SOURCES) == NAMES
    assert all(SOURCES[name]["url"].startswith("https://huggingface.co/") for name in NAMES)
    assert {json.loads((TRUTH / f"{n}.json").read_text())["transformers"] for n in NAMES} == {"5.23.0"}


@pytest.mark.parametrize("name", NAMES)
def test_total_equals_transformers(name):
    assert tally(hf.load(CONFIGS / f"{name}.json")[1]).params == sum(n for _, n in truth(name).params)


@pytest.mark.parametrize("name", NAMES)
def test_every_component_equals_transformers(name):
    report = hfcheck.check(hf.read_config(CONFIGS / f"{name}.json"), model=name, measured=truth(name))
    assert report.ok, report.failures
    assert not any(ch.component.startswith("(unmatched)") for ch in report.checks)


@pytest.mark.parametrize("name", NAMES)
def test_imported_spec_verifies_against_reference_modules(name):
    label, spec = hf.load(CONFIGS / f"{name}.json")
    report = verify(spec, model=label, seq_len=8)
    assert report.ok, report.failures
