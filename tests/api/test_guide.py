"""Every example of docs/guide/api.md runs, and prints what the page shows: each fenced ``python`` block is run in
turn in one namespace (from the repository's root), and a fenced ``text`` block right after it is its output.

    python tests/api/test_guide.py --write    # refresh the page's outputs from what the examples print now
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import sys
from pathlib import Path

TORCH = importlib.util.find_spec("torch") is not None
ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "guide" / "api.md"
EXAMPLE = re.compile(r"```python\n(.*?)```\n(?:\n```text\n(?!\$ )(.*?)```\n)?", re.DOTALL)


def run(text: str) -> list[tuple[re.Match, str]]:
    """Each example and what it prints, the examples run in order in one namespace."""
    namespace: dict = {"__name__": "__guide__"}
    done = []
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        for m in EXAMPLE.finditer(text):
            if m.group(1).startswith("# needs torch") and not TORCH:
                done.append((m, m.group(2) or ""))
                continue
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(m.group(1), f"{PAGE.name} example at offset {m.start()}", "exec"), namespace)
            done.append((m, out.getvalue()))
    finally:
        os.chdir(here)
    return done


def refreshed(text: str) -> str:
    pieces, last = [], 0
    for m, printed in run(text):
        block = f"```python\n{m.group(1)}```\n" + (f"\n```text\n{printed}```\n" if printed else "")
        pieces += [text[last : m.start()], block]
        last = m.end()
    return "".join(pieces) + text[last:]


def test_every_example_prints_what_the_page_shows():
    text = PAGE.read_text()
    results = run(text)
    assert len(results) >= 8
    for m, printed in results:
        assert printed == (m.group(2) or ""), f"example:\n{m.group(1)}\nprints:\n{printed}"


def test_the_page_covers_every_public_function():
    import ffncalc

    text = PAGE.read_text()
    for name in ("load", "Model.from_dict", "count", "compare", "train", "infer", "fit", "verify", "bench", "SpecError"):
        assert f"ffncalc.{name}" in text, name
    assert all(n in ffncalc.__all__ for n in ("load", "count", "SpecError"))


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        sys.path.insert(0, str(ROOT))
        PAGE.write_text(refreshed(PAGE.read_text()))
