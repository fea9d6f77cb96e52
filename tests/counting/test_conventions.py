"""Each named convention against a number its own source states, derived again here by hand.

Expected values are the sources' formulas written out in the test (with the source's own shapes) and the
figures the sources print; none is ffncalc's output.
"""

from fractions import Fraction
from pathlib import Path

import pytest

from ffncalc.analysis.count import tally
from ffncalc.model import from_data
from ffncalc.sources import hf, presets

CONFIGS = Path(__file__).parents[1] / "hf_configs"


def count(name, **kw):
    return tally(presets.load(name)[1], **kw)


def megatron_lm_per_token(*, h, layers, dense, heads, q_lora, kv_lora, qk, rope, v, ffn, moe_ffn, top_k, shared, vocab, s, mtp=0):
    """Megatron-LM's num_floating_point_operations (megatron/training/training.py, transformer_flops) for
    MLA with MoE, per token: 3 (forward, wgrad, dgrad) × 2 (per multiply-add) × the multiply-adds below.
    A multi-token prediction layer is one more layer like the last (MoE here), plus its norms (3h) and
    eh_proj (2h·h), and one more pass through the logits."""
    q_term = q_lora * (h + heads * (qk + rope) + 1)  # q_a, q_b, and the q_a norm at one per element
    attention = (
        q_term
        + kv_lora * (h + heads * (qk + v) + 1)
        + h * rope
        + heads * v * h
        + Fraction(s * heads * (qk + rope), 2)
        + Fraction(s * heads * v, 2)
    )  # causal: half the square
    mlp = h * (3 * ffn * dense + 3 * moe_ffn * top_k * (layers - dense + mtp) + 3 * shared * (layers - dense + mtp))
    macs = mlp + attention * (layers + mtp) + mtp * (3 * h + 2 * h * h) + h * vocab * (mtp + 1)
    return 6 * macs


DEEPSEEK_V2 = dict(
    h=5120,
    layers=60,
    dense=1,
    heads=128,
    q_lora=1536,
    kv_lora=512,
    qk=128,
    rope=64,
    v=128,
    ffn=12288,
    moe_ffn=1536,
    top_k=6,
    shared=2 * 1536,
    vocab=102400,
    s=4096,
)
DEEPSEEK_V3 = dict(
    h=7168,
    layers=61,
    dense=3,
    heads=128,
    q_lora=1536,
    kv_lora=512,
    qk=128,
    rope=64,
    v=128,
    ffn=18432,
    moe_ffn=2048,
    top_k=8,
    shared=2048,
    vocab=129280,
    s=4096,
)


@pytest.mark.parametrize("name, shapes, published", [("deepseek-v2", DEEPSEEK_V2, 155), ("deepseek-v3", DEEPSEEK_V3, 250)])
def test_megatron_lm_reproduces_deepseek_training_flops(name, shapes, published):
    """Zhao et al. 2025, Insights into DeepSeek-V3 (ISCA '25), Table 1: 155 and 250 GFLOPs of training
    compute per token for DeepSeek-V2 and V3 at sequence length 4,096."""
    t = count(name, convention="megatron-lm", seq_len=4096)
    per_token = Fraction(t.train_flops, t.tokens)
    assert per_token == megatron_lm_per_token(**shapes)
    assert round(per_token / 10**9) == published


def test_megatron_lm_counts_multi_token_prediction_when_trained_with_it():
    """With its MTP module, DeepSeek-V3 trains one more MoE layer, its norms and eh_proj, and one more
    logits pass: Megatron-LM's mtp_num_layers terms."""
    t = count("deepseek-v3", convention="megatron-lm", seq_len=4096, mtp=True)
    assert Fraction(t.train_flops, t.tokens) == megatron_lm_per_token(**DEEPSEEK_V3, mtp=1)
    assert t.params == count("deepseek-v3", convention="megatron-lm").params  # the module's parameters stay apart


def test_mtp_flops_by_hand():
    """DeepSeek-V3 §2.2: each MTP module runs eh_proj (2d -> d), one MoE layer like the last and the shared
    head; exact FLOPs per token of the module, written out from the shapes."""
    d, v, heads, qk, rope, vd, ql, kvl, s = 7168, 129280, 128, 128, 64, 128, 1536, 512, 4096
    mla_weights = d * ql + ql * heads * (qk + rope) + d * (kvl + rope) + kvl * heads * (qk + vd) + heads * vd * d
    core = heads * s * (qk + rope) + heads * s * vd  # the full square: s keys per query
    moe = d * 256 + 9 * 3 * d * 2048  # router; 8 routed and 1 shared SwiGLU expert
    expected = 2 * (2 * d * d + mla_weights + core + moe + d * v)
    with_mtp = count("deepseek-v3", seq_len=s, mtp=True)
    without = count("deepseek-v3", seq_len=s)
    assert with_mtp.flops_per_token - without.flops_per_token == expected
    assert with_mtp.train_flops - without.train_flops == 3 * expected * s


def test_megatron_lm_gated_deltanet_as_its_recurrence():
    """Qwen3-Next under Megatron-LM: Gated DeltaNet layers as in_proj, conv1d, 4·n_v·d_v² for the gated
    delta rule and out_proj; full-attention layers with the output gate doubling the query projection;
    routed experts and the shared expert, no router, no shared-expert gate; logits; no embedding."""
    c = hf.read_config(CONFIGS / "qwen3-next-80b-a3b-thinking.json").data
    h, v, s = c["hidden_size"], c["vocab_size"], 4096
    layers, every = c["num_hidden_layers"], c["full_attention_interval"]
    full = layers // every
    qk_dim = c["linear_key_head_dim"] * c["linear_num_key_heads"]
    v_dim = c["linear_value_head_dim"] * c["linear_num_value_heads"]
    nv, dv = c["linear_num_value_heads"], c["linear_value_head_dim"]
    gdn = h * (2 * qk_dim + 2 * v_dim + 2 * nv) + c["linear_conv_kernel_dim"] * (2 * qk_dim + v_dim) + nv * dv * dv * 4 + h * v_dim
    q = c["head_dim"] * c["num_attention_heads"]
    kv = c["head_dim"] * c["num_key_value_heads"]
    attention = h * (q + 2 * kv + q) + Fraction(q * s, 2) * 2 + q * h
    moe = h * 3 * (c["moe_intermediate_size"] * c["num_experts_per_tok"] + c["shared_expert_intermediate_size"])
    expected = 6 * (moe * layers + gdn * (layers - full) + attention * full + h * v)
    t = tally(hf.load(CONFIGS / "qwen3-next-80b-a3b-thinking.json")[1], convention="megatron-lm", seq_len=s)
    assert Fraction(t.train_flops, t.tokens) == expected


# Hoffmann et al. 2022, Table A4: (layers, d_model, ffw_size, heads, k/q size, FLOP ratio ours / 6ND)
TABLE_A4 = [
    (10, 640, 2560, 10, 64, 1.03),
    (20, 1024, 4096, 16, 64, 1.10),
    (24, 1280, 5120, 10, 128, 1.08),
    (26, 1792, 7168, 14, 128, 1.04),
    (28, 2048, 8192, 16, 128, 1.03),
    (40, 3584, 14336, 28, 128, 0.99),
]


@pytest.mark.parametrize("layers, d, ffw, heads, key, ratio", TABLE_A4)
def test_chinchilla_reproduces_table_a4(layers, d, ffw, heads, key, ratio):
    """Table A4's ratios of the Appendix F count to 6ND, at the paper's sequence length 2,048 and 32,000-token
    vocabulary, to its two decimals. N is the model's weight matrices and one vocabulary matrix plus, per layer,
    the d × (heads·key) projection W_R of the relative position encodings the Chinchilla models inherit from
    Gopher (Transformer-XL style), which an ffncalc spec has no block for and is added here by hand; without it
    Table A9's parameter counts are missed by about 7%."""
    spec = from_data(
        dict(
            vocab_size=32_000,
            d_model=d,
            n_layers=layers,
            context_length=2048,
            positions="none",
            tie_embeddings=True,
            attention={"n_heads": heads, "head_dim": key},
            ffn={"kind": "dense", "d_ff": ffw, "bias": False, "activation": "gelu"},
            norm={"kind": "rmsnorm"},
        )
    )
    t = tally(spec, convention="chinchilla", seq_len=2048)
    n = t.params + layers * d * heads * key
    assert round(t.train_flops / (6 * n * t.tokens), 2) == ratio


def test_llama_3_1_405b_training_compute():
    """Llama 3 paper (Dubey et al. 2024, §3.1): 405B parameters on 15.6T tokens, 3.8 × 10²⁵ FLOPs."""
    t = count("llama3.1-405b", convention="6n", seq_len=8192)
    total = Fraction(t.train_flops, t.tokens) * 15_600_000_000_000
    assert round(total / 10**24) == 38


def test_torchtitan_formula():
    """torchtitan's get_nparams_and_flops: 6·(N − embedding) + 12·L·H·Q·T per token, full square (Llama 3 8B,
    8,030,261,248 parameters, a 128,256 × 4,096 embedding, 32 layers of 32 heads of 128)."""
    n, embedding, l, h, q, s = 8_030_261_248, 128_256 * 4096, 32, 32, 128, 8192
    t = count("llama3-8b", convention="torchtitan", seq_len=s)
    assert Fraction(t.train_flops, t.tokens) == 6 * (n - embedding) + 12 * l * h * q * s
