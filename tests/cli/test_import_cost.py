"""The analytic path never imports torch, even where torch is installed."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

CONFIGS = Path(__file__).resolve().parents[1] / "hf_configs"

PROBE = """
import sys
from ffncalc.cli import main
try:
    main({args!r})
except SystemExit as exc:
    assert exc.code == 0, exc.code
heavy = sorted(m for m in ("torch", "numpy", "transformers", "starlette", "uvicorn") if m in sys.modules)
sys.stderr.write("HEAVY=" + ",".join(heavy) + "\\n")
"""


@pytest.mark.torch  # the proof needs torch installed, to show it is never imported
@pytest.mark.parametrize(
    "args",
    [
        ["count", "gpt3"],
        ["count", "mixtral-8x7b", "--format", "json", "--per-layer"],
        ["count", "llama3-8b", "--format", "markdown", "-c", "palm"],
        ["count", "gpt2", "--format", "csv"],
        ["compare", "gpt3", "--format", "json"],
        ["compare", "--d-model", "768", "--sweep", "2:8:1", "--format", "markdown"],
        ["train", "gpt3", "--tokens", "300B", "--hardware", "h100-sxm", "--gpus", "1024"],
        ["infer", "llama3-8b", "--prompt", "1000", "--generate", "100", "--hardware", "h100-sxm", "-f", "json"],
        ["presets"],
        ["conventions"],
        ["count", str(CONFIGS / "deepseek-v3.json")],
        ["import", str(CONFIGS / "qwen1.5-moe-a2.7b.json")],
    ],
)
def test_analytic_path_never_imports_torch(args, tmp_path):
    assert importlib.util.find_spec("torch") is not None, "torch must be installed for this test to mean anything"
    out = subprocess.run([sys.executable, "-c", PROBE.format(args=args)], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip().splitlines()[-1] == "HEAVY="
