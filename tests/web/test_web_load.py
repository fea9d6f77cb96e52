"""A bounded load on loopback (benchmarks/web_load.py's clients): 50 concurrent clients asking for the page and a
count in turn, every answer right, and the server's memory (its process and its workers) not growing with the
requests it serves. Nothing is timed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.web, pytest.mark.xdist_group("web")]

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "web_load.py"


def loader():
    spec = importlib.util.spec_from_file_location("web_load", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("web_load", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the server's memory from /proc (Linux)")
def test_fifty_clients_no_error_no_growth(server):
    bench = loader()
    warm = bench.load(server.port, 50, rounds=1)
    assert warm["failures"] == []
    before = bench.rss(server.process.pid)
    got = bench.load(server.port, 50, rounds=10)
    after = bench.rss(server.process.pid)
    assert got["failures"] == []
    assert got["requests"] == 50 * 10 * 2
    assert after - before < 16 * 2**20, (before, after)
