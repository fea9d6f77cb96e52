"""Timing real blocks on the CPU, with small sizes."""

import json
import time
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

from ffncalc.analysis import bench, hardware, machine
from ffncalc.analysis.sizing import ffn_params, match_width
from ffncalc.errors import InputError
from ffncalc.model import from_data

pytestmark = pytest.mark.torch  # reference modules, real tensors or FlopCounterMode

CPU = torch.device("cpu")


def spec(**overrides):
    base = dict(
        vocab_size=100,
        d_model=256,
        n_layers=2,
        context_length=256,
        attention={"n_heads": 4, "n_kv_heads": 2},
        ffn={"kind": "gated", "d_ff": 1024, "activation": "silu"},
    )
    base.update(overrides)
    return from_data(base)


@pytest.mark.parametrize("block", ["ffn", "attention", "layer"])
@pytest.mark.parametrize("backward", [False, True])
def test_planned_flops_are_what_torch_counts(block, backward):
    """The analytic FLOPs of a timed run equal FlopCounterMode's count of the same run."""
    s = spec(
        ffn={
            "kind": "moe",
            "n_experts": 4,
            "top_k": 2,
            "expert": {"kind": "gated", "d_ff": 64},
            "n_shared_experts": 1,
            "shared": {"kind": "dense", "d_ff": 96},
        }
    )
    p = bench.plan(s, block, seq_len=32)
    module = bench.build_block(p, CPU, "fp32")
    x = torch.randn(2, 32, 256, requires_grad=backward)
    with FlopCounterMode(display=False) as counter:
        out = module(x)
        if backward:  # the input's and every weight's gradient, as a timed backward run computes them
            out.backward(torch.randn_like(out))
    assert counter.get_total_flops() == p.flops_per_token * 64 * (3 if backward else 1)


class FakeClock:
    """perf_counter that advances ``step`` seconds per reading: a run, bracketed by two readings, lasts ``step``."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_timing_takes_turns_and_keeps_every_run(monkeypatch):
    """Each function's runs are timed apart, warm-up runs excluded, in turns (no wall clock in the assertion)."""
    calls = []
    clock = FakeClock(0.002)
    monkeypatch.setattr(bench.time, "perf_counter", clock)
    fns = [lambda: calls.append("a"), lambda: calls.append("b")]
    times = bench._time(fns, CPU, repeats=3, warmup=2, tick=lambda: None)
    assert calls == ["a", "b"] * 5  # 2 warm-up rounds, then 3 timed rounds taking turns
    assert times == [[pytest.approx(2.0)] * 3, [pytest.approx(2.0)] * 3]


def test_achieved_rate_is_analytic_flops_over_the_median(monkeypatch):
    """Four times the tokens is four times the analytic FLOPs; the rate divides them by the measured median."""
    p = bench.plan(spec(ffn={"kind": "dense", "d_ff": 1024}), "ffn", seq_len=256)
    monkeypatch.setattr(bench.time, "perf_counter", FakeClock(0.004))
    (small,) = bench.run([p], bench.Timing(CPU, "fp32", tokens=256, seq_len=256, backward=False, repeats=3, warmup=1))
    (large,) = bench.run([p], bench.Timing(CPU, "fp32", tokens=1024, seq_len=256, backward=False, repeats=3, warmup=1))
    d, f = 256, 1024
    assert small.flops == 256 * 2 * 2 * d * f and large.flops == 4 * small.flops  # up and down, 2 per MAC
    assert small.median_ms == pytest.approx(4.0) and small.min_ms <= small.median_ms <= small.max_ms
    assert small.tflops == pytest.approx(small.flops / 0.004 / 1e12)
    n = bench.probe_size(CPU)
    assert small.peak_tflops_measured == pytest.approx(2 * n**3 / 0.004 / 1e12)
    assert small.share_of_peak == pytest.approx(small.flops / (2 * n**3))


def test_json_results(cli, tmp_path, steady_peak):
    target = tmp_path / "results.json"
    target.write_text("old contents that must be replaced whole")
    code, out, _ = cli(
        "bench",
        "microgpt",
        "--block",
        "layer",
        "--tokens",
        "32",
        "--seq-len",
        "16",
        "--repeats",
        "3",
        "--backward",
        "--format",
        "json",
        "--out",
        str(target),
    )
    assert code == 0
    results = json.loads(out)
    assert json.loads(target.read_text()) == results and results["model"] == "microgpt"
    assert list(tmp_path.iterdir()) == [target]  # no temporary file left behind
    (r,) = results["bench"]
    for key, kind in [
        ("block", str),
        ("device", str),
        ("dtype", str),
        ("tokens", int),
        ("median_ms", float),
        ("min_ms", float),
        ("max_ms", float),
        ("flops", int),
        ("tflops", float),
        ("peak_tflops_measured", float),
        ("share_of_peak", float),
    ]:
        assert isinstance(r[key], kind), key
    assert (r["block"], r["device"], r["dtype"], r["tokens"], r["backward"]) == ("layer", "cpu", "fp32", 32, True)


def test_table_and_compare_ffn(cli, tmp_path, steady_peak):
    """Dense and gated at equal parameters: 3 · 64 · 172 = 2 · 64 · 258 weights."""
    path = tmp_path / "small.yaml"
    path.write_text(
        "vocab_size: 100\nd_model: 64\nn_layers: 1\ncontext_length: 64\nattention: {n_heads: 4}\nffn: {kind: gated, d_ff: 172}\n"
    )
    code, out, _ = cli("bench", str(path), "--compare-ffn", "--tokens", "8", "--repeats", "2", "--warmup", "0")
    assert code == 0
    assert "dense silu d_ff 258" in out and "SwiGLU d_ff 172" in out
    assert "time ratio" in out and "fp32" in out


@pytest.mark.skipif(not bench.native_cpu("bf16"), reason="this CPU has no bf16 matrix instructions")
def test_bf16_where_the_cpu_has_it(cli, steady_peak):
    code, out, _ = cli("bench", "microgpt", "--tokens", "16", "--repeats", "2", "--warmup", "0", "--dtype", "bf16")
    assert code == 0 and "bf16" in out


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_emulated_cpu_dtype_is_refused_with_a_reason(cli, monkeypatch, dtype):
    monkeypatch.setattr(bench, "native_cpu", lambda d: d == "fp32")
    code, out, err = cli("bench", "microgpt", "--device", "cpu", "--dtype", dtype, "--tokens", "16")
    assert code == 2 and out == ""
    assert f"--dtype {dtype}: this CPU has no {dtype} matrix instructions" in err and err.count("\n") == 1


def test_a_share_above_the_peak_is_a_probe_error(cli, monkeypatch):
    """A probe that claims 2 FLOPs in a run of at least 10 ms measures a peak of at most 200 FLOP/s, far below
    a block of 65,536 FLOPs (microgpt's FFN over 16 tokens) in any run under 300 s: refused, not printed."""
    monkeypatch.setattr(bench, "matmul_probe", lambda device, dtype: (lambda: time.sleep(0.01), 2))
    code, out, err = cli("bench", "microgpt", "--device", "cpu", "--tokens", "16", "--repeats", "2", "--warmup", "0")
    assert code == 1 and out == ""
    assert err.startswith("ffncalc: error: probe error: the ffn block ran at") and "above the" in err
    assert err.count("\n") == 1


def test_the_probe_grows_until_a_run_is_long_enough(monkeypatch):
    """Each run of side n lasts n³ / 256³ ms on this fake clock: 256, 512, 1024 (1, 8, 64 ms); it stops at 1024,
    whose next doubling would take 8 × 64 = 512 ms, over PROBE_MS = 400 ms."""
    side = []

    class Clock:
        now = 0.0

        def __call__(self):
            return self.now

    clock = Clock()
    real = torch.Tensor.__matmul__

    def timed_matmul(a, b):
        side.append(a.shape[0])
        clock.now += (a.shape[0] / 256) ** 3 / 1000
        return real(a[:1, :1], b[:1, :1])

    monkeypatch.setattr(bench.time, "perf_counter", clock)
    monkeypatch.setattr(torch.Tensor, "__matmul__", timed_matmul)
    _, flops = bench.matmul_probe(CPU, "fp32")
    assert flops == 2 * 1024**3 and side == [256, 256, 512, 512, 1024, 1024]


def test_compare_ffn_widths_have_equal_params():
    dense, gated = bench.compare_variants(spec(ffn={"kind": "gated", "d_ff": 172}, d_model=64), 0)
    assert (dense[1].d_ff, gated[1].d_ff) == (258, 172)
    assert ffn_params(64, 258, "dense", False) == ffn_params(64, 172, "gated", False) == 3 * 64 * 172


def test_equal_width_solver_reproductions():
    # Shazeer 2020: T5-base dense d_ff 3072 ↔ gated 2048, 4,718,592 weights each
    assert match_width(768, 2 * 768 * 3072, "gated", bias=False).d_ff == 2048
    # Llama's rule: d_model 4096, dense 16384 → gated 11008 with multiple_of 256
    assert match_width(4096, 2 * 4096 * 16384, "gated", bias=False, multiple_of=256).d_ff == 11008


def test_memory_guard_refuses_quickly(cli, monkeypatch):
    """Refused before anything is built or timed."""
    monkeypatch.setattr(bench, "free_bytes", lambda device: 2 * 2**30)  # the FFN's 516 MiB of weights fit, 8 sequences not

    def never(*args, **kw):
        raise AssertionError("timed a run that does not fit")

    monkeypatch.setattr(bench, "_time", never)
    monkeypatch.setattr(bench, "build_block", never)
    code, out, err = cli("bench", "llama2-7b", "--tokens", "8192", "--seq-len", "1024")
    assert code == 2 and out == ""
    assert "GiB free; try --tokens" in err and err.count("\n") == 1


def test_memory_guard_says_when_fewer_tokens_cannot_help(cli, monkeypatch):
    """Where the block's weights alone exceed the memory, no --tokens is suggested: llama2-7b's FFN holds
    3 · 4096 · 11008 = 135,266,304 weights, 516 MiB in fp32, above 200 MiB."""
    monkeypatch.setattr(bench, "free_bytes", lambda device: 200 * 2**20)
    code, out, err = cli("bench", "llama2-7b", "--tokens", "4096", "--seq-len", "4096")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "try --tokens" not in err and "the block's 135,266,304 weights: 0.5 GiB" in err


def test_memory_estimate_covers_a_real_run():
    """The estimate is at least the bytes torch's profiler sees alive at the peak of building the block and
    one forward and backward run, and the weights in it are exactly the built block's."""
    p = bench.plan(spec(), "layer", seq_len=128)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        module = bench.build_block(p, CPU, "fp32")
        bench._step(module, p, CPU, "fp32", 256, 128, backward=True)()
    live = peak = 0
    for event in sorted(prof.events(), key=lambda e: e.time_range.start):  # each allocation and free once
        live += event.self_cpu_memory_usage
        peak = max(peak, live)
    assert sum(t.numel() for t in module.parameters()) == p.params
    assert bench.required_bytes(p, 256, 128, "fp32", True, 0) >= peak > 4 * p.params


def test_dtype_the_device_cannot_run_is_refused():
    with pytest.raises(InputError, match="--dtype bf16 is not supported on meta"):
        bench.check_dtype(torch.device("meta"), "bf16")


def test_absent_device_is_refused(cli, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    code, _, err = cli("bench", "microgpt", "--device", "cuda")
    assert code == 2 and "--device cuda: no such device here" in err


def test_moe_routes_for_real_and_reports_the_flops_that_ran():
    s = spec(ffn={"kind": "moe", "n_experts": 8, "top_k": 2, "expert": {"kind": "gated", "d_ff": 64}})
    p = bench.plan(s, "ffn", seq_len=64)
    module = bench.build_block(p, CPU, "fp32")
    assert not module.balanced
    x = torch.randn(1, 64, 256)
    with FlopCounterMode(display=False) as counter:
        module(x)
    experts = module.route(module.router(x.reshape(-1, 256)).softmax(-1))[0]
    rows = torch.bincount(experts.flatten(), minlength=8)
    assert len(set(rows.tolist())) > 1  # data-dependent, unbalanced routing
    # router + 2 experts per token, 3 matrices of 256 × 64 each
    assert counter.get_total_flops() == p.flops_per_token * 64 == 64 * (2 * 256 * 8 + 2 * 2 * 3 * 256 * 64)


def test_hardware_table_has_sources():
    for hw in hardware.table():
        assert hw.source and (hw.tflops or hw.bandwidth_gbs)
    assert hardware.lookup("NVIDIA H100 80GB HBM3").tflops["bf16"] == 989.4
    assert hardware.lookup("NVIDIA L40S").key == "l40s"  # "L4" is not a prefix match


def test_a_bf16_block_is_built_in_bf16_without_an_fp32_copy():
    """The weights are made in the timed dtype: the most memory alive while building the block is its bf16
    weights (2 bytes each), not an fp32 copy (4) before a cast."""
    p = bench.plan(spec(), "ffn", seq_len=16)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        module = bench.build_block(p, CPU, "bf16")
    live = peak = 0
    for event in sorted(prof.events(), key=lambda e: e.time_range.start):
        live += event.self_cpu_memory_usage
        peak = max(peak, live)
    assert {t.dtype for t in module.parameters()} == {torch.bfloat16}
    assert 2 * p.params <= peak < 3 * p.params  # bf16 weights, and less than an fp32 copy's 4 bytes each


def test_an_emulated_bf16_is_not_native(monkeypatch):
    """oneDNN answers yes for bf16 on any AVX-512 CPU, converting to fp32 and back around every product (fp32 copies
    the memory estimate does not hold); only the instructions themselves make it native."""
    monkeypatch.setattr(bench, "onednn_native", lambda dtype: True)
    monkeypatch.setattr(bench, "cpu_flags", lambda: {"avx512f", "avx512bw", "avx512_vnni"})
    assert not bench.native_cpu("bf16") and not bench.native_cpu("fp16")
    with pytest.raises(InputError, match="--dtype bf16: this CPU has no bf16 matrix instructions"):
        bench.check_dtype(CPU, "bf16")
    monkeypatch.setattr(bench, "cpu_flags", lambda: {"avx512f", "avx512_bf16", "amx_fp16"})
    assert bench.native_cpu("bf16") and bench.native_cpu("fp16")
    monkeypatch.setattr(bench, "cpu_flags", lambda: None)  # flags unknown (not x86): oneDNN's answer stands
    assert bench.native_cpu("bf16")


def test_free_memory_is_what_the_process_may_take(tmp_path, monkeypatch):
    """A control group's memory.max (a container's limit) and the process's own limits bound what a run may take,
    whatever the machine has free."""
    group = tmp_path / "fs" / "user.slice" / "job"
    group.mkdir(parents=True)
    (group / "memory.max").write_text(f"{8 * 2**30}\n")
    (group / "memory.current").write_text(f"{7 * 2**30}\n")
    (group.parent / "memory.max").write_text("max\n")  # the parent sets none
    (group.parent / "memory.current").write_text(f"{20 * 2**30}\n")
    (tmp_path / "cgroup").write_text("0::/user.slice/job\n")
    assert machine._cgroup_limits(str(tmp_path / "cgroup"), str(tmp_path / "fs")) == [(8 * 2**30, 7 * 2**30)]
    monkeypatch.setattr(machine, "_cgroup_limits", lambda: [(8 * 2**30, 7 * 2**30)])
    assert bench.free_bytes(CPU) <= 2**30


def test_a_run_past_the_address_space_limit_is_refused(tmp_path):
    """Under a 3 GiB address-space limit (ulimit -v), a run the estimate puts at 6.4 GiB (llama2-7b's FFN, 16,384
    tokens) is refused in one line before anything is built, with the room the limit leaves."""
    import os
    import resource
    import subprocess
    import sys
    from pathlib import Path

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    args = ["bench", "llama2-7b", "--device", "cpu", "--tokens", "16384", "--seq-len", "4096"]
    out = subprocess.run(
        [sys.executable, "-m", "ffncalc", *args], capture_output=True, text=True, env=env, timeout=120, preexec_fn=limit
    )
    assert out.returncode == 2 and out.stdout == "" and out.stderr.count("\n") == 1, out.stderr[-2000:]
    free = float(out.stderr.split(" GiB free")[0].rsplit(" ", 1)[1])
    assert "the ffn run needs about 6.4 GiB" in out.stderr and free < 3


@settings(max_examples=12, derandomize=True, deadline=None)
@given(
    ffn=st.sampled_from(
        [
            {"kind": "gated", "d_ff": 512, "activation": "silu"},
            {"kind": "dense", "d_ff": 768},
            {"kind": "moe", "n_experts": 8, "top_k": 8, "expert": {"kind": "gated", "d_ff": 128}},  # every expert
            {
                "kind": "moe",
                "n_experts": 16,
                "top_k": 16,
                "expert": {"kind": "dense", "d_ff": 64},
                "n_shared_experts": 1,
                "shared": {"kind": "dense", "d_ff": 96},
            },
            {"kind": "moe", "n_experts": 8, "top_k": 2, "expert": {"kind": "gated", "d_ff": 128}},
        ]
    ),
    block=st.sampled_from(["ffn", "attention", "layer"]),
    dtype=st.sampled_from(["fp32", "bf16"]),
    backward=st.booleans(),
    vocab=st.sampled_from([100, 4_000_000]),  # an untied table of 4M entries: never built, never estimated
)
def test_the_memory_estimate_holds_what_a_run_allocates(ffn, block, dtype, backward, vocab):
    """Whatever the block (a mixture whose every expert each token runs among them) and dtype, the estimate is at
    least the most bytes torch's profiler sees alive while the block is built and run once."""
    if dtype != "fp32" and not bench.native_cpu(dtype):
        return
    p = bench.plan(spec(ffn=ffn, vocab_size=vocab), block, seq_len=64)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        module = bench.build_block(p, CPU, dtype)
        bench._step(module, p, CPU, dtype, 128, 64, backward=backward)()
    live = peak = 0
    for event in sorted(prof.events(), key=lambda e: e.time_range.start):
        live += event.self_cpu_memory_usage
        peak = max(peak, live)
    assert bench.required_bytes(p, 128, 64, dtype, backward, 0) >= peak


@pytest.mark.parametrize(
    "model_type, runs_alone",
    [("gemma4_text", False), ("deepseek_v4", False), ("reformer", False), ("inkling2_text", False), ("gemma3n_text", False)]
    + [("zamba2", True), ("hrm_text", True), ("cpmant", True), ("zaya", True)],
)
def test_a_layer_its_model_feeds_is_not_timed_alone(model_type, runs_alone):
    """A layer whose parts read what the model makes for it (residual streams, per-layer vectors) does not run on a
    lone input: --block layer is refused in one line before anything is built; other parts' layers run alone."""
    from pathlib import Path

    from ffncalc.sources import hf

    model = hf.load(Path(__file__).resolve().parents[1] / "hf_defaults" / "configs" / f"{model_type}.json")[1]
    if runs_alone:
        assert bench.plan(model, "layer", seq_len=16).params > 0
    else:
        with pytest.raises(InputError, match="^--block layer: a layer of this model runs only inside it"):
            bench.plan(model, "layer", seq_len=16)
        assert bench.plan(model, "attention", seq_len=16).params > 0


RESIDENT = """
import json, sys
import torch
from ffncalc.analysis import bench
from ffncalc.model import from_data

def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096

ffn = {"kind": "moe", "n_experts": 20000, "top_k": 2, "expert": {"kind": "gated", "d_ff": 1}}
spec = from_data(dict(vocab_size=100, d_model=16, n_layers=1, context_length=64, attention={"n_heads": 2}, ffn=ffn))
p = bench.plan(spec, "ffn", seq_len=64)
before = resident()
module = bench.build_block(p, torch.device("cpu"), "fp32")
print(json.dumps([resident() - before, bench.required_bytes(p, 64, 64, "fp32", False, 0), p.params]))
"""


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="the resident set is read from /proc")
def test_the_estimate_holds_a_mixture_of_many_small_experts(tmp_path):
    """20,000 experts of width 1 hold 20,000 · 3 · 16 weights (3.7 MiB in fp32) and 20,000 modules, whose torch
    objects take about 11 KB each: the estimate holds the resident memory building the block takes."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-c", RESIDENT], capture_output=True, text=True, env=env, timeout=300)
    grown, estimate, params = json.loads(out.stdout)
    assert params == 20000 * 3 * 16 + 16 * 20000  # the experts and the router
    assert grown > 10 * 4 * params  # the objects, not the weights, are most of it
    assert estimate >= grown


def test_a_backward_through_a_parameter_the_input_does_not_reach():
    """Doge's attention holds a parameter this input's forward does not read: a timed backward run takes the
    gradients the forward makes, and none for it, instead of failing."""
    from ffncalc.sources import hf

    model = hf.load(Path(__file__).resolve().parents[1] / "hf_defaults" / "configs" / "doge.json")[1]
    p = bench.plan(model, "attention", seq_len=32)
    module = bench.build_block(p, CPU, "fp32")
    grads = bench._step(module, p, CPU, "fp32", 32, 32, backward=True)()
    assert grads[0].shape == (1, 32, model.d_model) and any(g is None for g in grads[1:])
