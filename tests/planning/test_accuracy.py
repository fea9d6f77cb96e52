"""The plans against published runs (docs/guide/accuracy.md): every record within its band, every run that ran
said to fit, a calibration set apart from a held-out set; and the time figures that do not double count."""

import pytest

from ffncalc.analysis import accuracy
from ffncalc.analysis.accuracy import training as published_training

RECORDS = [r for s in accuracy.sections() for r in s.RECORDS]


@pytest.mark.parametrize("record", RECORDS, ids=[r.name for r in RECORDS])
def test_each_published_run_within_its_band(record):
    planned = record.planned()
    assert abs(planned / record.measured - 1) <= record.band, (record.name, planned, record.measured)
    if record.ran:
        plan = record.plan()
        assert plan["free_bytes_per_device"].value >= 0 and plan.notes[0].startswith("fits on")


def test_calibration_and_held_out_sets():
    """Constants are fitted to the calibration records only; the rest are held out, and there are more of them."""
    calibration = [r for r in RECORDS if r.calibrates]
    held_out = [r for r in RECORDS if not r.calibrates]
    assert {r.calibrates.split()[0].strip("`") for r in calibration} == {
        "memory.ALLOCATOR_SHARE",
        "training.DEFAULT_MFU['bf16']",
        "training.DEFAULT_MFU['fp8']",
    }
    assert len(held_out) > 2 * len(calibration)
    # every layout kind the plans claim is held out at least once: FSDP alone, with TP, with PP, with CP
    commands = [r.command for r in held_out]
    assert any("--tp" in c and "--pp" not in c for c in commands)
    assert any("--pp" in c for c in commands) and any("--cp 8" in c for c in commands)


VERDICTS = [r for s in accuracy.sections() for r in s.VERDICTS]


@pytest.mark.parametrize("record", VERDICTS, ids=[r.name for r in VERDICTS])
def test_the_verdict_on_runs_that_ran_or_ran_out_of_memory(record):
    assert record.fits() == bool(record.measured)


def test_gaps_are_stated():
    for record in published_training.GAPS:
        assert record.gap and record.measured > 0


def test_the_page_shows_every_record():
    page = accuracy.page("")
    for record in RECORDS + VERDICTS + published_training.GAPS:
        assert record.name in page and record.command in page
