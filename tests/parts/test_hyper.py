"""Hyper-connections (parts/hyper.py) and the QSA reach (model/terms.py), against hand-derived counts."""

import pytest

from ffncalc.analysis.count import tally
from ffncalc.model.terms import attended_pairs
from ffncalc.sources import hf


def _spec(hyper: dict, **norm):
    return {
        "vocab_size": 10,
        "d_model": 8,
        "n_layers": 2,
        "context_length": 16,
        "attention": {"n_heads": 2},
        "ffn": {"kind": "gated", "d_ff": 4},
        "hyper": hyper,
        "norm": {"kind": "rmsnorm", **norm},
    }


def _params(data) -> dict[str, int]:
    from ffncalc.model.schema import validate
    from ffncalc.model.spec import ModelSpec
    from ffncalc.model.stack import resolve

    out: dict[str, int] = {}
    for row in tally(resolve(validate(ModelSpec, data))).rows:
        out[row.component] = out.get(row.component, 0) + row.params
    return out


def test_mhc_sites_and_head():
    """k = 3, d = 8, N = 24: each site fn (2 + k)k × N = 15 × 24, base 15, scale 3; the head k × N, k, 1."""
    p = _params(_spec({"streams": 3, "mixer": "mhc"}))
    assert p["hc.attn"] == p["hc.ffn"] == 2 * (15 * 24 + 15 + 3)
    assert p["hc.head"] == 3 * 24 + 3 + 1


def test_ihc_sites():
    """fn 2k × N = 6 × 24, base 6, scale 2, in each of two layers."""
    p = _params(_spec({"streams": 3, "mixer": "ihc"}))
    assert p["hc.attn"] == 2 * (6 * 24 + 6 + 2)


def test_gated_sites_and_head():
    """norm N, down N × r, up r × N, inject N × k (not in the head); r = 5."""
    p = _params(_spec({"streams": 3, "mixer": "gated", "rank": 5}, per_layer=0, final=False))
    assert (p["hc.attn.norm"], p["hc.attn.down"], p["hc.attn.up"], p["hc.attn.inject"]) == (48, 240, 240, 144)
    assert (p["hc.head.norm"], p["hc.head.down"], p["hc.head.up"]) == (24, 120, 120)
    assert "hc.head.inject" not in p


@pytest.mark.parametrize("chunk, blocks", [(1, 1), (2, 2), (3, 1), (4, 3)])
def test_budget_and_block_pairs(chunk, blocks):
    for tokens in range(40):
        assert attended_pairs(tokens, blocks * chunk, chunk, "budget") == sum(
            min(p, blocks * chunk + p % chunk) for p in range(1, tokens + 1)
        )
        assert attended_pairs(tokens, None, chunk, "blocks") == sum(p // chunk for p in range(1, tokens + 1))


@pytest.mark.torch
@pytest.mark.parametrize(
    "data",
    [
        {
            "model_type": "hy_v4",
            "hidden_size": 64,
            "intermediate_size": 96,
            "moe_intermediate_size": 32,
            "num_hidden_layers": 3,
            "num_attention_heads": 4,
            "q_lora_rank": 32,
            "kv_lora_rank": 16,
            "qk_nope_head_dim": 16,
            "qk_rope_head_dim": 8,
            "v_head_dim": 16,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "index_topk": 4,
            "index_head_dim": 16,
            "index_n_heads": 2,
            "vocab_size": 100,
            "hc_mult": 3,
        },
        {
            "model_type": "qwen4_exp_text",
            "hidden_size": 64,
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "linear_num_key_heads": 2,
            "linear_num_value_heads": 4,
            "linear_key_head_dim": 16,
            "linear_value_head_dim": 16,
            "moe_intermediate_size": 32,
            "shared_expert_intermediate_size": 48,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "vocab_size": 100,
            "hc_count": 3,
            "hc_lowrank": 24,
            "indexer_n_heads": 2,
            "indexer_kv_heads": 1,
            "indexer_head_dim": 16,
            "indexer_budget": 4,
            "indexer_compress_ratio": 2,
        },
    ],
)
def test_small_configs_verify_against_reference_modules(tmp_path, data):
    import json

    from ffncalc.analysis.verify import verify

    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    label, spec = hf.load(path)
    for convention in ("exact", "causal"):
        report = verify(spec, model=label, seq_len=9, convention=convention)
        assert report.ok, report.failures
