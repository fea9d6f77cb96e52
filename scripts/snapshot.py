"""Every answer the command line gives, digested: run before and after a change that should change none of them.

For every shipped preset, every recorded public config (tests/hf_configs) and every type's defaults
(tests/hf_defaults/configs), this runs ``count`` (as text, JSON and CSV, at the default sequence and a short one),
``verify``, ``train`` (alone, on devices and with a parallel layout),
``infer`` and ``fit``, ``import`` for configs, in one process, and records a digest of each command's output and exit
status.

    python scripts/snapshot.py --write before.json      # on the old code
    python scripts/snapshot.py --check before.json      # on the new: every command whose answer changed
    python scripts/snapshot.py --check before.json --fast   # without verify
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["COLUMNS"] = "120"
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

PLANS = [
    ["train", "--tokens", "1T"],
    ["train", "--tokens", "300B", "--hardware", "h100-sxm", "--gpus", "64", "--tp", "8", "--recompute", "selective"],
    [
        "train",
        "--tokens",
        "300B",
        "--hardware",
        "h100-sxm",
        "--gpus",
        "256",
        "--tp",
        "4",
        "--pp",
        "4",
        "--zero",
        "1",
        "--global-batch",
        "512",
        "--seq-len",
        "4096",
    ],
    ["infer", "--prompt", "1000", "--generate", "200"],
    ["infer", "--prompt", "4000", "--generate", "500", "--batch", "16", "--hardware", "h100-sxm", "--gpus", "8", "--dtype", "fp8"],
    ["fit", "--hardware", "h100-sxm", "--gpus", "8"],
]


def models(fast: bool) -> list[tuple[str, bool]]:
    """(model argument, whether to verify it)."""
    from ffncalc.sources.presets import names

    out = [(name, not fast) for name in names()]
    for folder in (ROOT / "tests/hf_configs", ROOT / "tests/hf_defaults/configs"):
        for path in sorted(folder.glob("*.json")):
            out.append((str(path.relative_to(ROOT)), not fast))
    return out


def run(argv: list[str]) -> str:
    from ffncalc.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception as exc:  # a crash is an answer too
            code, err = -1, io.StringIO(f"{type(exc).__name__}: {exc}")
    text = f"{code}\n{out.getvalue()}\n{err.getvalue()}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def commands(fast: bool):
    for model, verify in models(fast):
        yield ["count", model]
        yield ["count", model, "-f", "json", "--seq-len", "512"]
        yield ["count", model, "-f", "csv", "-c", "megatron"]
        if model.endswith(".json"):
            yield ["import", model]
        if verify:
            yield ["verify", model, "--seq-len", "16"]
        for plan in PLANS:
            yield [plan[0], model, *plan[1:]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path)
    group.add_argument("--check", type=Path)
    ap.add_argument("--fast", action="store_true", help="without verify")
    args = ap.parse_args()
    got = {" ".join(argv): run(argv) for argv in commands(args.fast)}
    if args.write:
        args.write.write_text(json.dumps(got, indent=0, sort_keys=True) + "\n")
        print(f"{len(got)} answers recorded in {args.write}")
        return
    want = json.loads(args.check.read_text())
    changed = [k for k in got if k in want and want[k] != got[k]]
    missing = [k for k in want if k not in got and (not args.fast or not k.startswith("verify"))]
    for k in changed:
        print(f"changed: {k}")
    for k in missing:
        print(f"not run: {k}")
    print(f"{len(got)} answers, {len(changed)} changed, {len(missing)} not run")
    sys.exit(1 if changed or missing else 0)


if __name__ == "__main__":
    main()
