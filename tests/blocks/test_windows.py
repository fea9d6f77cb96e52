"""Sliding windows: what a causal kernel computes (the useful view) against the square eager attention
executes (the exact view), the cache a windowed layer keeps, and the reference that computes only the band."""

import json
from pathlib import Path

import pytest
import torch

from ffncalc.analysis import inference, training
from ffncalc.analysis.count import tally
from ffncalc.analysis.plan import InferenceRun, Layout, Step, TrainingRun
from ffncalc.analysis.verify import verify
from ffncalc.blocks import _torch
from ffncalc.model import from_data, reference
from ffncalc.sources import hf, presets

pytestmark = pytest.mark.torch  # reference modules, real tensors or FlopCounterMode

CONFIGS = Path(__file__).resolve().parents[1] / "hf_configs"


def pairs(t, w=None):
    """Query-key pairs of a causal kernel by brute force: query i meets keys max(0, i-w+1)..i."""
    return sum(min(i + 1, w or t) for i in range(t))


def core(t):
    return sum(r.flops for r in t.rows if r.role == "core") * t.tokens


def test_mistral_at_32k_attends_its_window():
    """Mistral 7B (Jiang et al. 2023 §2.1): W = 4,096 of a 32,768 context. QKᵀ and AV at 2 FLOPs per multiply-add
    over 32 layers × 32 heads × head_dim 128: the triangle charges 4.27 × what the window computes."""
    model = presets.load("mistral-7b")[1]
    t, w = 32_768, 4096
    useful = tally(model, convention="causal", seq_len=t)
    assert core(useful) == 2 * 2 * 32 * 32 * 128 * pairs(t, w)
    assert core(useful) == 2 * 2 * 32 * 32 * 128 * (w * (w + 1) // 2 + (t - w) * w)
    full_triangle = 2 * 2 * 32 * 32 * 128 * t * (t + 1) // 2
    assert round(full_triangle / core(useful), 2) == 4.27
    executed = tally(model, convention="exact", seq_len=t)  # eager attention: the masked square, as before
    assert core(executed) == 2 * 2 * 32 * 32 * 128 * t * t


@pytest.mark.parametrize("t", [1, 7, 4096, 4097, 10_000])
def test_pairs_below_and_beyond_the_window(t):
    model = presets.load("mistral-7b")[1]
    assert core(tally(model, convention="causal", seq_len=t)) == 2 * 2 * 32 * 32 * 128 * pairs(t, 4096)


def test_gemma2_alternates_local_and_global_layers():
    """Gemma 2 9B: 42 layers, even ones local over 4,096 keys, odd ones global (Gemma2Config.layer_types);
    16 heads × head_dim 256."""
    model = hf.load(CONFIGS / "gemma-2-9b.json")[1]
    assert [layer.attention.window for layer in model.layers[:4]] == [4096, None, 4096, None]
    t = 8192
    expected = 2 * 2 * 16 * 256 * (21 * pairs(t, 4096) + 21 * pairs(t))
    assert core(tally(model, convention="causal", seq_len=t)) == expected


def test_gemma3_text_config_windows():
    """Gemma 3 27B: sliding_window 1,024; every sixth layer global (sliding_window_pattern 6): 52 local, 10 global."""
    model = hf.load(CONFIGS / "gemma-3-27b-it.json")[1]
    windows = [layer.attention.window for layer in model.layers]
    assert windows.count(1024) == 52 and windows.count(None) == 10 and windows[5] is None and windows[4] == 1024


def test_windowed_kv_cache_and_decode():
    """Mistral 7B at 10,000 tokens: each layer caches K and V of 8 KV heads × 128 for the last 4,096 positions;
    a decode step at position p meets min(p, 4096) keys."""
    model = presets.load("mistral-7b")[1]
    out = {f.id: f.value for f in inference.infer(model, InferenceRun(9_990, 10))}
    assert out["kv_bytes"] == 32 * 2 * 8 * 128 * 2 * 4096
    d, kv, f, v, layers = 4096, 1024, 14_336, 32_000, 32
    weights = layers * (2 * d * d + 2 * d * kv + 3 * d * f) + v * d  # q, o, k, v, gate, up, down; lm_head
    per_key = layers * 2 * 2 * 32 * 128  # QKᵀ and AV: 32 heads × 128, 2 FLOPs per multiply-add
    assert out["decode_first_flops"] == 2 * weights + per_key * 4096  # position 9,991 meets only its window
    assert out["decode_flops"] == 10 * (2 * weights + per_key * 4096)


def test_banded_reference_computes_only_the_band():
    """The causal reference of a windowed layer: FlopCounterMode sees W(W+1)/2 + (T-W)·W pairs, and its
    output equals softmax over the masked square, sinks included."""
    spec = dict(
        vocab_size=30,
        d_model=16,
        n_layers=1,
        context_length=32,
        attention={"n_heads": 2, "window": 5},
        ffn={"kind": "gated", "d_ff": 8},
    )
    for attention in ({"n_heads": 2, "window": 5}, {"n_heads": 2, "window": 5, "sinks": True}):
        model = from_data({**spec, "attention": attention})
        for convention in ("exact", "causal"):
            report = verify(model, seq_len=12, convention=convention)
            assert report.ok, report.failures
    q, k, v = (torch.randn(1, 2, 12, 4, dtype=torch.float64) for _ in range(3))
    sinks = torch.randn(2, dtype=torch.float64)
    band = _torch.banded_attention(q, k, v, _torch.MatMul(), _torch.MatMul(), 5, sinks=sinks)
    i = torch.arange(12)
    outside = (i[None, :] > i[:, None]) | (i[None, :] <= i[:, None] - 5)
    square = (q @ k.transpose(-2, -1)).masked_fill(outside, float("-inf"))
    assert torch.allclose(band, _torch.softmax(square, sinks) @ v, atol=1e-10)


def test_an_encoders_band_equals_its_masked_square():
    """An encoder's window, W keys before each query and A after (Moonshine Streaming's lookahead; A = W: ModernBERT's
    |i − j| ≤ W): the causal reference computes only the band, the query-key pairs FlopCounterMode sees are those
    attended_pairs counts, and its output equals softmax over the square masked to |j − i| within the window, with a
    bias and without, for windows narrower and wider than the sequence."""
    from types import SimpleNamespace

    from torch.utils.flop_counter import FlopCounterMode

    from ffncalc.model.terms import attended_pairs

    s, dim = 12, 4
    q, k, v = (torch.randn(1, 2, s, dim, dtype=torch.float64) for _ in range(3))
    bias = torch.randn(1, 2, s, s, dtype=torch.float64)
    i = torch.arange(s)
    for window, ahead in ((3, 1), (5, 0), (2, 2), (1, 7), (15, 3), (4, None)):
        after = window if ahead is None else ahead
        outside = (i[None, :] - i[:, None] > after) | (i[:, None] - i[None, :] > window)
        for b in (None, bias):
            layer = SimpleNamespace(causal=True, ahead=ahead, scores=_torch.MatMul(), values=_torch.MatMul())
            with FlopCounterMode(display=False) as counter:
                band = _torch.two_sided(layer, q, k, v, b, window, None)
            square = (q @ k.transpose(-2, -1)) + (0 if b is None else b)
            expected = _torch.softmax(square.masked_fill(outside, float("-inf")), None) @ v
            assert torch.allclose(band, expected, atol=1e-10), (window, ahead)
            pairs = attended_pairs(s, window, select="both", ahead=ahead)
            assert pairs == int((~outside).sum())
            assert counter.get_total_flops() == 2 * 2 * 2 * dim * pairs  # QKᵀ and AV, 2 heads


def test_reference_models_agree_in_both_views():
    """A windowed model built for the exact view (masked square) and for the causal view (band) gives the same
    logits on real tensors."""
    spec = from_data(
        dict(
            vocab_size=30,
            d_model=16,
            n_layers=2,
            context_length=32,
            attention={"n_heads": 2, "window": 3},
            ffn={"kind": "gated", "d_ff": 8},
        )
    )
    torch.manual_seed(0)
    eager = reference.build(spec, device="cpu", dtype=torch.float64)
    banded = reference.build(spec, device="cpu", dtype=torch.float64, causal=True)
    banded.load_state_dict(eager.state_dict())
    tokens = torch.randint(0, 30, (1, 10))
    assert torch.allclose(eager(tokens), banded(tokens), atol=1e-9)


def test_json_per_token_average_and_exact_totals(cli):
    code, out, _ = cli("count", "mistral-7b", "--seq-len", "10000", "-c", "causal", "--format", "json")
    totals = json.loads(out)["totals"]
    assert code == 0 and isinstance(totals["forward_flops"], int)
    assert totals["forward_flops_per_token"] == pytest.approx(totals["forward_flops"] / 10_000)


def test_active_parameters_with_and_without_embeddings():
    """gpt-oss-20b's model card: 21B parameters, 3.6B active, a count that leaves out the input embedding
    (201,088 × 2,880) but keeps the unembedding; without either, Kaplan's non-embedding active count."""
    t = tally(hf.load(CONFIGS / "gpt-oss-20b.json")[1])
    table = 201_088 * 2880
    assert t.active_without_input_embedding == t.active - table
    assert t.active_without_embeddings == t.active - 2 * table
    assert 3.55e9 <= t.active_without_input_embedding < 3.65e9  # "3.6B", rounded
    assert 20.5e9 <= t.params < 21.5e9  # "21B", rounded


def test_gpt_oss_banded_layers():
    """gpt-oss-20b: 24 layers alternating a 128-key band and full attention (GptOssConfig.layer_types),
    64 heads × head_dim 64; the band caches 128 positions."""
    model = hf.load(CONFIGS / "gpt-oss-20b.json")[1]
    assert [layer.attention.window for layer in model.layers[:2]] == [128, None]
    t = 8192
    assert core(tally(model, convention="causal", seq_len=t)) == 2 * 2 * 64 * 64 * (12 * pairs(t, 128) + 12 * pairs(t))
    out = {f.id: f.value for f in inference.infer(model, InferenceRun(t - 1, 1))}
    assert out["kv_bytes"] == 2 * 8 * 64 * 2 * (12 * 128 + 12 * t)  # K and V of 8 KV heads × 64, bf16


def test_llama4_chunked_layers():
    """Llama 4 Maverick: three of every four layers attend in chunks of 8,192 keys (create_chunked_causal_mask:
    a query meets the keys of its own chunk up to itself), every fourth attends everything (no_rope_layers);
    40 heads × head_dim 128, 48 layers. A chunk layer caches at most one chunk."""
    model = hf.load(CONFIGS / "llama-4-maverick-17b-128e-instruct.json")[1]
    chunks = [layer.attention.chunk for layer in model.layers]
    assert chunks.count(8192) == 36 and chunks.count(None) == 12 and chunks[3] is None

    def chunked(t, c):  # brute force: query i meets (i mod c) + 1 keys
        return sum(i % c + 1 for i in range(t))

    t = 20_000
    assert core(tally(model, convention="causal", seq_len=t)) == 2 * 2 * 40 * 128 * (36 * chunked(t, 8192) + 12 * pairs(t))
    out = {f.id: f.value for f in inference.infer(model, InferenceRun(t - 1, 1))}
    assert out["kv_bytes"] == 2 * 8 * 128 * 2 * (36 * 8192 + 12 * t)  # K and V of 8 KV heads × 128, bf16


def test_chunked_reference_in_both_views():
    spec = from_data(
        dict(
            vocab_size=30,
            d_model=16,
            n_layers=1,
            context_length=32,
            attention={"n_heads": 2, "chunk": 4, "sinks": True},
            ffn={"kind": "gated", "d_ff": 8},
        )
    )
    for convention in ("exact", "causal"):
        report = verify(spec, seq_len=11, convention=convention)
        assert report.ok, report.failures
    torch.manual_seed(0)
    eager = reference.build(spec, device="cpu", dtype=torch.float64)
    chunked = reference.build(spec, device="cpu", dtype=torch.float64, causal=True)
    chunked.load_state_dict(eager.state_dict())
    tokens = torch.randint(0, 30, (1, 11))
    assert torch.allclose(eager(tokens), chunked(tokens), atol=1e-9)


def test_mla_decodes_absorbed():
    """Serving engines decode MLA absorbed (DeepSeek-V2 §2.1.3): per key each head meets the cached latent and
    rotary key, h·(512 + 64) multiply-adds for the scores and h·512 for the values, 61 layers of 128 heads in
    DeepSeek-V3; the expanded form's h·(192 + 128) per key would be 3.4 times too few."""
    model = presets.load("deepseek-v3")[1]

    def first(prompt):
        return {f.id: f.value for f in inference.infer(model, InferenceRun(prompt, 1))}["decode_first_flops"]

    assert first(2000) - first(1000) == 1000 * 61 * 2 * 128 * (512 + 64 + 512)


def test_mla_absorbed_decode_by_hand():
    """A small MLA model, every matmul of one decode step written out: query q_a (d→rq), q_b (rq→h·(nope+rope));
    kv_a (d→rank+rope) for the new token; W_UK absorbed (h·nope·rank); scores over k keys h·(rank+rope)·k; values
    h·rank·k; W_UV h·rank·v; o (h·v→d); then the FFN (3·d·f) and the head (d·V). 2 FLOPs per multiply-add."""
    d, h, rq, rank, nope, rope, v, f, vocab = 16, 2, 6, 4, 3, 2, 5, 8, 20
    model = from_data(
        dict(
            vocab_size=vocab,
            d_model=d,
            n_layers=1,
            context_length=64,
            attention={
                "kind": "mla",
                "n_heads": h,
                "q_lora_rank": rq,
                "kv_lora_rank": rank,
                "qk_nope_head_dim": nope,
                "qk_rope_head_dim": rope,
                "v_head_dim": v,
            },
            ffn={"kind": "gated", "d_ff": f},
        )
    )
    keys = 11
    macs = (
        d * rq
        + rq * h * (nope + rope)
        + d * (rank + rope)
        + h * nope * rank
        + keys * h * (rank + rope)
        + keys * h * rank
        + h * rank * v
        + h * v * d
        + 3 * d * f
        + d * vocab
    )
    out = {f.id: f.value for f in inference.infer(model, InferenceRun(keys - 1, 1))}
    assert out["decode_first_flops"] == 2 * macs
    # expanded (--decode expanded): kv_b expands the new token's latent (rank → h·(nope + v)), no absorption,
    # and the query meets every head's key (nope + rope) and value (v) per cached position
    expanded = (
        d * rq
        + rq * h * (nope + rope)
        + d * (rank + rope)
        + rank * h * (nope + v)
        + keys * h * (nope + rope)
        + keys * h * v
        + h * v * d
        + 3 * d * f
        + d * vocab
    )
    out = {f.id: f.value for f in inference.infer(model, InferenceRun(keys - 1, 1, decode="expanded"))}
    assert out["decode_first_flops"] == 2 * expanded
    # prefill absorbed (--prefill absorbed): each of the p = 1..P prompt positions runs the absorbed step against
    # its p keys; expanded: kv_b for every position and the causal triangle over per-head keys and values
    prompt = keys - 1
    pairs = prompt * (prompt + 1) // 2
    fixed = d * rq + rq * h * (nope + rope) + d * (rank + rope) + h * nope * rank + h * rank * v + h * v * d + 3 * d * f + d * vocab
    absorbed = prompt * fixed + pairs * (h * (rank + rope) + h * rank)
    out = {f.id: f.value for f in inference.infer(model, InferenceRun(prompt, 1, prefill="absorbed"))}
    assert out["prefill_flops"] == 2 * absorbed
    expanded_prefill = prompt * (
        d * rq + rq * h * (nope + rope) + d * (rank + rope) + rank * h * (nope + v) + h * v * d + 3 * d * f + d * vocab
    ) + pairs * (h * (nope + rope) + h * v)
    out = {f.id: f.value for f in inference.infer(model, InferenceRun(prompt, 1))}
    assert out["prefill_flops"] == 2 * expanded_prefill


def test_no_rope_layers_take_no_rotary_work():
    """SmolLM3-3B: 36 layers, every fourth without rotary positions (no_rope_layers): the rotation, 3 FLOPs per
    rotated element of the 16 query and 4 KV heads × 128, is charged on the other 27 layers only."""
    model = hf.load(CONFIGS / "smollm3-3b.json")[1]
    assert [layer.attention.rope for layer in model.layers[:4]] == [True, True, True, False]
    t = tally(model, seq_len=16)
    assert sum(r.elementwise for r in t.rows if r.name == "attn.rotary") == 27 * 3 * (16 + 4) * 128


def test_count_carries_both_views(cli):
    """Whatever the convention, count's JSON states the attention products per token in both views. Mistral 7B
    at 32,768 tokens: 32 layers, QKᵀ and AV each 32 heads × 128 features, 2 FLOPs per multiply-add; executed
    dense, every query meets all 32,768 keys; useful, the pairs of a 4,096 window, brute-forced over the
    queries, per token."""
    s, w = 32_768, 4096
    per_pair = 32 * 2 * 2 * 32 * 128
    code, out, _ = cli("count", "mistral-7b", "--seq-len", str(s), "--format", "json", "-c", "kaplan")
    views = json.loads(out)["views"]
    assert views["executed"]["attention_flops_per_token"] == per_pair * s
    assert views["useful"]["attention_flops_per_token"] == per_pair * pairs(s, w) / s
    code, text, _ = cli("count", "mistral-7b", "--seq-len", str(s))
    assert code == 0 and "executed dense" in text and "useful" in text


def test_train_gives_both_views_and_counts_mtp_it_trains():
    """train states its convention's training FLOPs per token and both views with exact matmuls; a model with
    multi-token prediction modules trains them unless told not to."""
    spec = presets.load("deepseek-v3")[1]
    plan = training.plan_training(spec, "deepseek-v3", TrainingRun("1B", dtype="bf16"), Step(seq_len=4096), Layout(gpus=1, dp=1))
    with_mtp = {v: tally(spec, convention=c, seq_len=4096, mtp=True) for v, c in (("useful", "causal"), ("executed", "exact"))}
    for v, t in with_mtp.items():
        assert plan[f"train_flops_per_token_{v}"].value == t.train_flops // t.tokens
    assert plan.inputs["mtp"] is True
    plain = training.plan_training(
        spec, "deepseek-v3", TrainingRun("1B", dtype="bf16"), Step(seq_len=4096, mtp=False), Layout(gpus=1, dp=1)
    )
    # 6N: the module's active parameters (eh_proj, its norms, one MoE layer like the last) at 6 FLOPs each
    t = tally(spec, convention="6n", seq_len=4096, mtp=True)
    mtp_active = sum(r.active for r in t.rows if r.part == "mtp")
    assert plan["train_flops_per_token"].value - plain["train_flops_per_token"].value == 6 * mtp_active
