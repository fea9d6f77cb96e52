"""Expert-parallel dispatch across nodes in a prefill (DeepEP's normal kernels, exchange.forwarded): a token's input
crosses the network once to each other node it reaches and is forwarded there over NVLink to each device holding
one of its experts; a decode step's low-latency kernels send each of its k inputs on its own."""

import random
from pathlib import Path

import pytest

from ffncalc.analysis import exchange, formats, serving
from ffncalc.analysis.exchange import Traffic
from ffncalc.analysis.links import Link
from ffncalc.analysis.plan import Placement
from ffncalc.sources import presets

PRESETS = Path(__file__).resolve().parents[2] / "presets"


def simulate(n_experts, top_k, ep, node, max_nodes, tokens=40_000, seed=7):
    """DeepEP's sending rule on sampled routes: each token from a uniform device, its nodes (at most max_nodes,
    drawn uniformly) and then its k experts drawn uniformly from theirs, experts in order on the devices; one network
    copy to each other node it reaches, one NVLink copy to each device it reaches but the one that receives it there
    (the device of its own local rank, or itself at home)."""
    rng = random.Random(seed)
    nodes = ep // node
    per_device, per_node = n_experts // ep, n_experts // nodes
    network = nvlink = 0
    for _ in range(tokens):
        home = rng.randrange(ep)
        allowed = rng.sample(range(nodes), max_nodes) if max_nodes and max_nodes < nodes else range(nodes)
        pool = [e for n in allowed for e in range(n * per_node, (n + 1) * per_node)]
        devices = {e // per_device for e in rng.sample(pool, top_k)}
        network += len({d // node for d in devices} - {home // node})
        nvlink += sum(1 for d in devices if d % node != home % node)
    return network / tokens, nvlink / tokens


@pytest.mark.parametrize("ep,max_nodes", [(32, None), (32, 4), (32, 2), (64, 4), (8, None)])
def test_copies_match_a_simulation_of_the_sending_rule(ep, max_nodes):
    """DeepSeek-V3's 256 experts, 8 a token, over ep devices of 8 a node."""
    f = exchange.forwarded(256, 8, ep, 8, max_nodes)
    network, nvlink = simulate(256, 8, ep, 8, max_nodes)
    assert f.network == pytest.approx(network, rel=0.02, abs=1e-9)
    assert f.nvlink == pytest.approx(nvlink, rel=0.02)


def test_deepseek_v3_on_four_nodes_by_hand():
    """EP 32 over 4 nodes of 8: a node holds 64 of the 256 experts and is missed by a token's 8 with chance
    C(192, 8) / C(256, 8) = Π (192 − i) / (256 − i), i < 8; the token reaches 4 (1 − that) nodes, 3/4 of them
    another node's: 2.71 network copies where a per-expert all-to-all sends 8 · 31/32 = 7.75."""
    miss = 1.0
    for i in range(8):
        miss *= (192 - i) / (256 - i)
    f = exchange.forwarded(256, 8, 32, 8, 4)
    assert f.nodes == pytest.approx(4 * (1 - miss), rel=1e-12)
    assert f.network == pytest.approx(3 * (1 - miss), rel=1e-12)
    assert 2.70 < f.network < 2.72
    # two nodes of the four: 128 experts, each node missed with C(64, 8) / C(128, 8)
    half = 1.0
    for i in range(8):
        half *= (64 - i) / (128 - i)
    assert exchange.forwarded(256, 8, 32, 8, 2).nodes == pytest.approx(2 * (1 - half), rel=1e-12)


def test_a_prefill_all_to_all_paces_at_the_slower_hop():
    """DeepSeek-V3 fp8 at tp 1, ep 32 (4 nodes), 16,384 tokens a device, no latency: each of its 58 mixture layers
    dispatches (fp8 with a scale per 128 values: 1 + 4/128 bytes a value) and combines (bf16) each token's 7,168
    values, the network carrying the 2.71 copies at 50 GB/s while NVLink carries the forwarded ones at 450; the
    network is the slower. A decode's all-to-alls send 8 · 31/32 copies over the network."""
    s = presets.load(str(PRESETS / "deepseek-v3.yaml"))[1]
    p = Placement(gpus=32, tp=1, ep=32, max_nodes=4)
    st = serving.stages(s, formats.weight_bytes(s, formats.named("fp8")), 1)[0]
    link = Link(450.0, 0.0, 450.0, 0.0, 8, 50.0)
    f = exchange.forwarded(256, 8, 32, 8, 4)
    values = 16_384 * 7168
    assert f.nvlink / 450 < f.network / 50
    by_hand = 58 * values * f.network * (2 + 1 + 4 / 128) / 50e9
    _, prefill = exchange.stage_comm_parts(s, st, p, 16_384, link, Traffic(fp8=True, prefill=True))
    assert prefill == pytest.approx(by_hand, rel=1e-12)
    _, decode = exchange.stage_comm_parts(s, st, p, 16_384, link, Traffic(fp8=True))
    assert decode == pytest.approx(58 * values * 8 * 31 / 32 * (2 + 1 + 4 / 128) / 50e9, rel=1e-12)


def test_max_nodes_needs_experts_shared_across_copies(cli):
    code, out, err = cli("fit", "deepseek-v3", "--hardware", "h100-sxm", "--gpus", "16", "--dtype", "fp8", "--max-nodes", "2")
    assert code == 2 and out == "" and "--max-nodes 2" in err and "--ep beyond --tp" in err and err.count("\n") == 1


def test_the_plan_states_each_hops_bytes():
    """DeepSeek-V3 fp8 at ep 32 over 4 nodes: a prefill token's dispatch sends 3 (1 − C(192, 8) / C(256, 8)) copies
    of its 7,168 fp8 values and their scales over the network; a decode token's sends its 8 inputs, 31/32 of them to
    other devices."""
    import ffncalc

    miss = 1.0
    for i in range(8):
        miss *= (192 - i) / (256 - i)
    r = ffncalc.infer("deepseek-v3", prompt=512, generate=1, hardware="h100-sxm", dtype="fp8", gpus=32, tp=1, ep=32)
    f = {k: v.value for k, v in r.figures.items()}
    value = 7168 * (1 + 4 / 128)
    assert f["prefill_dispatch_network_bytes"] == pytest.approx(3 * (1 - miss) * value, rel=1e-12)
    assert f["decode_dispatch_bytes"] == pytest.approx(8 * 31 / 32 * value, rel=1e-12)
    assert f["prefill_dispatch_nvlink_bytes"] > 0
