"""What ffncalc's commands cost against the imports they cannot avoid.

Runs each command several times in fresh interpreters and reports medians, ratios and peak memory:
    python benchmarks/startup.py [--repeats 15]
Goals: `ffncalc count gpt3` close to importing typer, rich, pydantic and yaml (the analytic path
imports no torch and does little work); `ffncalc verify gpt3-175b` within about 2 × `import torch`
and under 1 GB (the 175B model is built on the meta device and never allocated).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

# pydantic and rich load lazily: `import pydantic` alone defers most of the package, so the second
# baseline also loads the parts any user of them needs (BaseModel, a console, a table, typer's command layer).
IMPORTS = "import typer, rich, pydantic, yaml"
USED = "import yaml, typer.main; from pydantic import BaseModel; from rich.console import Console; from rich.table import Table"
COMMANDS = {
    IMPORTS: [sys.executable, "-c", IMPORTS],
    "the same, as used": [sys.executable, "-c", USED],
    "ffncalc count gpt3": [sys.executable, "-m", "ffncalc", "count", "gpt3"],
    "ffncalc count mixtral-8x22b --format json": [sys.executable, "-m", "ffncalc", "count", "mixtral-8x22b",
                                                   "--format", "json"],
}
TORCH = {
    "import torch": [sys.executable, "-c", "import torch"],
    "ffncalc verify gpt3-175b": [sys.executable, "-m", "ffncalc", "verify", "gpt3-175b"],
}
PEAK = "import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True); " \
       "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"


def peak_mib(cmd: list[str]) -> float:
    """Peak resident memory of one run, in MiB (Linux reports KiB)."""
    out = subprocess.run([sys.executable, "-c", PEAK, *cmd], capture_output=True, text=True, check=True)
    return int(out.stdout.strip()) / 1024


def median_seconds(cmd: list[str], repeats: int) -> float:
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    subprocess.run(cmd, **quiet)  # warm the file cache
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(cmd, **quiet)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    results = {name: median_seconds(cmd, args.repeats) for name, cmd in COMMANDS.items()}
    bare, used = results[IMPORTS], results["the same, as used"]
    print(f"{'command':45} {'median ms':>10} {'× imports':>10} {'× as used':>10}")
    for name, seconds in results.items():
        print(f"{name:45} {1000 * seconds:10.1f} {seconds / bare:10.2f} {seconds / used:10.2f}")
    print()
    heavy = {name: median_seconds(cmd, max(3, args.repeats // 3)) for name, cmd in TORCH.items()}
    print(f"{'command':45} {'median ms':>10} {'× torch':>10} {'peak MiB':>10}")
    for name, seconds in heavy.items():
        print(f"{name:45} {1000 * seconds:10.1f} {seconds / heavy['import torch']:10.2f} "
              f"{peak_mib(TORCH[name]):10.0f}")


if __name__ == "__main__":
    main()
