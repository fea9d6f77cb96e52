"""Records what transformers' own classes save for backward in one training forward (eager attention, train mode,
the loss on every position), per component: ``tests/hf_saved/truth/NAME.json`` for every config in
``tests/hf_saved/configs/`` (public config.json files with their widths, depths and vocabulary cut down so that a
forward runs on real tensors on a CPU: the reductions and each file's source in ``tests/hf_saved/sources.json``), at
16 and 80 tokens (one chunk of 64 and two, where a layer scans chunks), batch 1 and 2, in bf16 and fp32.
``--check`` compares a fresh recording with the files.

    python scripts/hf_saved.py [--check] [NAME ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ffncalc.analysis import hfsavedcheck  # noqa: E402
from ffncalc.sources import hf  # noqa: E402

HERE = ROOT / "tests" / "hf_saved"
CONFIGS, TRUTH = HERE / "configs", HERE / "truth"
RUNS = [(seq_len, batch, dtype) for seq_len in (16, 80) for batch in (1, 2) for dtype in ("bf16", "fp32")]


def record(name: str) -> str:
    import torch
    import transformers

    c = hf.read_config(CONFIGS / f"{name}.json")
    runs = [
        {"seq_len": s, "batch": b, "dtype": dt, "saved": hfsavedcheck.measure(c, seq_len=s, batch=b, dtype=dt)} for s, b, dt in RUNS
    ]
    data = {"transformers": transformers.__version__, "torch": torch.__version__.split("+")[0], "runs": runs}
    return json.dumps(data, indent=1) + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    names = [a for a in argv if not a.startswith("--")] or sorted(p.stem for p in CONFIGS.glob("*.json"))
    TRUTH.mkdir(parents=True, exist_ok=True)
    stale = []
    for name in names:
        text, path = record(name), TRUTH / f"{name}.json"
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
            print(f"recorded {path.relative_to(ROOT)}")
    if stale:
        print(f"hf_saved: not what transformers saves now: {', '.join(stale)}; rerun scripts/hf_saved.py", file=sys.stderr)
        return 1
    if check:
        print(f"hf_saved: {len(names)} recordings current")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
