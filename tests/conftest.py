import importlib.util
import os
from pathlib import Path

import pytest

from ffncalc.cli import main

TORCH = importlib.util.find_spec("torch") is not None
MARKED = ("pytestmark = pytest.mark.torch", "pytestmark = [pytest.mark.torch")


def pytest_ignore_collect(collection_path: Path, config):
    """Without torch, a module marked as needing torch throughout is not even imported (the analytic tests
    run in an environment without torch: ``pytest -m "not torch"``)."""
    if not TORCH and collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        return any(line.startswith(MARKED) for line in collection_path.read_text().splitlines()) or None
    return None


@pytest.fixture
def cli(capsys):
    """Run the command line in-process: (exit status, stdout, stderr), tables 200 columns wide."""

    def run(*args):
        os.environ["COLUMNS"] = "200"
        with pytest.raises(SystemExit) as exc:
            main(list(args))
        out, err = capsys.readouterr()
        return exc.value.code, out, err

    return run


@pytest.fixture
def steady_peak(monkeypatch):
    """A matmul probe that claims 10¹⁵ FLOPs a run: bench's share of peak stays far below 100% whatever a busy
    machine does to a real probe's turns (for tests of tables and records, not of the probe)."""
    try:
        from ffncalc.analysis import bench
    except ImportError:  # no torch: nothing here is timed
        return
    monkeypatch.setattr(bench, "matmul_probe", lambda device, dtype: (lambda: None, 10**15))
