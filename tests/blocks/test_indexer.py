"""DeepSeek Sparse Attention's indexer in multi-head latent attention (DeepSeek-V3.2-Exp technical report §2.1;
transformers 5.23.0 DeepseekV32Indexer and GlmMoeDsaIndexer): its parameters, its FLOPs against torch, its
cache, and its selection against transformers' own indexer."""

from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from ffncalc.analysis import hfcheck, inference
from ffncalc.analysis.count import tally
from ffncalc.analysis.verify import verify
from ffncalc.blocks import _torch
from ffncalc.blocks.mla import index_scores
from ffncalc.model import from_data
from ffncalc.sources import hf
from ffncalc.sources.hf.families.dsa import glm_indexer_types

pytestmark = pytest.mark.torch  # reference modules, real tensors or FlopCounterMode

CONFIGS = Path(__file__).resolve().parents[1] / "hf_configs"


def indexer_params(rows) -> int:
    return sum(r.params for r in rows if r.name.startswith("attn.indexer."))


def test_indexer_parameters_per_layer_by_hand():
    # DeepSeek-V3.2: wq_b q_lora_rank 1536 -> 64 heads × 128, wk 7168 -> 128, k_norm a LayerNorm of 128
    # (weight and bias), weights_proj 7168 -> 64; no biases. The public checkpoint lists the same shapes:
    # indexer.wq_b [8192, 1536], wk [128, 7168], k_norm weight and bias [128], weights_proj [64, 7168].
    per_layer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    assert per_layer == 13_959_424
    t = tally(hf.load(CONFIGS / "deepseek-v3.2.json")[1])
    assert indexer_params(t.rows) == 61 * per_layer
    # DeepSeek-V3.2 is DeepSeek-V3 (671,026,404,352 in transformers, tests/families/test_hf.py TOTALS) plus the indexers
    assert t.params == 671_026_404_352 + 61 * per_layer
    # GLM-5.1: q_lora_rank 2048 -> 32 heads × 128, wk 6144 -> 128, k_norm 2 × 128, weights_proj 6144 -> 32
    glm = 2048 * 32 * 128 + 6144 * 128 + 2 * 128 + 6144 * 32
    assert glm == 9_371_904
    assert indexer_params(tally(hf.load(CONFIGS / "glm-5.1.json")[1]).rows) == 78 * glm


def test_glm_5_1_total_from_its_checkpoint():
    """GLM-5.1's checkpoint holds 753,864,139,008 elements (a public model report's tensor listing of
    zai-org/GLM-5.1): less its multi-token-prediction layer 78, which GlmMoeDsaForCausalLM does not build, and
    the 75 routers' e_score_correction_bias (256 each), buffers in transformers, it is GLM-5.1's total."""
    d = 6144
    attention = (
        d * 2048
        + 2048
        + 2048 * 16384
        + d * 576
        + 512
        + 512 * 28672
        + 16384 * d  # MLA with its norms
        + 2048 * 32 * 128
        + d * 128
        + 2 * 128
        + d * 32
    )  # the indexer
    moe = 256 * 3 * 2048 * d + 256 * d + 3 * 2048 * d  # 256 experts, the router, one shared expert
    mtp = attention + moe + 256 + 2 * d + d * 2 * d + 3 * d  # its correction bias, 2 norms, eh_proj, 3 norms
    total = 753_864_139_008 - mtp - 75 * 256
    assert tally(hf.load(CONFIGS / "glm-5.1.json")[1]).params == total == 743_911_199_232


def small(**indexer):
    attention = {
        "kind": "mla",
        "n_heads": 4,
        "q_lora_rank": 16,
        "kv_lora_rank": 8,
        "qk_nope_head_dim": 8,
        "qk_rope_head_dim": 4,
        "v_head_dim": 8,
        **indexer,
    }
    return from_data(
        {
            "vocab_size": 64,
            "d_model": 32,
            "n_layers": 2,
            "context_length": 16,
            "attention": attention,
            "ffn": {"kind": "gated", "d_ff": 64},
        }
    )


@pytest.mark.parametrize("convention", ["exact", "causal"])
def test_small_spec_with_the_indexer_verifies(convention):
    # index_topk 4 < 12 tokens: the reference module really selects and masks
    spec = small(index_n_heads=2, index_head_dim=8, index_topk=4)
    s = 12
    report = verify(spec, seq_len=s, convention=convention)
    assert report.ok, report.failures
    pairs = s * s if convention == "exact" else s * (s + 1) // 2  # the full square, or the causal triangle
    flops = {c.component: c.torch_flops for c in report.checks}
    # 2 FLOPs a multiply-add × 2 layers × 2 index heads × (8 features for q·k, 1 for the weighted head sum)
    assert flops["attn.indexer.scores"] == 2 * 2 * 2 * 8 * pairs
    assert flops["attn.indexer.head_sum"] == 2 * 2 * 2 * 1 * pairs
    # wq_b 16 -> 2 × 8, wk 32 -> 8, weights_proj 32 -> 2: 2 FLOPs per weight and token, 2 layers
    assert flops["attn.indexer.wq_b.weight"] == 2 * 2 * s * 16 * 16
    assert flops["attn.indexer.wk.weight"] == 2 * 2 * s * 32 * 8
    assert flops["attn.indexer.weights_proj.weight"] == 2 * 2 * s * 32 * 2
    params = {c.component: c.torch_params for c in report.checks}
    assert params["attn.indexer.k_norm"] == 2 * 2 * 8  # weight and bias, 2 layers
    assert any("index_topk" in note for note in report.notes)


def test_kv_cache_per_token_by_hand():
    # DeepSeek-V3.2 caches per layer the latent (512), the shared rotary key (64) and the indexer's key (128)
    spec = hf.load(CONFIGS / "deepseek-v3.2.json")[1]
    assert spec.layers[0].attention.cache_elements(spec) == 512 + 64 + 128
    assert inference.kv_bytes_per_token(spec, 16) == 61 * (512 + 64 + 128) * 2
    glm = hf.load(CONFIGS / "glm-5.1.json")[1]
    assert inference.kv_bytes_per_token(glm, 16) == 78 * (512 + 64 + 128) * 2
    # without the indexer, the latent and the rotary key only
    plain = small()
    assert plain.layers[0].attention.cache_elements(plain) == 8 + 4


def test_index_scores_match_the_formula_and_count_the_triangle():
    """I[t, s] = Σ_j w[t, j] · ReLU(q[t, j] · k[s]) (DeepSeek-V3.2-Exp eq. 1), over every key and over the triangle."""
    torch.manual_seed(2)
    b, h, s, d = 2, 3, 11, 5
    q, k, w = torch.randn(b, h, s, d), torch.randn(b, 1, s, d).expand(b, h, s, d), torch.randn(b, s, h)
    naive = torch.einsum("bth,bhts->bts", w, torch.relu(torch.einsum("bhtd,bhsd->bhts", q, k)))
    mm1, mm2 = _torch.MatMul(), _torch.MatMul()
    with FlopCounterMode(display=False) as counter:
        full = index_scores(q, k, w, mm1, mm2, causal=False)
    torch.testing.assert_close(full, naive)
    assert counter.get_total_flops() == 2 * b * h * s * s * (d + 1)
    with FlopCounterMode(display=False) as counter:
        tri = index_scores(q, k, w, mm1, mm2, causal=True, block=3)
    mask = torch.ones(s, s, dtype=torch.bool).tril()
    torch.testing.assert_close(tri, naive.masked_fill(~mask, float("-inf")))
    assert counter.get_total_flops() == 2 * b * h * (s * (s + 1) // 2) * (d + 1)


def test_reference_indexer_selects_what_transformers_selects():
    """The reference module's indexer, given transformers' DeepseekV32Indexer weights, keeps the same top-k keys."""
    from transformers import DeepseekV32Config
    from transformers.models.deepseek_v32.modeling_deepseek_v32 import DeepseekV32Indexer, DeepseekV32RotaryEmbedding

    torch.manual_seed(0)
    config = DeepseekV32Config(
        hidden_size=32,
        q_lora_rank=16,
        index_n_heads=16,
        index_head_dim=8,
        qk_rope_head_dim=4,
        index_topk=4,
        num_attention_heads=4,
        num_hidden_layers=1,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
    )
    theirs = DeepseekV32Indexer(config, 0).eval()
    for p in theirs.parameters():
        torch.nn.init.normal_(p)
    model = small(index_n_heads=16, index_head_dim=8, index_topk=4)
    ours = model.layers[0].attention.torch_module(model, True).indexer
    ours.load_state_dict(theirs.state_dict())  # the same names: wq_b, wk, k_norm, weights_proj
    b, s = 2, 10
    x, q_latent = torch.randn(b, s, 32), torch.randn(b, s, 16)
    positions = torch.arange(s).expand(b, s)
    causal_mask = torch.full((s, s), float("-inf")).triu(1).expand(b, s, s)
    kept = theirs(x, q_latent, DeepseekV32RotaryEmbedding(config)(x, positions), causal_mask, positions)
    selected = ours(x, q_latent)  # (B, s, topk): the keys each query keeps
    for i in range(3, s):  # from query 3 on, at least 4 keys are visible: no tie among masked keys
        for j in range(b):
            assert set(kept[j, i].tolist()) == set(selected[j, i].tolist())


TINY_GLM = {
    "model_type": "glm_moe_dsa",
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 96,
    "moe_intermediate_size": 32,
    "num_hidden_layers": 6,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "n_shared_experts": 1,
    "kv_lora_rank": 16,
    "q_lora_rank": 24,
    "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 16,
    "v_head_dim": 16,
    "index_n_heads": 2,
    "index_head_dim": 16,
    "index_topk": 4,
    "first_k_dense_replace": 1,
    "index_topk_freq": 2,
    "index_skip_topk_offset": 2,
}


def test_glm_shared_layers_hold_no_indexer():
    """IndexShare (GlmMoeDsaConfig: index_topk_freq, index_skip_topk_offset): a "shared" layer reuses an earlier
    layer's top-k and has no indexer; ours against transformers built live."""
    from transformers import GlmMoeDsaConfig

    c = hf.Config(TINY_GLM, "", "tiny-glm")
    types = GlmMoeDsaConfig(**{k: v for k, v in TINY_GLM.items() if k != "model_type"}).indexer_types
    assert glm_indexer_types(c) == types == ["full", "full", "shared", "full", "shared", "full"]
    report = hfcheck.check(c)
    assert report.ok, report.failures
    spec = hf.to_spec(c)
    # 4 full layers × (wq_b 24 -> 2 × 16, wk 64 -> 16, k_norm 2 × 16, weights_proj 64 -> 2)
    assert indexer_params(tally(spec).rows) == 4 * (24 * 32 + 64 * 16 + 2 * 16 + 64 * 2)
    assert verify(spec, seq_len=8, convention="causal").ok
    # GLM-5.2's schedule (offset 3, every 4th layer): as GlmMoeDsaConfig derives it
    big = {"num_hidden_layers": 78, "index_topk_freq": 4, "index_skip_topk_offset": 3}
    expected = GlmMoeDsaConfig(**big).indexer_types
    assert glm_indexer_types(hf.Config({"model_type": "glm_moe_dsa", **big}, "", "x")) == expected
    assert expected.count("full") == 21


@pytest.mark.parametrize(
    "attention, message",
    [
        ({"index_n_heads": 2, "index_head_dim": 8, "q_lora_rank": None}, "q_lora_rank"),
        ({"index_head_dim": 8}, "without index_n_heads"),
        ({"index_n_heads": 2}, "index_head_dim"),
    ],
)
def test_indexer_spec_errors(attention, message):
    base = {
        "kind": "mla",
        "n_heads": 4,
        "q_lora_rank": 16,
        "kv_lora_rank": 8,
        "qk_nope_head_dim": 8,
        "qk_rope_head_dim": 4,
        "v_head_dim": 8,
    }
    with pytest.raises(Exception, match=message):
        from_data(
            {
                "vocab_size": 64,
                "d_model": 32,
                "n_layers": 2,
                "context_length": 16,
                "attention": {**base, **attention},
                "ffn": {"kind": "gated", "d_ff": 64},
            }
        )


def test_deepseek_v32_defaults_and_mlp_layer_types_against_transformers():
    """A sparse deepseek_v32 config: DeepseekV32Config's indexer defaults (64 heads × 128) where the keys are
    absent, and mlp_layer_types read layer by layer (not first_k_dense_replace), as transformers builds it."""
    data = {
        "model_type": "deepseek_v32",
        "vocab_size": 128,
        "hidden_size": 64,
        "intermediate_size": 96,
        "moe_intermediate_size": 32,
        "num_hidden_layers": 4,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "n_routed_experts": 4,
        "num_experts_per_tok": 2,
        "n_group": 1,
        "topk_group": 1,
        "kv_lora_rank": 16,
        "q_lora_rank": 24,
        "qk_rope_head_dim": 8,
        "qk_nope_head_dim": 16,
        "v_head_dim": 16,
        "mlp_layer_types": ["dense", "sparse", "dense", "sparse"],
    }
    c = hf.Config(data, "", "tiny-v32")
    report = hfcheck.check(c)
    assert report.ok, report.failures
    spec = hf.to_spec(c)
    # 4 layers × (wq_b 24 -> 64 × 128, wk 64 -> 128, k_norm 2 × 128, weights_proj 64 -> 64)
    assert indexer_params(tally(spec).rows) == 4 * (24 * 64 * 128 + 64 * 128 + 2 * 128 + 64 * 64)
    assert [layer.ffn.kind for layer in spec.layers] == ["gated", "moe", "gated", "moe"]
    assert verify(spec, seq_len=4).ok


def test_useful_flops_attend_the_topk_keys_by_hand():
    """DeepSeek-V3.2 at 32,768 tokens, useful view: the attention meets min(i + 1, 2048) keys at query i
    (the first 2,048 queries every key before them, each later one its 2,048 picked keys), the indexer every
    earlier key; executed dense, both meet all 32,768 keys."""
    spec = hf.load(CONFIGS / "deepseek-v3.2.json")[1]
    s, k, heads, qk, v, hi, di = 32_768, 2048, 128, 192, 128, 64, 128
    attention_pairs = k * (k + 1) // 2 + (s - k) * k
    indexer_pairs = s * (s + 1) // 2
    causal = tally(spec, convention="causal", seq_len=s)
    exact = tally(spec, seq_len=s)

    def core(t, name):
        return sum(r.flops for r in t.rows if r.name == name) * s

    assert core(causal, "attn.scores") == 61 * 2 * heads * qk * attention_pairs
    assert core(causal, "attn.values") == 61 * 2 * heads * v * attention_pairs
    assert core(causal, "attn.indexer.scores") == 61 * 2 * hi * di * indexer_pairs
    assert core(exact, "attn.scores") == 61 * 2 * heads * qk * s * s


def test_sparse_reference_equals_the_masked_dense_form():
    """The causal reference gathers each query's top-k keys and values (attend_selected); its output is softmax
    attention under the causal mask plus the selection mask, written out densely here."""
    from types import SimpleNamespace

    from ffncalc.blocks.mla import attend_selected

    torch.manual_seed(0)
    b, heads, s, dim, top = 2, 3, 11, 8, 4
    q, k, v = torch.randn(b, heads, s, dim), torch.randn(b, heads, s, dim), torch.randn(b, heads, s, dim)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    index = torch.randn(b, s, s).masked_fill(future, float("-inf"))
    keep = index.topk(top, dim=-1).indices  # (B, s, top)
    layer = SimpleNamespace(causal=True, positions="rotary", scores=_torch.MatMul(), values=_torch.MatMul())
    sparse = attend_selected(layer, q, k, v, keep)
    mask = torch.full((b, s, s), float("-inf")).scatter(-1, keep, 0.0).masked_fill(future, float("-inf"))
    dense = ((q @ k.transpose(-2, -1)) / dim**0.5 + mask[:, None]).softmax(-1) @ v
    assert torch.allclose(sparse, dense, atol=1e-5)
    with FlopCounterMode(display=False) as counter:
        attend_selected(layer, q, k, v, keep)
    pairs = top * (top + 1) // 2 + (s - top) * top
    assert counter.get_total_flops() == 2 * 2 * b * heads * dim * pairs


def test_absorbed_decode_meets_topk_keys_and_the_indexer_every_key():
    """One absorbed decode step of DeepSeek-V3.2 with 100,000 keys cached: the latent attention over 2,048
    keys, the indexer's scores over all 100,000 (DeepSeek-V3.2-Exp §2.1, its lightning indexer)."""
    spec = hf.load(CONFIGS / "deepseek-v3.2.json")[1]
    mla = spec.layers[0].attention
    fixed, per_key = mla.decode_cost(spec)
    h, rank, rope, hi, di, keys = 128, 512, 64, 64, 128, 100_000
    step = fixed + sum(f * (keys if w is None else min(keys, w)) for f, w, _, _ in per_key)
    attention = 2 * (h * (rank + rope) + h * rank) * 2048
    indexer = 2 * (hi * di + hi) * keys
    assert step - fixed == attention + indexer


def test_decode_step_of_an_indexer_reading_the_layer_input_by_hand():
    """Mistral Large 4's indexer (MistralLarge4TextIndexer) reads the layer's input through q_input_norm into wq_b, where
    DeepSeek-V3.2's reads the query latent: a decode step's wq_b is d_model × heads × head_dim multiply-adds in place of
    q_lora_rank × heads × head_dim, every other term the same (2 FLOPs each)."""
    from dataclasses import replace

    from ffncalc.blocks.mla import LatentAttention

    d, rank, hi, di = 512, 96, 4, 32
    spec = LatentAttention(n_heads=4, kv_lora_rank=64, qk_rope_head_dim=16, qk_nope_head_dim=32, v_head_dim=32, q_lora_rank=rank)
    spec = replace(spec, index_n_heads=hi, index_head_dim=di, index_topk=8)
    model = type("M", (), {"d_model": d})()
    latent, _ = spec.decode_cost(model)
    from_input, _ = replace(spec, index_input_norm=True).decode_cost(model)
    assert from_input - latent == 2 * (d - rank) * hi * di
