"""GLM-5 Next (glm5_next): its language model (Kimi Delta Attention beside latent attention whose indexer scores pooled
keys, under manifold-constrained hyper-connections) and its GLM-OCR-form tower, by hand and against transformers."""

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from ffncalc.analysis.count import tally, terms
from ffncalc.analysis.records import expanded
from ffncalc.model.schema import SpecError
from ffncalc.sources import hf

HERE = Path(__file__).resolve().parents[1] / "hf_whole"
TRUTH = json.loads((HERE / "truth" / "glm5_next.json").read_text())

# A small GLM-5 Next language model: layers 0–2 Kimi Delta Attention, layer 3 latent attention with the pooled
# indexer (2 heads of 8, pools of 4 keys, the best 8 keys kept), a mixture from layer 1 on, 2 streams
SMALL = {
    "model_type": "glm5_next_text",
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 96,
    "moe_intermediate_size": 32,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "kv_lora_rank": 16,
    "q_lora_rank": 24,
    "qk_nope_head_dim": 16,
    "v_head_dim": 16,
    "index_n_heads": 2,
    "index_head_dim": 8,
    "index_topk": 8,
    "index_kpool": 4,
    "linear_num_heads": 2,
    "linear_head_dim": 16,
    "hc_mult": 2,
    "mlp_layer_types": ["dense", "sparse", "sparse", "sparse"],
}


def small(tmp_path, **changes):
    (tmp_path / "config.json").write_text(json.dumps({**SMALL, **changes}))
    return hf.load(tmp_path / "config.json")[1]


def test_glm5_next_by_hand():
    """Glm5NextConfig's defaults. The language model: 154,880 rows of 4,096 and an untied head; 45 layers, those at
    i % 4 == 3 (11 of them) latent attention, the other 34 Kimi Delta Attention; the first 3 dense, the rest mixtures.
    KDA: q, k, v of 64 × 128 heads, one depthwise conv1d of kernel 4 over the three, the forget gate's f_a (4,096 →
    128), f_b (128 → 8,192), dt_bias (8,192) and A_log (64), b (4,096 → 64), the output gate's g_a and g_b, the gated
    norm (128) and o. Latent attention: q_a (4,096 → 1,536), its norm, q_b (1,536 → 64 × 256), kv_a (4,096 → 512, no
    rotary key), its norm, kv_b (512 → 64 × (256 + 256)), o (64 × 256 → 4,096); the indexer's wq_b (1,536 → 32 ×
    128), wk (4,096 → 128), k_norm (a LayerNorm), weights_proj (4,096 → 32), the pooling gate (4,096 → 128) and table
    (16 × 128). The dense MLP 3 × 4,096 × 12,288; the mixture's router (288 × 4,096), 288 experts of 3 × 4,096 × 2,048
    and one shared. Each layer two RMSNorms and two hyper-connections of fn (4 × 4,096 → (2 + 4) × 4) with base (24)
    and scale (3); the head's mean holds nothing; the final norm. The tower: a 3-D patch convolution (3 × 2 × 14² →
    1,024, with a bias), 24 layers of two RMSNorms, qkv and proj with biases, q and k norms of a head (64), a gated MLP
    of 4,096 with biases; post_layernorm; the downsample convolution (1,024 × 2 × 2 → 1,536, a bias) and the merger:
    proj (1,536 → 1,536), a LayerNorm, a SwiGLU of 10,240 (projection_intermediate_size)."""
    d, v = 4096, 154_880
    kda = 3 * d * 8192 + 3 * 8192 * 4 + (d * 128 + 128 * 8192 + 8192 + 64) + d * 64 + d * 128 + 128 * 8192 + 128 + 8192 * d
    indexer = 1536 * 32 * 128 + d * 128 + 2 * 128 + d * 32 + 128 * d + 16 * 128
    mla = d * 1536 + 1536 + 1536 * 64 * 256 + d * 512 + 512 + 512 * 64 * 512 + 64 * 256 * d + indexer
    dense, moe = 3 * d * 12288, 288 * d + 289 * 3 * d * 2048
    hyper = 2 * (4 * d * 24 + 24 + 3)
    text = 2 * v * d + 34 * kda + 11 * mla + 3 * dense + 42 * moe + 45 * (2 * d + hyper) + d
    w = 1024
    layer = 2 * w + 3 * w * w + 3 * w + w * w + w + 2 * 64 + 2 * (w * 4096 + 4096) + 4096 * w + w
    tower = 3 * 2 * 14 * 14 * w + w + 24 * layer + w
    projector = w * 4 * 1536 + 1536 + 1536 * 1536 + 2 * 1536 + 3 * 1536 * 10240
    assert (text, tower + projector) == (313_326_816_766, 460_072_448)
    recorded = sum(n for _, n in expanded(TRUTH["params"], 2))
    assert recorded == text + tower + projector
    _, model = hf.load(HERE / "configs" / "glm5_next.json")
    counted = [t for t in terms(model, 8, partial=True) if not t.tied]
    assert sum(t.numel * t.stored_count for t in counted) == recorded
    vision = sum(t.numel * t.stored_count for t in counted if t.component.startswith("vision."))
    assert vision == tower + projector


def test_glm5_next_image_flops_by_hand(tmp_path):
    """The tower small as the record built it (width 64, 4 heads, 2 layers, a gated MLP of 128, out_hidden_size 64, the
    merger's SwiGLU of its default 10,240), as FlopCounterMode counted it: one image of s × s patches of 14, each
    patch's convolution (3 × 2 × 14² → 64), each layer's qkv, proj and MLP and its attention (every patch meeting every
    patch, scores and values), then s² / 4 tokens through the downsample convolution (64 × 2 × 2 → 64) and the merger
    (proj, gate, up and down). 2 FLOPs a multiply-add."""
    from ffncalc.parts.vision import Vision

    record = TRUTH["image_flops"]
    data = json.loads((HERE / "configs" / "glm5_next.json").read_text())
    data = {**data, **{key: {**data[key], **value} for key, value in record["reduced"].items()}}
    (tmp_path / "config.json").write_text(json.dumps(data))
    _, model = hf.load(tmp_path / "config.json")
    (vision,) = [p for p in model.parts if isinstance(p, Vision)]
    w = 64

    def image(side):
        n = side * side
        layers = 2 * (n * (3 * w * w + w * w + 3 * w * 128) + 2 * n * n * w)
        merged = n // 4 * (4 * w * w + w * w + 3 * w * 10240)
        return 2 * (n * 1176 * w + layers + merged)

    assert [image(32), image(24)] == [1_875_902_464, 923_074_560]
    assert [r["total"] for r in record["runs"]] == [image(32), image(24)]
    assert [replace(vision, image_size=14 * s).per_image(model)[1] for s in (32, 24)] == [image(32), image(24)]


def pooled_pairs(s: int, topk: int, size: int) -> tuple[int, int]:
    """The causal kernel's work, by enumeration: the query at p = 1..s scores the ⌊p / C⌋ pools complete up to it and
    attends min(p, topk + p mod C) keys (whole pools, then its own incomplete pool's keys)."""
    pools = sum(p // size for p in range(1, s + 1))
    keys = sum(min(p, topk + p % size) for p in range(1, s + 1))
    return pools, keys


@pytest.mark.torch
@pytest.mark.parametrize("convention", ["exact", "causal"])
def test_pooled_indexer_verifies_by_hand(tmp_path, convention):
    """verify builds the reference modules and FlopCounterMode counts them equal to the analytic terms; at 22 tokens the
    pooled indexer's scores meet 2 heads × 8 features of each pool: transformers' eager path every one of the
    sequence's 5 complete pools for every query (exact), a sparse kernel the pools complete up to the query (causal:
    55 query-pool pairs); the attention every key (exact) or the kept keys (causal: 169 pairs)."""
    from ffncalc.analysis.verify import verify

    spec = small(tmp_path)
    s = 22
    report = verify(spec, seq_len=s, convention=convention)
    assert report.ok, report.failures
    flops = {(c.component, c.layers): c.torch_flops for c in report.checks}
    pools, keys = (s * (s // 4), s * s) if convention == "exact" else pooled_pairs(s, 8, 4)
    assert (pools, keys) == ((110, 484) if convention == "exact" else (55, 169))
    mla = (3, 4)
    assert flops[("attn.indexer.scores", mla)] == 2 * 2 * 8 * pools
    assert flops[("attn.indexer.head_sum", mla)] == 2 * 2 * pools
    assert flops[("attn.scores", mla)] == flops[("attn.values", mla)] == 2 * 4 * 16 * keys
    assert flops[("attn.indexer.compress_gate.weight", mla)] == 2 * s * 64 * 8
    params = {(c.component, c.layers): c.torch_params for c in report.checks}
    assert params[("attn.indexer.compress_ape", mla)] == 4 * 8


@pytest.mark.torch
def test_reference_pooled_indexer_keeps_what_transformers_keeps(tmp_path):
    """The reference indexer, given Glm5NextTextIndexer's weights, keeps for every query the keys transformers returns
    (its top pools expanded to their keys, and the tail of the query's own incomplete pool), in both of its forms."""
    import torch
    from transformers.models.glm5_next.configuration_glm5_next import Glm5NextTextConfig
    from transformers.models.glm5_next.modeling_glm5_next import Glm5NextTextIndexer

    torch.manual_seed(0)
    config = Glm5NextTextConfig(**{k: v for k, v in SMALL.items() if k != "model_type"})
    theirs = Glm5NextTextIndexer(config, 3).eval()
    for p in theirs.parameters():
        torch.nn.init.normal_(p)
    # every index query and pooled key positive, so that no ReLU zeroes a score and no two pools tie
    with torch.no_grad():
        theirs.wq_b.weight.abs_()
        theirs.k_norm.bias.fill_(10.0)
        theirs.k_norm.weight.fill_(1.0)
    state = {k.replace("index_kpool_", ""): v for k, v in theirs.state_dict().items()}
    state["compress_gate.weight"] = state.pop("compress_gate")
    b, s = 2, 23
    x, q_latent = torch.randn(b, s, 64), torch.randn(b, s, 24).abs()
    with torch.no_grad():
        kept = theirs(x, q_latent, torch.ones(b, s, dtype=torch.bool), None)  # (B, s, 8 + 3): ids, −1 past them
    spec = small(tmp_path)
    attention = spec.runs()[-1].layer.attention
    for causal in (True, False):
        ours = attention.torch_module(spec, causal).indexer
        ours.load_state_dict(state)
        with torch.no_grad():
            keep = ours(x, q_latent)  # (B, s, s)
        for j in range(b):
            for i in range(s):
                theirs_ids = {int(k) for k in kept[j, i] if k >= 0}
                assert theirs_ids == set(torch.nonzero(keep[j, i]).flatten().tolist()), (causal, j, i)


def test_pooled_decode_step_and_cache_by_hand(tmp_path):
    """One absorbed decode step of the pooled latent layer with 1,000 keys cached (the 1,001st query): the latent
    attention over its 8 kept keys and the tail, 8 + 1,001 mod 4 = 9; the indexer's scores against the ⌊1,001 / 4⌋ = 250
    complete pools; the gate's logits of the new key beside the indexer's projections. Its cache a token: the latent
    (16), no rotary key, the index key and its gate logits (2 × 8)."""
    from ffncalc.analysis.inference import keys_met

    spec = small(tmp_path)
    mla = spec.runs()[-1].layer.attention
    fixed, per_key = mla.decode_cost(spec)
    h, rank, hi, di = 4, 16, 2, 8
    step = sum(f * keys_met(1001, 1001, w, c, sel) for f, w, c, sel in per_key)
    assert step == 2 * (h * rank + h * rank) * 9 + 2 * (hi * di + hi) * 250
    projections = 64 * 24 + 24 * h * 16 + 64 * rank + h * 16 * rank + h * rank * 16 + h * 16 * 64
    assert fixed == 2 * (projections + 24 * hi * di + 64 * di + 64 * hi + 64 * di)
    assert mla.cache_elements(spec) == 16 + 0 + 2 * 8


@pytest.mark.torch
def test_pooled_indexer_kept_bytes_equal_what_autograd_saves(tmp_path):
    """Trained as a sparse kernel runs it, the pooled layer keeps its flash statistics (4 bytes a head and query) and
    the int32 ids of up to index_topk + C − 1 = 11 keys a query; every block of the small model keeps what its
    reference module saves."""
    from ffncalc.analysis.keptcheck import check

    spec = small(tmp_path)
    mla = spec.runs()[-1].layer.attention
    assert mla.score_bytes(spec, 22, flash=True) == 4 * 4 * 22 + 4 * 22 * 11
    assert mla.score_bytes(spec, 6, flash=True) == 4 * 4 * 6 + 4 * 6 * 6
    found = check(spec, 22)
    assert found and all(c.ok for c in found), [c for c in found if not c.ok]


def test_mean_head_holds_nothing_and_counts_its_sum(tmp_path):
    """Glm5NextTextHyperHead is the streams' unweighted mean: no parameters, k · d operations a token (the sum of the
    k streams and the divide), where DeepSeek-V4's mixed head holds fn (k·d → k), base (k) and scale (1)."""
    spec = small(tmp_path)
    rows = {r.name: r for r in tally(spec, seq_len=8).rows}
    assert rows["hc.head"].params == 0 and rows["hc.head"].elementwise == 2 * 64


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"qk_rope_head_dim": 16}, "qk_rope_head_dim: Glm5NextTextConfig expects no rotary features"),
        ({"index_kpool_always_select_tail": False}, "index_kpool_always_select_tail: only the query's own incomplete pool"),
        ({"index_topk": 10}, "index_pool: pooled keys need an index_topk of whole pools of 4"),
    ],
)
def test_glm5_next_settings_not_read_are_one_line(tmp_path, changes, words):
    from ffncalc.errors import InputError

    with pytest.raises(InputError, match=re.escape(words)):
        small(tmp_path, **changes)


def test_pooled_spec_errors():
    from ffncalc.blocks.mla import LatentAttention

    base = LatentAttention(n_heads=4, kv_lora_rank=16, qk_nope_head_dim=16, qk_rope_head_dim=0, v_head_dim=16, q_lora_rank=24)
    with pytest.raises(SpecError, match="an indexer setting without index_n_heads"):
        replace(base, index_pool=4).check(64)
    indexed = replace(base, index_n_heads=2, index_head_dim=8, index_topk=8, index_pool=4)
    indexed.check(64)
    with pytest.raises(SpecError, match="pooled index keys take no rotary features"):
        replace(indexed, qk_rope_head_dim=8).check(64)
