"""ffncalc's speed, each figure as a ratio against its floor measured in the same run.

    python benchmarks/speed.py [--runs 9] [--skip-bench]

- ``count gpt3`` against importing typer, rich, pydantic and yaml (what any command line built on them pays);
- ``verify gpt3-175b`` against ``import torch``; ``verify deepseek-v3`` and ``verify --all`` in seconds and
  against ``import torch``;
- ``bench``'s time for a block against torch.utils.benchmark timing the same module on the same input, in turns;
- the deepest stack a spec may state (2,048 layers, each unlike the next) counted, planned and shown layer by
  layer, and a spec of 10^12 layers (refused in one line naming the bound), against ``count gpt3``.

Commands run in fresh interpreters, each taking turns with its floor (A B A B ...) so that a machine whose
speed drifts slows both alike; a ratio is the median of the pairs' ratios, for wall time and for CPU time
(user + system, the figure a busy shared machine disturbs least). Not a test: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

PY = sys.executable
FLOOR_IMPORTS = [PY, "-c", "import typer, rich, pydantic, yaml"]
IMPORT_TORCH = [PY, "-c", "import torch"]


def ffncalc(*args: str) -> list[str]:
    return [PY, "-m", "ffncalc", *args]


def once(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``cmd`` (its output discarded)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def paired(a: list[str], b: list[str], runs: int) -> dict:
    """A and B in turns after one untimed run of each: medians and the median of the pairs' ratios."""
    once(a), once(b)
    pairs = [(once(a), once(b)) for _ in range(runs)]
    return {
        "a_wall": statistics.median(x[0] for x, _ in pairs),
        "b_wall": statistics.median(y[0] for _, y in pairs),
        "a_cpu": statistics.median(x[1] for x, _ in pairs),
        "b_cpu": statistics.median(y[1] for _, y in pairs),
        "wall": statistics.median(x[0] / y[0] for x, y in pairs),
        "cpu": statistics.median(x[1] / y[1] for x, y in pairs),
    }


def row(name: str, floor: str, r: dict) -> None:
    print(
        f"{name:32} {floor:34} {r['a_wall']:8.3f} {r['b_wall']:8.3f} {r['wall']:7.2f}× "
        f"{r['a_cpu']:8.3f} {r['b_cpu']:8.3f} {r['cpu']:7.2f}×"
    )


def bench_against_torch_benchmark(runs: int) -> list[tuple[str, float, float, float]]:
    """(block, bench's median ms, torch.utils.benchmark's median ms, median of the pairs' ratios): the same
    module on the same input, one run of each in turn, after two warm-up runs of each."""
    import torch
    import torch.utils.benchmark as tb

    from ffncalc.analysis import bench
    from ffncalc.sources import presets

    spec = presets.load("llama2-7b")[1]
    out = []
    cpu = torch.device("cpu")
    for block, tokens in (("ffn", 256), ("attention", 256)):
        p = bench.plan(spec, block, seq_len=tokens)
        torch.manual_seed(0)
        module = bench.build_block(p, cpu, "fp32")
        step = bench._step(module, p, cpu, "fp32", tokens, tokens, False)  # what bench times, as it times it
        x = torch.randn(1, tokens, spec.d_model)

        def forward():
            with torch.no_grad():
                return module(x)

        timer = tb.Timer(stmt="forward()", globals={"forward": forward}, num_threads=torch.get_num_threads())
        ours, theirs = [], []
        for i in range(runs + 2):
            mine = bench._time([step], cpu, repeats=1, warmup=0, tick=lambda: None)[0][0]
            other = timer.timeit(1).median * 1000
            if i >= 2:
                ours.append(mine)
                theirs.append(other)
        ratio = statistics.median(a / b for a, b in zip(ours, theirs))
        out.append((f"{block} ({p.variant})", statistics.median(ours), statistics.median(theirs), ratio))
    return out


def deep_stacks(runs: int) -> None:
    """The deepest stack allowed, its layers all distinct (alternating windows), and a 10^12-layer spec."""
    import json
    import tempfile
    from pathlib import Path

    base = {
        "vocab_size": 1000,
        "d_model": 64,
        "context_length": 128,
        "attention": {"n_heads": 4},
        "ffn": {"kind": "gated", "d_ff": 172, "activation": "silu"},
    }
    with tempfile.TemporaryDirectory() as tmp:
        deep, huge = Path(tmp) / "deep.yaml", Path(tmp) / "huge.yaml"
        layers = [{"repeat": 1, "attention": {"n_heads": 4, "window": 16 + i % 2}} for i in range(2048)]
        deep.write_text(json.dumps({**base, "n_layers": 2048, "layers": layers}))
        huge.write_text(json.dumps({**base, "n_layers": 10**12}))
        floor = ffncalc("count", "gpt3")
        for name, cmd in [
            ("count 2,048 distinct layers", ffncalc("count", str(deep))),
            ("  --per-layer", ffncalc("count", str(deep), "--per-layer")),
            ("train 2,048 distinct layers", ffncalc("train", str(deep), "--tokens", "1B", "--hardware", "h100-sxm")),
            ("infer 2,048 distinct layers", ffncalc("infer", str(deep), "--prompt", "8", "--generate", "8")),
            ("count 10^12 layers (refused)", ffncalc("count", str(huge))),
        ]:
            row(name, "ffncalc count gpt3", paired(cmd, floor, runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=9, help="pairs per figure (default 9)")
    parser.add_argument("--skip-bench", action="store_true", help="leave out the bench-vs-torch.utils.benchmark rows")
    args = parser.parse_args()
    print(
        f"{platform.machine()} · {os.cpu_count()} cores · {platform.processor() or platform.platform()} · "
        f"Python {platform.python_version()} · median of {args.runs} pairs\n"
    )
    print(
        f"{'command (A)':32} {'floor (B)':34} {'A wall s':>8} {'B wall s':>8} {'wall A/B':>8} "
        f"{'A cpu s':>8} {'B cpu s':>8} {'cpu A/B':>8}"
    )
    row("ffncalc count gpt3", "import typer, rich, pydantic, yaml", paired(ffncalc("count", "gpt3"), FLOOR_IMPORTS, args.runs))
    heavy = max(3, args.runs // 3)
    for name, cmd in [
        ("ffncalc verify gpt3-175b", ffncalc("verify", "gpt3-175b")),
        ("ffncalc verify deepseek-v3", ffncalc("verify", "deepseek-v3")),
        ("ffncalc verify --all", ffncalc("verify", "--all")),
    ]:
        row(name, "import torch", paired(cmd, IMPORT_TORCH, heavy))
    deep_stacks(heavy)
    if not args.skip_bench:
        print(f"\n{'bench block (llama2-7b, cpu fp32, 256 tokens)':48} {'bench ms':>9} {'torch.utils.benchmark ms':>25} {'ratio':>7}")
        for name, ours, theirs, ratio in bench_against_torch_benchmark(args.runs):
            print(f"{name:48} {ours:9.2f} {theirs:25.2f} {ratio:7.3f}")


if __name__ == "__main__":
    main()
