"""Record what transformers instantiates for every config in tests/hf_configs/ (the ground truth the fast
test suite compares against), or check that the recorded files are current.

    python scripts/hf_truth.py            # (re)write tests/hf_truth/NAME.json for every config
    python scripts/hf_truth.py --check    # exit 1 if any recorded file differs from what transformers builds now
    python scripts/hf_truth.py NAME …     # only these configs

Each file holds the transformers class built from the config on the meta device, every parameter by name
with its element count (a tied matrix once), the buffers, and the versions of transformers and torch; and the
FLOPs of one forward of that class on the meta device under torch's FlopCounterMode (eager attention) at a
short sequence and one past every sliding window and attention chunk, by module and by the parameter each
op multiplies, with how they were measured (ffncalc/analysis/hfcheck.py: FLOP_METHOD), or why they could not be.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "tests" / "hf_configs"
TRUTH = ROOT / "tests" / "hf_truth"


def record(name: str) -> str:
    import torch

    from ffncalc.analysis.hfcheck import measure
    from ffncalc.analysis.records import record_json
    from ffncalc.sources import hf

    data = {
        "config": f"tests/hf_configs/{name}.json",
        "torch": torch.__version__,
        **measure(hf.read_config(CONFIGS / f"{name}.json"), flops=True).record(),
    }
    return record_json(data)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="config names (default: all)")
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    names = args.names or sorted(p.stem for p in CONFIGS.glob("*.json"))
    stale = []
    for name in names:
        text, target = record(name), TRUTH / f"{name}.json"
        if args.check:
            if not target.is_file() or target.read_text() != text:
                stale.append(name)
        else:
            TRUTH.mkdir(exist_ok=True)
            target.write_text(text)
    if args.check:
        print(
            f"{len(names) - len(stale)} of {len(names)} ground-truth files current"
            + (f"; stale: {', '.join(stale)} (rerun python scripts/hf_truth.py)" if stale else "")
        )
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
