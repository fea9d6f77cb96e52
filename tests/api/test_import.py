"""``import ffncalc`` imports nothing heavy, nor the API itself until a name is used; counting a preset through the
API imports no torch, transformers, matplotlib, rich, typer or pydantic either (timed in benchmarks/import_cost.py)."""

import subprocess
import sys

import pytest

HEAVY = ("torch", "transformers", "matplotlib", "rich", "pydantic", "typer", "numpy")

PROBE = """
import sys
import ffncalc
{then}
loaded = sorted(m for m in {heavy!r} + ("yaml", "ffncalc.api", "ffncalc.analysis") if m in sys.modules)
sys.stdout.write("LOADED=" + ",".join(loaded) + "\\n")
"""


def loaded(then: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(then=then, heavy=HEAVY)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    line = out.stdout.strip().splitlines()[-1]
    return [m for m in line.removeprefix("LOADED=").split(",") if m]


def test_import_ffncalc_imports_nothing_else():
    assert loaded("") == []


def test_the_public_names_are_there_without_importing_them():
    assert loaded("assert 'count' in dir(ffncalc) and 'SpecError' in ffncalc.__all__") == []
    assert loaded("ffncalc.SpecError") == []  # the errors module alone


@pytest.mark.torch  # the proof needs torch installed, to show it is never imported
def test_counting_imports_nothing_heavy():
    found = loaded("r = ffncalc.count('llama3-8b'); r.to_dict(); r._repr_html_(); r._repr_markdown_()")
    assert not set(found) & set(HEAVY), found
    found = loaded("ffncalc.train('llama3-8b', tokens='1T', hardware='h100-sxm', gpus=8).to_dict()")
    assert not set(found) & set(HEAVY), found
