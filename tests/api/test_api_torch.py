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


def test_plot_returns_the_figure_the_command_writes(cli, tmp_path):
    """ffncalc.plot: the plot command's figure as a matplotlib Figure; with out, the same bytes as the command."""
    from matplotlib.figure import Figure

    from ffncalc.output import plot

    fig = ffncalc.plot("share", ["gpt3", "llama3-8b"])
    labels = [ffncalc.load(name).label for name in ("gpt3", "llama3-8b")]  # the preset's name for an alias
    assert isinstance(fig, Figure) and [t.get_text() for t in fig.axes[0].get_xticklabels()] == labels
    sweep = ffncalc.plot("sweep", d_model=768, ratios=[1, 2, 4], width="column")
    assert isinstance(sweep, Figure) and len(sweep.axes) == 2
    for args, call in (
        (["plot", "share", "gpt3", "mixtral-8x7b"], lambda out: ffncalc.plot("share", ["gpt3", "mixtral-8x7b"], out=out)),
        (
            ["plot", "sweep", "--d-model", "1024", "--ratios", "1:4:1"],
            lambda out: ffncalc.plot("sweep", d_model=1024, ratios="1:4:1", out=out),
        ),
    ):
        theirs, mine = tmp_path / "cli.svg", tmp_path / "api.svg"
        code, _, err = cli(*args, "--out", str(theirs))
        assert code == 0, err
        call(mine)
        assert mine.read_bytes() == theirs.read_bytes()
    assert plot.save(ffncalc.plot("sweep", d_model=1024, ratios="1:4:1"), "svg") == mine.read_bytes()
    with pytest.raises(ffncalc.InputError, match="name an .svg, .pdf or .png"):
        ffncalc.plot("sweep", out=tmp_path / "x.gif")
