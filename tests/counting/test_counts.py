"""Analytic counts against published numbers, paper formulas and hand derivations.

No expected value here comes from ffncalc's own output: each is a published total (papers, model
cards, what the reference code instantiates) or a formula written out again from its source.
"""

from fractions import Fraction

import pytest

from ffncalc.analysis.count import merge_layers, tally
from ffncalc.analysis.hfcheck import Measured
from ffncalc.model import from_data
from ffncalc.model.spec import llama_ffn_width
from ffncalc.sources import presets


def count(name, **kw):
    return tally(presets.load(name)[1], **kw)


# Brown et al. 2020 Table 2.1 shapes under GPT-2 conventions; open models as their reference code
# instantiates them (../shared/reference.md, "Published totals of open models").
PUBLISHED_TOTALS = {
    "gpt3-125m": 125_226_240,
    "gpt3-350m": 355_871_744,
    "gpt3-760m": 760_300_032,
    "gpt3-1.3b": 1_315_723_264,
    "gpt3-2.7b": 2_651_553_280,
    "gpt3-6.7b": 6_658_404_352,
    "gpt3-13b": 12_853_386_240,
    "gpt3-175b": 174_604_259_328,
    "gpt3": 174_604_259_328,
    "gpt2": 124_439_808,
    # Hugging Face GPT2LMHeadModel.num_parameters() for the OpenAI checkpoints.
    "gpt2-medium": 354_823_168,
    "gpt2-large": 774_030_080,
    "gpt2-xl": 1_557_611_200,
    "llama2-7b": 6_738_415_616,
    "llama2-13b": 13_015_864_320,
    "llama2-70b": 68_976_648_192,
    "llama3-8b": 8_030_261_248,
    "llama3-70b": 70_553_706_496,
    "llama3.1-405b": 405_853_388_800,
    "mistral-7b": 7_241_732_096,
    "mixtral-8x7b": 46_702_792_704,
    "mixtral-8x22b": 140_620_634_112,
    "microgpt": 4_192,  # Karpathy's microgpt prints "num params: 4192"
    # What transformers instantiates from each model's public config.json (tests/families/test_hf.py measures it
    # again); Pythia Table 1 gives 1,414,647,808, the model cards 7.61B, 8.2B, 30.5B, 2.5B, 2.7B, 3.8B,
    # 7.3B, 15.7B and 671B.
    "qwen2.5-7b": 7_615_616_512,
    "qwen3-8b": 8_190_735_360,
    "qwen3-30b-a3b": 30_532_122_624,
    "gemma-2b": 2_506_172_416,
    "phi-2": 2_779_683_840,
    "phi-3-mini": 3_821_079_552,
    "olmo2-7b": 7_298_617_344,
    "pythia-1.4b": 1_414_647_808,
    "deepseek-v2-lite": 15_706_484_224,
    "deepseek-v3": 671_026_404_352,
    # the bigscience/bloom model card: 176,247,271,424 parameters
    "bloom-176b": 176_247_271_424,
}


@pytest.mark.parametrize("name,expected", PUBLISHED_TOTALS.items())
def test_published_totals(name, expected):
    t = count(name)
    assert isinstance(t.params, int)
    assert t.params == expected


@pytest.mark.parametrize(
    "name,total,active",
    [
        ("mixtral-8x7b", 46_702_792_704, 12_879_925_248),
        ("mixtral-8x22b", 140_620_634_112, 39_152_031_744),
    ],
)
def test_moe_active_params(name, total, active):
    t = count(name)
    assert (t.params, t.active) == (total, active)


def test_dense_models_are_fully_active():
    t = count("llama3-8b")
    assert t.active == t.params == 8_030_261_248


def test_every_preset_counts():
    assert len(presets.names()) >= 22
    for name in presets.names():
        t = count(name)
        assert t.params > 0 and t.flops_per_token > 0


# --- the seed's GPT-3 tally (seeds/004) -------------------------------------------------------


def test_3b1b_tally_of_gpt3():
    t = count("gpt3", convention="3b1b")
    assert t.params == 175_181_291_520
    assert t.matrices == 27_938
    rows = {r.name: r for r in t.rows}
    assert rows["embed.weight"].params == 617_558_016
    assert rows["lm_head.weight"].params == 617_558_016
    for name in ("attn.q.weight", "attn.k.weight", "attn.v.weight", "attn.o.weight"):
        assert rows[name].params == 14_495_514_624
    for name in ("ffn.up.weight", "ffn.down.weight"):
        assert rows[name].params == 57_982_058_496
    # one query, key and value matrix per head: 128 × 12,288 each, 96 heads × 96 layers
    assert rows["attn.q.weight"].shape == (128, 12_288)
    assert rows["attn.q.weight"].count == 96 * 96
    assert set(rows) == {
        "embed.weight",
        "attn.q.weight",
        "attn.k.weight",
        "attn.v.weight",
        "attn.o.weight",
        "ffn.up.weight",
        "ffn.down.weight",
        "lm_head.weight",
    }


# --- Llama's width rule (meta-llama FeedForward) ------------------------------------------------


@pytest.mark.parametrize(
    "d_model,multiple_of,multiplier,expected",
    [
        (4096, 256, None, 11008),  # Llama-2-7B
        (5120, 256, None, 13824),  # Llama-2-13B
        (8192, 4096, 1.3, 28672),  # Llama-2-70B and Llama-3-70B
        (4096, 1024, 1.3, 14336),  # Llama-3-8B
        (16384, 4096, 1.2, 53248),  # Llama-3.1-405B
    ],
)
def test_llama_width_rule(d_model, multiple_of, multiplier, expected):
    assert llama_ffn_width(d_model, multiple_of=multiple_of, multiplier=multiplier) == expected


# --- components, by hand ----------------------------------------------------------------------


def rows_of(t):
    return {r.name: r for r in t.rows}


def test_gpt3_components_by_hand():
    d, l, v, ctx = 12_288, 96, 50_257, 2048
    rows = rows_of(count("gpt3"))
    assert rows["embed.weight"].params == v * d
    assert rows["pos_embed.weight"].params == ctx * d
    assert rows["attn.q.weight"].params == l * d * d
    assert rows["attn.q.bias"].params == l * d
    assert rows["ffn.up.weight"].params == l * 4 * d * d
    assert rows["ffn.up.bias"].params == l * 4 * d
    assert rows["ffn.down.bias"].params == l * d
    assert rows["norms"].params == l * 2 * 2 * d  # two LayerNorms a layer, weight and bias
    assert rows["final_norm"].params == 2 * d
    assert rows["lm_head.weight"].params == 0 and rows["lm_head.weight"].tied
    # forward matmul FLOPs per token at s = 2048: 2 per multiply-add
    assert rows["attn.q.weight"].flops == l * 2 * d * d
    assert rows["attn.scores"].flops == l * 2 * ctx * d  # the full square: each query meets 2048 keys
    assert rows["attn.values"].flops == l * 2 * ctx * d
    assert rows["lm_head.weight"].flops == 2 * d * v  # logits, through the tied matrix


def test_gpt3_embedding_split():
    t = count("gpt3")
    d, v, ctx = 12_288, 50_257, 2048
    assert t.embedding == v * d + ctx * d  # the tied matrix once, plus positions
    assert t.non_embedding == 174_604_259_328 - t.embedding


def test_gqa_projection_shapes():
    rows = rows_of(count("llama3-8b"))  # 32 query heads, 8 KV heads of 128
    assert rows["attn.q.weight"].shape == (4096, 4096)
    assert rows["attn.k.weight"].shape == (1024, 4096)
    assert rows["attn.v.weight"].params == 32 * 1024 * 4096
    assert rows["ffn.gate.weight"].shape == (14336, 4096)
    assert rows["embed.weight"].params == rows["lm_head.weight"].params == 128_256 * 4096


def small(**overrides):
    base = dict(
        vocab_size=100, d_model=64, n_layers=2, context_length=32, attention={"n_heads": 4}, ffn={"kind": "dense", "d_ff": 256}
    )
    base.update(overrides)
    return from_data(base)


def test_head_dim_independent_of_width():
    spec = small(attention={"n_heads": 3, "n_kv_heads": 1, "head_dim": 32, "qkv_bias": True})
    rows = rows_of(tally(spec, seq_len=10))
    assert rows["attn.q.weight"].shape == (96, 64)
    assert rows["attn.q.bias"].params == 2 * 96
    assert rows["attn.k.weight"].shape == (32, 64)  # MQA: one KV head
    assert rows["attn.o.weight"].shape == (64, 96)
    assert "attn.o.bias" not in rows
    assert rows["attn.scores"].flops == 2 * (2 * 10 * 3 * 32)  # layers × 2 × s × heads × head_dim


@pytest.mark.parametrize("mode,q_width,k_width", [("head", 16, 16), ("full", 64, 32)])
def test_qk_norm(mode, q_width, k_width):
    spec = small(attention={"n_heads": 4, "n_kv_heads": 2, "qk_norm": mode})  # head_dim 16
    rows = rows_of(tally(spec))
    assert rows["attn.q_norm"].params == 2 * q_width  # RMSNorm: a weight only, two layers
    assert rows["attn.k_norm"].params == 2 * k_width


def test_mixed_stack_by_hand():
    """One dense layer, then two MoE layers with a shared expert; derived term by term."""
    spec = small(
        n_layers=3,
        attention={"n_heads": 4, "qkv_bias": True},
        ffn={
            "kind": "moe",
            "n_experts": 4,
            "top_k": 2,
            "router_bias": True,
            "expert": {"kind": "gated", "d_ff": 32},
            "n_shared_experts": 1,
            "shared": {"kind": "gated", "d_ff": 48},
        },
        layers=[{"repeat": 1, "ffn": {"kind": "dense", "d_ff": 256, "bias": True}}, {"repeat": 2}],
        norm={"kind": "layernorm"},
        tie_embeddings=True,
    )
    d, v = 64, 100
    attn = 4 * d * d + 3 * d  # q, k, v, o weights; q, k, v biases
    norms = 2 * 2 * d  # two LayerNorms, weight and bias
    dense = 2 * d * 256 + 256 + d
    router = d * 4 + 4
    expert = 3 * d * 32
    shared = 3 * d * 48
    moe_layer = attn + norms + router + 4 * expert + shared
    total = v * d + (attn + norms + dense) + 2 * moe_layer + 2 * d  # tied embedding, final LayerNorm
    t = tally(spec)
    assert t.params == total
    assert t.active == total - 2 * 2 * expert  # two of four experts idle in each MoE layer
    rows = {(r.name, r.layers): r for r in t.rows}
    assert rows[("ffn.up.weight", (0, 1))].params == d * 256
    assert rows[("ffn.experts.up.weight", (1, 3))].count == 2 * 4
    assert rows[("ffn.experts.up.weight", (1, 3))].flops == 2 * (2 * 2 * d * 32)  # top-2 in each of 2 layers
    assert rows[("ffn.router.weight", (1, 3))].flops == 2 * (2 * d * 4)


def test_learned_positions_and_lm_head_bias():
    spec = small(positions="learned", lm_head_bias=True)
    rows = rows_of(tally(spec))
    assert rows["pos_embed.weight"].params == 32 * 64
    assert rows["lm_head.bias"].params == 100
    assert rows["lm_head.weight"].params == 100 * 64  # untied


# --- conventions against the papers' formulas --------------------------------------------------


def test_kaplan_non_embedding_params_and_forward():
    """Kaplan et al. 2020 Table 1: N = 2·d·l·(2·d_attn + d_ff); C_fwd = 2N + 2·l·n_ctx·d_attn."""
    d, l, ctx = 12_288, 96, 2048
    n = 2 * d * l * (2 * d + 4 * d)
    assert n == 12 * l * d * d
    t = count("gpt3", convention="kaplan")
    assert t.non_embedding == n
    assert t.flops_per_token == 2 * n + 2 * l * ctx * d


def test_chinchilla_appendix_f():
    """Hoffmann et al. 2022 Appendix F's per-layer terms, forward FLOPs of one sequence with GPT-3 175B
    shapes: QKV, QKᵀ over the full square, softmax at 3 per score, AV, output and the dense block. The
    embedding and final-logits matmuls the appendix prints are left out, as Table A4 shows the count was
    implemented (test_conventions.py reproduces Table A4)."""
    s, d, heads, key, ffw, l = 2048, 12_288, 96, 128, 4 * 12_288, 96
    per_layer = (
        2 * 3 * s * d * (key * heads)
        + 2 * s * s * (key * heads)
        + 3 * heads * s * s
        + 2 * s * s * (key * heads)
        + 2 * s * (key * heads) * d
        + 2 * s * (2 * d * ffw)
    )
    t = count("gpt3", convention="chinchilla")
    assert t.forward_flops == l * per_layer
    assert t.train_flops == 3 * t.forward_flops


def test_megatron_paper_formula_with_recomputation():
    """Narayanan et al. 2021: F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) per iteration."""
    b, s, l, h, v = 4, 2048, 96, 12_288, 50_257
    f = 96 * b * s * l * h * h * (1 + Fraction(s, 6 * h) + Fraction(v, 16 * l * h))
    assert f.denominator == 1
    t = count("gpt3", convention="megatron", batch=b, recompute="full")
    assert t.train_flops == f


def test_palm_formula_reproduces_nanogpt():
    """PaLM Appendix B: 6N + 12·L·H·Q·T per token; nanoGPT's GPT-2 124M (no biases) at T = 1024
    gives 875,062,886,400 FLOPs per sequence."""
    spec = from_data(
        dict(
            vocab_size=50_257,
            d_model=768,
            n_layers=12,
            context_length=1024,
            positions="learned",
            tie_embeddings=True,
            attention={"n_heads": 12},
            ffn={"kind": "dense", "d_ff": 3072, "bias": False},
            norm={"kind": "layernorm", "bias": False},
        )
    )
    assert tally(spec).params == 124_337_664  # nanoGPT's count with bias=False
    t = tally(spec, convention="palm")
    assert t.train_flops == 875_062_886_400


def test_6n_reproduces_gpt3_training_compute():
    """Brown et al. 2020: 175B trained on 300B tokens took 3.14e23 FLOPs."""
    t = count("gpt3", convention="6n")
    assert t.flops_per_token == 2 * 174_604_259_328
    assert round(3 * t.flops_per_token * 300e9 / 1e21) == 314


def test_6n_counts_active_parameters_for_moe():
    t = count("mixtral-8x7b", convention="6n")
    assert t.flops_per_token == 2 * 12_879_925_248


def test_causal_counts_the_triangle():
    d, l, s = 768, 12, 1024
    full, causal = count("gpt2", seq_len=s), count("gpt2", convention="causal", seq_len=s)
    # QKᵀ and AV each: 2·s²·d per layer with the full square, 2·(s(s+1)/2)·d with the triangle
    assert full.forward_flops - causal.forward_flops == l * 2 * (2 * s * s * d - s * (s + 1) * d)


def test_exact_forward_flops_of_gpt2_by_hand():
    d, l, v, s = 768, 12, 50_257, 1024
    per_layer = 2 * (3 * d * d + d * d + 2 * 4 * d * d) + 2 * (2 * s * d)  # projections, MLP, QKᵀ and AV
    t = count("gpt2")
    assert t.flops_per_token == l * per_layer + 2 * d * v
    assert t.forward_flops == t.flops_per_token * s
    assert t.train_flops == 3 * t.forward_flops


def test_recompute_options():
    d, l, s = 768, 12, 1024
    base = count("gpt2")
    selective = count("gpt2", recompute="selective")
    full = count("gpt2", recompute="full")
    assert selective.train_flops - base.train_flops == l * 2 * (2 * s * d) * s  # QKᵀ and AV again
    logits = 2 * d * 50_257
    assert full.train_flops - base.train_flops == (base.flops_per_token - logits) * s


def test_batch_scales_pass_totals_only():
    one, four = count("gpt2", batch=1), count("gpt2", batch=4)
    assert four.flops_per_token == one.flops_per_token
    assert four.forward_flops == 4 * one.forward_flops


def test_elementwise_stays_out_of_matmul_figure():
    t = count("llama2-7b", seq_len=128)
    rows = rows_of(t)
    for name in ("ffn.act", "ffn.gate_product", "attn.softmax", "residual", "norms", "attn.rotary"):
        assert rows[name].flops == 0 and rows[name].elementwise > 0
    assert rows["ffn.gate_product"].elementwise == 32 * 11008  # one multiply per hidden unit per layer
    assert t.flops_per_token == sum(r.flops for r in t.rows)


@pytest.mark.parametrize(
    "preset,config,card",
    [
        ("gpt-oss-20b", "gpt-oss-20b", 21e9),  # OpenAI's model card: 21B parameters (3.6B active)
        # Gemma 3 report: 27B; the preset counts the whole model, its SigLIP tower and projector beside the language model
        # that tests/hf_truth records (423,060,336 more, derived by hand in tests/families/test_hf.py)
        ("gemma-3-27b", "gemma-3-27b-it", 27e9),
    ],
)
def test_presets_of_new_releases(preset, config, card):
    """A preset imported from a public config.json counts what transformers builds from that file (recorded in
    tests/hf_truth/), and rounds to the model card's figure."""
    import json
    from pathlib import Path

    truth = json.loads((Path(__file__).resolve().parents[1] / "hf_truth" / f"{config}.json").read_text())
    t = count(preset)
    towers = 423_060_336 if preset == "gemma-3-27b" else 0
    assert t.params == sum(n for _, n in Measured.from_record(truth).params) + towers
    assert round(t.params / 1e9) == round(card / 1e9)


def test_deepseek_v3_multi_token_prediction_module():
    """DeepSeek-V3 §2.2: one MTP module, a layer like the last (MLA and the 256-expert mixture), an eh_proj of
    2d -> d and three RMSNorms (enorm, hnorm, the shared head's), beside the 671B model; the checkpoint also
    stores a copy of the embedding and the head with it. The model card: "685B, which includes 671B of the Main
    Model weights and 14B of the MTP Module weights" (rounded, and the hub's count includes FP8 block scales)."""
    d, v, h = 7168, 129_280, 128
    mla = d * 1536 + 1536 + 1536 * h * 192 + d * (512 + 64) + 512 + 512 * h * (128 + 128) + h * 128 * d
    moe = d * 256 + 256 * 3 * d * 2048 + 3 * d * 2048
    layer = mla + 2 * d + moe
    module = layer + 2 * d * d + 3 * d
    t = count("deepseek-v3")
    assert t.params == 671_026_404_352 and t.mtp_params == module
    assert t.mtp_params + t.mtp_copies == module + 2 * v * d
    assert abs(t.params + t.mtp_params + t.mtp_copies - 685e9) / 685e9 < 1e-3


def test_the_count_column_counts_layers_for_every_row():
    """Gemma 3 27B alternates five sliding-window layers with one global: 21 runs of identical layers over 62
    layers. A weight, a norm and an elementwise-only row (softmax, activation, rotation) each stand for all 62."""
    rows = {r.name: r for r in merge_layers(tally(presets.load("gemma-3-27b")[1]).rows)}
    for name in ("attn.q.weight", "attn.softmax", "attn.rotary", "ffn.act", "residual"):
        assert rows[name].count == 62, name
    assert rows["norms"].count == 4 * 62  # input, post-attention, pre- and post-feedforward norms
