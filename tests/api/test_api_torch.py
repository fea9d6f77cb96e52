"""verify and bench through the API: equal to the command line's JSON (bench with a clock that advances a fixed
step a reading, so both runs time alike), and a disagreement is a result, never an exit."""

import json
from pathlib import Path

import pytest

import ffncalc

pytestmark = pytest.mark.torch  # torch modules on the meta device, real blocks timed

CONFIGS = Path(__file__).resolve().parents[1] / "hf_configs"


def cli_json(cli, *args, code=0):
    status, out, err = cli(*args, "--format", "json")
    assert status == code, err
    return json.loads(out)


@pytest.mark.parametrize(
    "args, call",
    [
        (["verify", "gpt2"], lambda: ffncalc.verify("gpt2")),
        (["verify", "llama3-8b", "--convention", "causal"], lambda: ffncalc.verify("llama3-8b", convention="causal")),
        (["verify", "mixtral-8x7b", "--seq-len", "512"], lambda: ffncalc.verify("mixtral-8x7b", seq_len=512)),
        (
            ["verify", "--hf", str(CONFIGS / "llama3.2-1b.json")],
            lambda: ffncalc.verify(hf=CONFIGS / "llama3.2-1b.json"),
        ),
    ],
)
def test_verify_equals_the_command_line(cli, args, call):
    result = call()
    assert result.ok and result.to_dict() == cli_json(cli, *args)


def test_a_disagreement_is_a_result_not_an_exit(cli, monkeypatch):
    from ffncalc.analysis import verify as proof

    real = proof.verify

    def off_by_one(*a, **kw):
        report = real(*a, **kw)
        first = report.checks[0]
        checks = (type(first)(**{**vars(first), "torch_params": first.torch_params + 1}), *report.checks[1:])
        return type(report)(**{**vars(report), "checks": checks})

    monkeypatch.setattr(proof, "verify", off_by_one)
    result = ffncalc.verify("gpt2")  # no SystemExit: the command line decides the exit status
    assert not result.ok and result.to_dict() == cli_json(cli, "verify", "gpt2", code=1)


class Clock:
    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.mark.parametrize(
    "args, kw",
    [
        (["--block", "ffn"], dict(block="ffn")),
        (["--block", "layer", "--backward", "--seq-len", "16"], dict(block="layer", backward=True, seq_len=16)),
        (["--compare-ffn"], dict(compare_ffn=True)),
    ],
)
def test_bench_equals_the_command_line(cli, monkeypatch, steady_peak, args, kw):
    from ffncalc.analysis import bench

    tiny = ["--tokens", "32", "--repeats", "2", "--warmup", "0", "--device", "cpu"]
    monkeypatch.setattr(bench.time, "perf_counter", Clock(0.001))
    ours = ffncalc.bench("microgpt", tokens=32, repeats=2, warmup=0, device="cpu", **kw)
    monkeypatch.setattr(bench.time, "perf_counter", Clock(0.001))
    assert ours.to_dict() == cli_json(cli, "bench", "microgpt", *args, *tiny)
    assert [t.block for t in ours.timings] == [r["block"] for r in ours.to_dict()["bench"]]


def test_compare_with_bench_equals_the_command_line(cli, monkeypatch, steady_peak):
    from ffncalc.analysis import bench

    monkeypatch.setattr(bench.time, "perf_counter", Clock(0.001))
    ours = ffncalc.compare(d_model=64, d_ff=256, bench=True, tokens=16, repeats=2, device="cpu")
    monkeypatch.setattr(bench.time, "perf_counter", Clock(0.001))
    args = ["compare", "--d-model", "64", "--d-ff", "256", "--bench", "--tokens", "16", "--repeats", "2", "--device", "cpu"]
    assert ours.to_dict() == cli_json(cli, *args)
