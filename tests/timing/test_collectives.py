"""Collectives and a tensor-parallel layer across two gloo ranks on the loopback: small messages and small models,
each run bounded in time (ranks.run's timeout, the sizes and repeats given here). No assertion on how fast."""

import json

import jsonschema
import pytest
import torch

import ffncalc
from ffncalc.analysis import bench, linkfile, ranks
from ffncalc.model import from_data
from ffncalc.output.schemas import schema

pytestmark = pytest.mark.torch

BASE = dict(
    vocab_size=100,
    d_model=64,
    n_layers=1,
    context_length=64,
    attention={"n_heads": 4, "n_kv_heads": 2},
    ffn={"kind": "gated", "d_ff": 128, "activation": "silu"},
)


def validate(record, kind):
    jsonschema.Draft202012Validator(schema(kind)).validate(record)


def spec(**overrides):
    return from_data({**BASE, **overrides})


@pytest.fixture(autouse=True)
def bounded(monkeypatch):
    """Every spawned run here ends within two minutes, or fails."""
    monkeypatch.setattr(ranks, "DEFAULT_TIMEOUT_S", 120.0)


def test_every_collective_over_two_gloo_ranks(tmp_path):
    """Sizes 8 B to 4 KiB (powers of two: 10 sizes, each a whole number of fp32 elements split over 2 ranks); per
    size algbw = bytes / time and busbw = algbw × the factor derived by hand for n = 2: all-reduce 2 · 1/2 = 1,
    all-gather, reduce-scatter and all-to-all 1/2, send/receive 1; a fit over all ten sizes; the record valid, and
    written to --out as a links file infer reads."""
    names = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")
    result = ffncalc.bench(collective=",".join(names), gpus=2, device="cpu", sizes="8:4K", repeats=2, warmup=1)
    record = result.to_dict()
    validate(record, "links")
    assert (record["ranks"], record["backend"], record["device"], record["nodes"]) == (2, "gloo", "cpu", 1)
    factors = {"all_reduce": 1.0, "all_gather": 0.5, "reduce_scatter": 0.5, "all_to_all": 0.5, "send_recv": 1.0}
    assert [e["collective"] for e in record["collectives"]] == list(names)
    for e in record["collectives"]:
        assert e["bus_factor"] == factors[e["collective"]]
        assert [s["bytes"] for s in e["sizes"]] == [8 << k for k in range(10)]
        for s in e["sizes"]:
            assert s["time_s"] > 0
            assert s["algbw_gbs"] == pytest.approx(s["bytes"] / s["time_s"] / 1e9, rel=1e-12)
            assert s["busbw_gbs"] == pytest.approx(s["algbw_gbs"] * factors[e["collective"]], rel=1e-12)
        f = e["fit"]
        assert (f["from_bytes"], f["to_bytes"], f["points"]) == (8, 4096, 10)
        assert f["latency_s"] >= 0 and f["seconds_per_byte"] > 0
        assert f["busbw_gbs"] == pytest.approx(f["algbw_gbs"] * factors[e["collective"]], rel=1e-12)
    path = tmp_path / "links.json"
    path.write_text(result.to_json())
    links = linkfile.read(str(path))
    assert {(f.collective, f.ranks) for f in links.fits} == {(n, 2) for n in names}
    plan = ffncalc.infer("llama3-8b", prompt=64, generate=8, hardware="h100-sxm", gpus=2, tp=2, links=str(path))
    ar = links.pick("all_reduce", 2)
    # 32 layers, 2 all-reduces each, of 1 token × 4,096 × 2 bytes: α + β · bytes a call at the measured count
    expected = 64 * (ar.latency_s + ar.s_per_byte * 4096 * 2)
    assert plan.answer["decode_comm_s"].value == pytest.approx(expected, rel=1e-9)


def test_the_collective_command_line_writes_a_links_file(cli, tmp_path):
    out = tmp_path / "links.json"
    code, stdout, err = cli(
        "bench", "--collective", "all_reduce", "--gpus", "2", "--device", "cpu", "--sizes", "64,1K", "--repeats", "1",
        "--warmup", "0", "--format", "json", "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(stdout) == json.loads(out.read_text())
    assert [s["bytes"] for s in json.loads(stdout)["collectives"][0]["sizes"]] == [64, 1024]


@pytest.mark.parametrize(
    "args, words",
    [
        (["--collective", "all_reduce", "--gpus", "1", "--device", "cpu"], "--gpus 1"),
        (["--collective", "all_gather_v", "--device", "cpu"], "--collective all_gather_v"),
        (["--collective", "all_reduce", "--device", "cpu", "--sizes", "64"], "--sizes"),
        (["--collective", "all_reduce", "--device", "cpu", "--sizes", "8:1Q"], "--sizes"),
        (["gpt2", "--collective", "all_reduce", "--device", "cpu"], "--collective"),
        (["llama3-8b", "--tp", "3", "--device", "cpu"], "--tp 3"),
        (["llama3-8b", "--tp", "1", "--device", "cpu"], "--tp 1"),
        (["llama3-8b", "--gpus", "2", "--device", "cpu"], "--gpus"),
        (["llama3-8b", "--ep", "2", "--device", "cpu"], "--ep 2"),  # no routed experts to split
        (["llama3-8b", "--tp", "2", "--ep", "2", "--device", "cpu"], "--tp 2 and --ep 2"),
        ([], "model"),
    ],
)
def test_bad_runs_across_ranks_are_one_line(cli, args, words):
    """Refused before any rank starts: one line naming the option, exit 2."""
    code, out, err = cli("bench", *args)
    assert code == 2 and out == "" and words in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "overrides",
    [
        {},  # grouped K/V heads, a SwiGLU FFN
        {  # GPT-2's shape: biases on q, k, v and o, a dense GELU FFN with biases, learned positions
            "positions": "learned",
            "attention": {"n_heads": 4, "qkv_bias": True, "o_bias": True},
            "ffn": {"kind": "dense", "d_ff": 256, "activation": "gelu", "bias": True},
            "norm": {"kind": "layernorm"},
        },
        {"attention": {"n_heads": 4, "n_kv_heads": 2, "qk_norm": "head"}},  # a norm per head, shared by the heads
    ],
)
@pytest.mark.parametrize("block", ["attention", "ffn"])
def test_the_shares_sum_to_the_whole_module(overrides, block):
    """In one process, no process group: rank 0's and rank 1's shares of the same module (same weights) summed are
    the whole module's output (what the all-reduce makes), within fp32 rounding."""
    s = spec(**overrides)
    p = bench.plan(s, block, 16)
    torch.manual_seed(0)
    whole = bench.build_block(p, torch.device("cpu"), "fp32")
    x = torch.randn(2, 16, 64)
    blk = {"attention": s.layers[0].attention, "ffn": s.layers[0].ffn}[block]
    with torch.no_grad():
        expected = whole(x)
        shares = []
        for rank in range(2):
            torch.manual_seed(0)
            shares.append(blk.tensor_parallel(bench.build_block(p, torch.device("cpu"), "fp32"), rank, 2)(x))
    assert torch.allclose(shares[0] + shares[1], expected, atol=1e-5, rtol=1e-5)
    assert shares[0].shape == expected.shape


def test_a_tensor_parallel_layer_over_two_ranks(tmp_path):
    """A whole layer over 2 gloo ranks: its output equals the unsharded layer's (same seed) within fp32 rounding;
    2 all-reduces; compute and communication apart; the planned all-reduces from a links file by hand: 2 calls of
    α + β · (64 tokens × 64 × 4 bytes) (fp32, the dtype timed)."""
    alpha, beta = 1e-3, 1e-9
    path = tmp_path / "links.json"
    entry = {"collective": "all_reduce", "ranks": 2, "fit": {"latency_s": alpha, "seconds_per_byte": beta}}
    path.write_text(json.dumps({"schema": "ffncalc.links/1", "collectives": [entry]}))
    s = spec()
    result = ffncalc.bench(
        ffncalc.Model.from_dict(BASE), block="layer", tp=2, device="cpu", tokens=64, repeats=2, warmup=1, links=str(path)
    )
    record = result.to_dict()
    validate(record, "bench-tp")
    assert record["max_abs_error"] <= 1e-5 * max(1.0, record["max_abs_output"])
    assert record["matches"] is True and record["tolerance"] == 1e-4
    assert record["collectives"] == 2 and (record["parallel"], record["ranks"], record["backend"]) == ("tensor", 2, "gloo")
    assert record["comm_s"] > 0 and record["wait_s"] >= 0 and record["total_s"] > 0
    assert record["comm_bytes"] == 64 * 64 * 4
    assert record["predicted_comm_s"] == pytest.approx(2 * (alpha + beta * 64 * 64 * 4), rel=1e-12)
    assert record["flops"] == bench.plan(s, "layer", 64).flops_per_token * 64
    assert record["links"] == str(path) and str(path) in record["link"]


MOE = {
    **BASE,
    "ffn": {
        "kind": "moe",
        "n_experts": 4,
        "top_k": 2,
        "expert": {"kind": "gated", "d_ff": 32},
        "n_shared_experts": 1,
        "shared": {"kind": "gated", "d_ff": 48},
    },
}


@pytest.mark.parametrize("block", ["ffn", "layer"])
def test_an_expert_parallel_mixture_over_two_ranks(tmp_path, block):
    """4 routed experts over 2 gloo ranks, 2 each, every rank its own 64 tokens: rank 0's output equals the whole
    mixture's on its tokens; 4 all-to-alls a forward (the counts, the expert ids and the rows dispatched, the rows
    combined); the plans' dispatch and combine by hand from a links file's all-to-all over 2 ranks: 2 calls of
    α + β · (64 tokens × top-k 2 × 64 × 4 bytes) (bus bandwidth (n − 1)/n / β, of which (n − 1)/n of the bytes cross)."""
    alpha, beta = 2e-3, 3e-9
    path = tmp_path / "links.json"
    entry = {"collective": "all_to_all", "ranks": 2, "fit": {"latency_s": alpha, "seconds_per_byte": beta}}
    path.write_text(json.dumps({"schema": "ffncalc.links/1", "collectives": [entry]}))
    model = ffncalc.Model.from_dict(MOE)
    result = ffncalc.bench(model, block=block, ep=2, device="cpu", tokens=64, repeats=2, warmup=1, links=str(path))
    record = result.to_dict()
    validate(record, "bench-tp")
    assert (record["parallel"], record["ranks"], record["collectives"]) == ("expert", 2, 4)
    assert record["max_abs_error"] <= 1e-5 * max(1.0, record["max_abs_output"])
    assert record["matches"] is True and record["tolerance"] == 1e-4
    assert record["comm_bytes"] == 64 * 2 * 64 * 4
    assert record["predicted_comm_s"] == pytest.approx(2 * (alpha + beta * 64 * 2 * 64 * 4), rel=1e-12)


def test_a_failing_rank_is_one_line():
    """A function that fails on the ranks (operator.getitem on a Rank: a TypeError) ends the run with one line that
    says what failed, and no rank is left running."""
    import operator

    from ffncalc.errors import MeasurementError

    with pytest.raises(MeasurementError, match=r"^a rank failed: TypeError: 'Rank' object is not subscriptable$"):
        ranks.run(operator.getitem, 0, 2, "cpu", timeout_s=60)
