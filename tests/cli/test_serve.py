"""``ffncalc serve`` where the web extra is not installed: one line that says how to install it."""

import subprocess
import sys

PROBE = """
import sys
sys.modules["uvicorn"] = None  # as where the extra is not installed
from ffncalc.cli import main
main(["serve"])
"""


def test_serve_without_the_extra_says_how_to_install_it(tmp_path):
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.startswith("ffncalc: error: serve needs starlette and uvicorn (")
    assert out.stderr.strip().endswith("install them: pip install 'ffncalc[web]'")
    assert len(out.stderr.strip().splitlines()) == 1
