"""Inkling (inkling_text): its attention with a relative bias and short convolutions (rel_attention), its mixture
whose router weighs the shared experts too (sink_moe) and its scaled dense MLP (scaled_gated), by hand on a small
config, against the reference torch modules, and against transformers 5.23.0's InklingForCausalLM (parameters, and
one forward's FLOPs under FlopCounterMode, where only transformers' padded convolutions differ)."""

import json

import pytest

from ffncalc.analysis import hfcheck
from ffncalc.analysis.count import tally
from ffncalc.analysis.verify import verify
from ffncalc.sources import hf

pytestmark = pytest.mark.torch

V, D = 100, 64
SMALL = {
    "model_type": "inkling_text",
    "vocab_size": V,
    "hidden_size": D,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "swa_num_attention_heads": 4,
    "swa_num_key_value_heads": 1,
    "swa_head_dim": 8,
    "sliding_window_size": 8,
    "rel_extent": 12,
    "d_rel": 4,
    "local_layer_ids": [0, 1],
    "mlp_layer_types": ["dense", "sparse", "sparse"],
    "intermediate_size": 96,
    "moe_intermediate_size": 32,
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
    "n_shared_experts": 2,
    "log_scaling_n_floor": 4,
    "max_position_embeddings": 256,
}


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    p = tmp_path_factory.mktemp("inkling") / "config.json"
    p.write_text(json.dumps(SMALL))
    return p


def attention(heads: int, kv: int, hd: int, extent: int) -> int:
    """q, k, v, r (d_rel 4 per head), o; the K = 4 convolutions on k and v; q_norm, k_norm; the bank (4 × extent);
    the output's convolution over d."""
    return D * heads * hd + 2 * D * kv * hd + D * heads * 4 + heads * hd * D + 2 * kv * hd * 4 + 2 * hd + 4 * extent + D * 4


def test_parameters_by_hand(path):
    local, full = attention(4, 1, 8, 8), attention(4, 2, 16, 12)  # a local layer's bias reaches its window
    dense = 3 * D * 96 + 1 + D * 4  # SwiGLU, its global scale, the output convolution
    moe = (8 + 2) * D + 1 + 8 * 3 * D * 32 + 2 * 3 * D * 32 + D * 4  # router over routed and shared, its scale
    norms = 2 * D
    assert (local, full, dense, moe) == (6512, 13904, 18689, 62337)
    total = V * D + D + (local + dense + norms) + (local + moe + norms) + (full + moe + norms) + D + V * D
    _, spec = hf.load(path)
    assert tally(spec).params == total == 183_603


@pytest.mark.parametrize("convention", ["exact", "causal"])
@pytest.mark.parametrize("seq_len", [5, 13])
def test_verify_against_torch(path, convention, seq_len):
    _, spec = hf.load(path)
    report = verify(spec, model="inkling", seq_len=seq_len, convention=convention)
    assert report.ok, report.failures


def test_against_transformers(path):
    c = hf.read_config(path)
    measured = hfcheck.measure(c, flops=True)
    report = hfcheck.check(c, measured=measured)
    assert report.ok, report.failures
    assert not any(ch.component.startswith("(unmatched)") for ch in report.checks)
    for ch in hfcheck.check_flops(c, measured):
        if ch.component.endswith("conv1d"):  # conv1d padded by K - 1 on both sides: s + K - 1 outputs kept to s
            assert ch.transformers * ch.seq_len == ch.ours * (ch.seq_len + 3), ch
        else:
            assert ch.ok, ch
