"""Inkling 2 (inkling2_text): rel_attention's Inkling 2 options (output gate, per-token sinks, L2 clips, value norm,
scaled and dynamic convolutions, separately normed key and value inputs), sink_moe's sigmoid router, and the block
attention residuals (parts/block_residuals.py), by hand on a small config, against the reference torch modules, and
against transformers 5.23.0's Inkling2ForCausalLM (parameters, and one forward's FLOPs under FlopCounterMode)."""

import json

import pytest

from ffncalc.analysis import hfcheck
from ffncalc.analysis.count import tally, terms
from ffncalc.parts.block_residuals import BlockResiduals
from ffncalc.sources import hf

V, D = 100, 64
SMALL = {
    "model_type": "inkling2_text",
    "vocab_size": V,
    "hidden_size": D,
    "num_hidden_layers": 5,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "swa_num_attention_heads": 4,
    "swa_num_key_value_heads": 1,
    "swa_head_dim": 8,
    "sliding_window_size": 8,
    "rel_extent": 12,
    "d_rel": 4,
    "layer_types": ["hybrid_sliding", "hybrid", "hybrid_sliding", "hybrid", "hybrid_sliding"],
    "n_layers_per_attn_res_block": 2,
    "moe_intermediate_size": 32,
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
    "max_position_embeddings": 256,
}


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = tmp_path_factory.mktemp("inkling2") / "config.json"
    p.write_text(json.dumps(SMALL))
    return p


def test_block_states_by_hand():
    """Blocks of 2: layer 0 starts block 0 (its mlp_input reads the embeddings and its attention's output), layer 2
    starts block 1 (the embeddings and block 0 before its attention; block 1's start after it), layer 4 block 2."""
    res = BlockResiduals(2)
    assert [res.layer_mixes(i, 3 if i % 2 else 1) for i in range(5)] == [(0, 0, 2), (2, 3, 2), (2, 1, 3), (3, 3, 3), (3, 1, 4)]
    assert res.finished(5) + 1 == 4  # final_input: the embeddings, blocks 0 and 1, block 2's partial sum
    assert [BlockResiduals(6).finished(i) for i in (0, 1, 6, 7, 48)] == [0, 1, 1, 2, 8]


def test_parameters_by_hand(path):
    # q, k, v, r, o, gate, sink; the convolutions on k and v (K = 4), the bank (4 × the window), the clips' scales
    # (q: heads × head_dim; relative states: heads × d_rel), the output convolution over d
    sliding = D * 32 + 2 * D * 8 + D * 16 + 32 * D + D * 32 + D * 4 + 2 * 8 * 4 + 4 * 8 + 4 * 8 + 4 * 4 + D * 4
    # the same with 2 KV heads of 16, a bank over rel_extent, dynamic convolutions (static 4 × 32, weight_proj
    # d -> 2 heads × 4 taps) and the keys' and values' own input norms
    full = D * 64 + 2 * D * 32 + D * 16 + 64 * D + D * 64 + D * 4 + 2 * (4 * 32 + D * 8) + 4 * 12 + 4 * 16 + 4 * 4 + 2 * D + D * 4
    moe = 8 * D + 8 * 3 * D * 32 + D * 4  # router over the routed experts alone, SwiGLU experts, output convolution
    queries = D + (3 * D + D) + (D + D) + (3 * D + D) + (D + D)  # no attention_input in layer 0; three in full layers
    assert (sliding, full, moe, queries) == (8848, 19456, 49920, 832)
    total = V * D + D + 3 * sliding + 2 * full + 5 * (moe + 2 * D) + queries + D + D + V * D
    _, spec = hf.load(path)
    assert tally(spec).params == total == 329_520


def test_mixing_flops_by_hand(path):
    """Each mix of m states with q queries: q·m·d multiply-adds for the scores and as many for the values."""
    _, spec = hf.load(path)
    macs = [(t.name, t.macs) for t in terms(spec, 16) if t.name.startswith("res.") and t.macs]
    states = {"res.ffn": 2 + 2 + 3 + 3 + 4, "res.attention": 3 * 2 + 2 + 3 * 3 + 3, "res.final": 4}
    for name, m in states.items():
        assert sum(n for k, n in macs if k.startswith(name + ".")) == 2 * m * D


@pytest.mark.torch
@pytest.mark.parametrize("convention", ["exact", "causal"])
@pytest.mark.parametrize("seq_len", [5, 13])
def test_verify_against_torch(path, convention, seq_len):
    from ffncalc.analysis.verify import verify

    _, spec = hf.load(path)
    for every_layer in (False, True):
        report = verify(spec, model="inkling2", seq_len=seq_len, convention=convention, every_layer=every_layer)
        assert report.ok, report.failures


@pytest.mark.torch
def test_against_transformers(path):
    c = hf.read_config(path)
    measured = hfcheck.measure(c, flops=True)
    report = hfcheck.check(c, measured=measured)
    assert report.ok, report.failures
    assert not any(ch.component.startswith("(unmatched)") for ch in report.checks)
    checks = hfcheck.check_flops(c, measured)
    for ch in checks:
        if ch.component.endswith("conv1d"):  # conv1d padded by K - 1 on both sides: s + K - 1 outputs kept to s
            assert ch.transformers * ch.seq_len == ch.ours * (ch.seq_len + 3), ch
        elif ch.component in ("attn.k_conv", "attn.v_conv"):  # the taps' products are elementwise there: 32·4 each
            assert ch.ours - ch.transformers == 2 * 32 * 4 * ch.seq_len * ch.batch, ch
        elif ch.layers is None and ch.component in ("attention products", "(unmatched) model.final_input"):
            # final_input's weights times the states: a model-level product of activations, which transformers
            # finds in final_input's module
            final = {k.component: k for k in checks if k.layers is None and k.seq_len == ch.seq_len and k.batch == ch.batch}
            assert final["attention products"].ours == final["(unmatched) model.final_input"].transformers, ch
        else:
            assert ch.ok, ch
