"""What ``import ffncalc`` costs, as a ratio against ``python -c pass`` measured in the same run.

    python benchmarks/import_cost.py [--runs 21]

The two run in fresh interpreters, taking turns (A B A B ...) so that a machine whose speed drifts slows both
alike; a ratio is the median of the pairs' ratios, for wall time and for CPU time. The API is imported lazily, so
the import should stay within 1.5× of the bare interpreter. Also shown: the first count through the API
(``ffncalc.count('llama3-8b')``), against the command line's ``count llama3-8b``. Not a test: nothing here passes or
fails.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from speed import PY, paired  # noqa: E402

PASS = [PY, "-c", "pass"]
IMPORT = [PY, "-c", "import ffncalc"]
API_COUNT = [PY, "-c", "import ffncalc; ffncalc.count('llama3-8b').params"]
CLI_COUNT = [PY, "-m", "ffncalc", "count", "llama3-8b", "--format", "json"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=21)
    args = ap.parse_args()
    print(f"{'':32} {'against':34} {'wall s':>8} {'floor s':>8} {'ratio':>8} {'cpu s':>8} {'floor s':>8} {'ratio':>8}")
    for name, a, floor_name, b in [
        ("import ffncalc", IMPORT, "python -c pass", PASS),
        ("ffncalc.count('llama3-8b')", API_COUNT, "ffncalc count llama3-8b -f json", CLI_COUNT),
    ]:
        r = paired(a, b, args.runs)
        print(
            f"{name:32} {floor_name:34} {r['a_wall']:8.3f} {r['b_wall']:8.3f} {r['wall']:7.2f}× "
            f"{r['a_cpu']:8.3f} {r['b_cpu']:8.3f} {r['cpu']:7.2f}×"
        )


if __name__ == "__main__":
    main()
