"""Encoders: bidirectional stacks counted whole (token types, post-norm layers, the masked-LM head), every view
counting the whole attention square, and the questions that do not apply to them refused in one line.

Expected totals are derived by hand below from the published shapes (Devlin et al. 2019 Table/§3, Liu et al. 2019
§4) and the layout transformers' BertForMaskedLM and RobertaForMaskedLM build; the per-component proof against
transformers itself is tests/families/test_defaults.py (every encoder type at its class defaults) and test_hf.py
(the public configs)."""

import json
from pathlib import Path

import pytest

from ffncalc.analysis.count import tally
from ffncalc.sources import presets


def bert_mlm(vocab: int, d: int, layers: int, d_ff: int, positions: int, types: int) -> int:
    """BertForMaskedLM by hand: the word, position and token-type tables and their LayerNorm (weight and bias);
    per layer q, k, v and the attention output (d × d and a bias each), the FFN's two linears with biases and two
    LayerNorms; the head's transform (d × d with a bias, a LayerNorm) and the decoder's bias (its weight is the
    word table)."""
    embeddings = vocab * d + positions * d + types * d + 2 * d
    layer = 4 * (d * d + d) + (d * d_ff + d_ff) + (d_ff * d + d) + 2 * 2 * d
    head = d * d + d + 2 * d + vocab
    return embeddings + layers * layer + head


@pytest.mark.parametrize(
    "name, total",
    [
        # BERT-base: "110M" in the paper, which counts the pooler and no MLM head
        ("bert-base-uncased", bert_mlm(30522, 768, 12, 3072, 512, 2)),
        ("bert-large-uncased", bert_mlm(30522, 1024, 24, 4096, 512, 2)),  # "340M"
        ("roberta-large", bert_mlm(50265, 1024, 24, 4096, 514, 1)),  # "355M"; 514 rows: 2 before the first position
    ],
)
def test_encoder_presets_count_the_masked_lm_class(name, total):
    assert tally(presets.load(name)[1]).params == total
    assert total in (109_514_298, 335_174_458, 355_412_057)  # the three sums, written out once


def test_an_encoder_counts_the_whole_square_in_every_view():
    """Every query meets every key: the causal view (the triangle, for a decoder) is the full square for an encoder.
    BERT-base at 512 tokens: QKᵀ and AV each 2 FLOPs per multiply-add over 512 keys × 768 (12 heads of 64), in each of
    12 layers, per token."""
    spec = presets.load("bert-base-uncased")[1]
    core = 12 * 2 * 2 * 512 * 768
    exact = tally(spec, convention="exact", seq_len=512)
    causal = tally(spec, convention="causal", seq_len=512)
    assert exact.flops_per_token == causal.flops_per_token
    assert sum(r.flops for r in exact.rows if r.role == "core") == core
    gpt2 = presets.load("gpt2")[1]  # a decoder of the same width: the triangle is less than the square
    assert tally(gpt2, convention="causal", seq_len=512).flops_per_token < tally(gpt2, convention="exact", seq_len=512).flops_per_token


@pytest.mark.parametrize("command", [["infer", "--prompt", "8", "--generate", "8"], ["fit", "--hardware", "l4"]])
def test_serving_plans_refuse_an_encoder_in_one_line(cli, command):
    code, out, err = cli(command[0], "bert-base-uncased", *command[1:])
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "an encoder (bidirectional attention) generates no tokens" in err


def test_training_an_encoder_plans_its_step(cli):
    code, out, err = cli("train", "roberta-large", "--tokens", "2B", "--hardware", "h100-sxm", "--gpus", "8")
    assert code == 0 and err == ""


@pytest.mark.torch
@pytest.mark.parametrize("name", ["bert-base-uncased", "roberta-large"])
def test_encoder_presets_verify_against_torch(cli, name):
    """The reference modules (bidirectional attention, post-norm layers, token types, the head) hold and compute
    what the count says, component by component."""
    code, out, err = cli("verify", name, "--seq-len", "64")
    assert code == 0 and "all" in out and "agree" in out, out + err


def test_bert_base_preset_is_what_transformers_builds_from_its_config():
    """The preset against BertForMaskedLM built from google-bert/bert-base-uncased's config.json (tests/hf_truth)."""
    import json
    from pathlib import Path

    truth = json.loads((Path(__file__).resolve().parents[1] / "hf_truth" / "bert-base-uncased.json").read_text())
    held = 0
    for _, numel, *rest in truth["params"]:
        runs = [r.split("-") for r in rest[0]] if rest else [["0"]]
        held += numel * sum(int(r[-1]) - int(r[0]) + 1 for r in runs)
    assert truth["model_class"] == "BertForMaskedLM"
    assert tally(presets.load("bert-base-uncased")[1]).params == held == 109_514_298


DEFAULTS = Path(__file__).resolve().parents[1] / "hf_defaults"
# supported encoders whose masked-LM class's forward cannot run on the meta device, with what stops it
UNMEASURED = {
    # a training forward (from_config builds the class in training mode): QuantAct checks the activations' range for
    # NaN (x_max.isnan().sum() == 0), which meta tensors cannot answer; its float path is RoBERTa's matmuls
    "ibert": "Tensor.item() cannot be called on meta tensors",
    # XLMModel asserts the lengths it derives from the ids against the sequence (lengths.max().item() <= slen)
    "xlm": "Tensor.item() cannot be called on meta tensors",
    "flaubert": "Tensor.item() cannot be called on meta tensors",
    # XmodModel needs each token's language, and its configuration class's default_language is None
    "xmod": "Input language unknown",
    # MRA's attention runs only in transformers' CUDA kernels: on a CPU or the meta device mra2_attention returns zeros
    "mra": "kernels-community/mra",
}


def _encoders_read():
    from ffncalc.sources.hf import coverage

    return [t for t in coverage.ENCODER_TYPES if t not in coverage.ENCODERS_NOT_YET and t not in coverage.REFUSED_AT_DEFAULTS]


@pytest.mark.parametrize("model_type", _encoders_read())
def test_encoder_flops_at_defaults_equal_flop_counter_mode(model_type):
    """Each encoder read, at its class defaults: one forward of its masked-LM class on the meta device under
    torch's FlopCounterMode (eager attention: the whole square, a window masked after it), at a short sequence and
    one past every window, per component and layer run, against the exact convention (scripts/hf_defaults.py
    records it)."""
    import json

    from ffncalc.analysis import hfcheck
    from ffncalc.sources import hf

    c = hf.read_config(DEFAULTS / "configs" / f"{model_type}.json")
    measured = hfcheck.Measured.from_record(json.loads((DEFAULTS / "truth" / f"{model_type}.json").read_text()))
    if model_type in UNMEASURED:
        assert UNMEASURED[model_type] in measured.unmeasured
        return
    assert [r.seq_len for r in measured.flops] == list(hfcheck.flop_lengths(c))
    checks = hfcheck.check_flops(c, measured)
    assert checks and all(ch.ok for ch in checks), [ch for ch in checks if not ch.ok]
    assert not any(ch.component.startswith("(unmatched)") for ch in checks)


def modernbert_mlm(d: int, layers: int, d_ff: int, vocab: int = 50368) -> int:
    """ModernBertForMaskedLM by hand: the token table and its norm (a weight, no bias); per layer Wqkv (d × 3d), Wo
    (d × d), Wi (d × 2·d_ff), Wo (d_ff × d) and two norms, less layer 0's first (an identity); the final norm; the
    head's dense (d × d) and norm; the decoder's bias (its weight is the table)."""
    layer = d * 3 * d + d * d + d * 2 * d_ff + d_ff * d
    return vocab * d + d + layers * layer + (2 * layers - 1) * d + d + d * d + d + vocab


@pytest.mark.parametrize(
    "name, total",
    [
        ("modernbert-base", modernbert_mlm(768, 22, 1152)),  # "149M"; transformers' ModernBertConfig defaults
        ("modernbert-large", modernbert_mlm(1024, 28, 2624)),  # "395M"
    ],
)
def test_modernbert_presets(name, total):
    assert tally(presets.load(name)[1]).params == total
    assert total in (149_655_232, 395_881_664)


def test_a_bidirectional_window_counts_its_band_in_the_causal_view():
    """ModernBERT's sliding layers at 512 tokens: each query meets the keys within 64 on both sides, |i − j| ≤ 64. By
    hand: 129 keys for the 384 queries whose band fits, and for the 64 at each end 65..128 keys: 384·129 +
    2·Σ_{k=0}^{63} (65 + k) = 49,536 + 2·6,176 = 61,888 pairs; a global layer meets all 512·512."""
    from ffncalc.model.terms import attended_pairs

    assert attended_pairs(512, 64, select="both") == 384 * 129 + 2 * sum(65 + k for k in range(64)) == 61_888
    # 100 tokens: the square less the pairs farther apart than 64, 2·(100 − d) of them at each distance d of 65..99
    assert attended_pairs(100, 64, select="both") == 100 * 100 - 2 * sum(100 - d for d in range(65, 100))
    spec = presets.load("modernbert-base")[1]
    rows = [r for r in tally(spec, convention="causal", seq_len=512).rows if r.role == "core"]
    sliding = sum(r.flops for r in rows if r.window)
    global_ = sum(r.flops for r in rows if not r.window)
    # 14 sliding and 8 global layers, QKᵀ and AV each, 12 heads of 64, per token of 512
    assert sliding * 512 == 14 * 2 * 2 * 61_888 * 768
    assert global_ * 512 == 8 * 2 * 2 * 512 * 512 * 768


def _truth_total(path: Path) -> int:
    from ffncalc.analysis import hfcheck

    return sum(n for _, n in hfcheck.Measured.from_record(json.loads(path.read_text())).params)


def test_all_mpnet_base_v2_by_hand():
    """sentence-transformers/all-mpnet-base-v2's config (tests/hf_configs) as MPNetForMaskedLM, by hand: the word
    table (30527 × 768), 514 positions and the embedding LayerNorm, no token types; per layer BERT's (q, k, v, o with
    biases, two LayerNorms, the FFN of 3072 with biases); one relative-bias table of 32 buckets × 12 heads for the
    stack; the head's dense and LayerNorm and the decoder's bias."""
    from ffncalc.sources import hf

    v, d, ff = 30527, 768, 3072
    layer = 4 * (d * d + d) + (d * ff + ff) + (ff * d + d) + 2 * 2 * d
    total = v * d + 514 * d + 2 * d + 12 * layer + 32 * 12 + d * d + d + 2 * d + v
    configs = Path(__file__).resolve().parents[1]
    assert tally(hf.load(configs / "hf_configs" / "all-mpnet-base-v2.json")[1]).params == total
    assert _truth_total(configs / "hf_truth" / "all-mpnet-base-v2.json") == total == 109_518_527


def test_factorised_embeddings_by_hand():
    """ELECTRA's generator and ALBERT at their configuration classes' defaults, by hand (Clark et al. 2020; Lan et al.
    2019 §3.1): the word, position and token-type tables and their LayerNorm E wide, E -> d with a bias, the head's
    dense d -> E with a bias and its LayerNorm of E, the decoder's bias; ALBERT's 12 layers hold one layer's weights."""
    from ffncalc.sources import hf

    def bert_layer(d: int, ff: int) -> int:
        return 4 * (d * d + d) + (d * ff + ff) + (ff * d + d) + 2 * 2 * d

    def factorised(vocab: int, e: int, d: int, stored_layers: int, ff: int) -> int:
        embeddings = vocab * e + 512 * e + 2 * e + 2 * e + (e * d + d)
        head = d * e + e + 2 * e + vocab
        return embeddings + stored_layers * bert_layer(d, ff) + head

    electra = factorised(30522, 128, 256, 12, 1024)  # ElectraConfig: E 128, hidden 256, 12 layers, intermediate 1024
    albert = factorised(30000, 128, 4096, 1, 16384)  # AlbertConfig: E 128, hidden 4096, one group of one layer
    for model_type, total in (("electra", electra), ("albert", albert)):
        assert tally(hf.load(DEFAULTS / "configs" / f"{model_type}.json")[1]).params == total
        assert _truth_total(DEFAULTS / "truth" / f"{model_type}.json") == total
    assert (electra, albert) == (13_546_682, 206_368_944)


def test_esm2_650m_by_hand_and_its_published_size():
    """facebook/esm2_t33_650M_UR50D's config (tests/hf_configs) as EsmForMaskedLM, by hand: the token table (33 ×
    1280, no positions: rotary; no token types); per layer pre-norm BERT (q, k, v, o and the FFN of 5120 with biases,
    two LayerNorms); emb_layer_norm_after; the contact head's regression over 33 layers × 20 heads with its bias; the
    head's dense and LayerNorm and the decoder's bias. The model card and Lin et al. 2023 (Table 1) call it 650M."""
    from ffncalc.sources import hf

    v, d, ff, layers, heads = 33, 1280, 5120, 33, 20
    layer = 4 * (d * d + d) + (d * ff + ff) + (ff * d + d) + 2 * 2 * d
    total = v * d + layers * layer + 2 * d + (layers * heads + 1) + d * d + d + 2 * d + v
    tests = Path(__file__).resolve().parents[1]
    assert tally(hf.load(tests / "hf_configs" / "esm2-t33-650m.json")[1]).params == total
    assert _truth_total(tests / "hf_truth" / "esm2-t33-650m.json") == total == 651_043_254
    assert round(total / 1e6, -1) == 650


def test_esm_defaults_are_refused_as_transformers_refuses_them(cli):
    """EsmConfig's vocab_size defaults to None, which transformers cannot build a table from: a config that leaves it
    so is refused in one line naming the key."""
    code, out, err = cli("count", str(DEFAULTS / "configs" / "esm.json"))
    assert code == 2 and out == "" and err.count("\n") == 1 and "vocab_size" in err
    assert "refused" in json.loads((DEFAULTS / "truth" / "esm.json").read_text())


def test_deberta_v3_base_by_hand_and_its_published_sizes():
    """microsoft/deberta-v3-base's shapes (tests/hf_configs) as DebertaV2ForMaskedLM, by hand: the word table (128100 ×
    768) and its LayerNorm, no position table (position_biased_input false) or token types; per layer BERT's post-norm
    layer (q, k, v, o and the FFN of 3072 with biases, two LayerNorms), the position projections shared with q and k;
    the encoder's 2 × 256 relative embeddings and their LayerNorm; the head's dense and LayerNorm and the decoder's
    bias. He et al. 2023 and the model card: "86M backbone parameters with a vocabulary containing 128K tokens which
    introduces 98M parameters in the Embedding layer".

    FLOPs at 8 tokens, by hand (He et al. 2021 §3.1; DisentangledSelfAttention): the query projection of each token,
    2 · 768 · 768 per token, and of the 512 relative embeddings once a forward; QKᵀ and AV over 8 keys, c2p and p2c
    over 512 relative positions per query, 12 heads of 64."""
    from ffncalc.sources import hf

    v, d, ff, layers, rows = 128100, 768, 3072, 12, 512
    layer = 4 * (d * d + d) + (d * ff + ff) + (ff * d + d) + 2 * 2 * d
    backbone = layers * layer + rows * d + 2 * d
    total = v * d + 2 * d + backbone + d * d + d + 2 * d + v
    tests = Path(__file__).resolve().parents[1]
    spec = hf.load(tests / "hf_configs" / "deberta-v3-base.json")[1]
    assert tally(spec).params == _truth_total(tests / "hf_truth" / "deberta-v3-base.json") == total == 184_551_780
    assert round((total - v * d) / 1e6) == 86 and round(v * d / 1e6) == 98  # all but the word table; the table
    s = 8
    rows_at = tally(spec, convention="exact", seq_len=s).rows
    q = sum(r.flops for r in rows_at if r.component == "attn.q") * s
    assert q == layers * (2 * s * d * d + 2 * rows * d * d) == 7_361_003_520
    core = sum(r.flops for r in rows_at if r.role == "core") * s
    assert core == layers * 12 * 64 * 2 * (2 * s * s + 2 * s * rows) == 153_354_240


@pytest.mark.torch
@pytest.mark.parametrize(
    "model_type, changes",
    [
        # DeBERTa (v1) as microsoft/deberta-base sets it: c2p and p2c through pos_proj and pos_q_proj over 2 · min(s, 512)
        # rows, no absolute positions
        ("deberta", {"relative_attention": True, "pos_att_type": "c2p|p2c", "position_biased_input": False}),
        # DeBERTa-v2 with projections of its own (share_att_key false), c2p alone, a span of 24 and no norm
        ("deberta-v2", {"relative_attention": True, "pos_att_type": ["c2p"], "share_att_key": False, "max_relative_positions": 24}),
    ],
)
def test_disentangled_attention_without_shared_projections_equals_transformers(tmp_path, model_type, changes):
    """The relative-attention settings no public config in tests/hf_configs exercises, built by transformers now on
    the meta device (two layers of 256): every parameter and the FLOPs of a forward at 8 and 32 tokens, per component."""
    from ffncalc.analysis import hfcheck
    from ffncalc.sources import hf

    data = json.loads((DEFAULTS / "configs" / f"{model_type}.json").read_text())
    data |= {"num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4, "intermediate_size": 512, **changes}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    c = hf.read_config(path)
    measured = hfcheck.measure(c, flops=True)
    assert hfcheck.check(c, measured=measured).ok
    checks = hfcheck.check_flops(c, measured)
    assert [r.seq_len for r in measured.flops] == [8, 32] and checks and all(ch.ok for ch in checks)
    assert {"attn.pos_k", "attention products"} <= {ch.component for ch in checks if ch.ours}


def test_squeezebert_grouped_projections_by_hand():
    """SqueezeBERT's layer at SqueezeBertConfig's defaults, by hand (Iandola et al. 2020 §3): q, k and v as 1×1
    convolutions of 4 groups, 768 × 768 / 4 weights and a bias of 768 each; the attention output of one group; the
    FFN's up (3072 × 768 / 4) and down (768 × 3072 / 4) of 4 groups, with biases; two LayerNorms. FLOPs per token:
    2 per multiply-add of each grouped weight."""
    from ffncalc.sources import hf

    d, f, g = 768, 3072, 4
    layer = 3 * (d * d // g + d) + (d * d + d) + (f * d // g + f) + (d * f // g + d) + 2 * 2 * d
    spec = hf.load(DEFAULTS / "configs" / "squeezebert.json")[1]
    rows = tally(spec).rows
    assert sum(r.params for r in rows if r.layers) == 12 * layer
    weights = sum(r.flops for r in rows if r.layers and r.role == "weight")
    assert weights == 12 * 2 * (3 * d * d // g + d * d + 2 * f * d // g)


@pytest.mark.parametrize("hidden, layers, heads, published", [(768, 12, 12, 12), (1024, 24, 16, 18)])
def test_albert_base_and_large_are_their_published_sizes(tmp_path, hidden, layers, heads, published):
    """ALBERT-base and -large as Lan et al. 2019 (Table 1) give their shapes (E = 128, one set of layer weights shared by
    every layer, FFN 4·H, vocabulary 30000): "12M" and "18M" parameters, AlbertModel's (its pooler, no MLM head). By
    hand, AlbertForMaskedLM: the factorised tables and their projection, one layer, and the MLM head."""
    from ffncalc.sources import hf

    config = {"model_type": "albert", "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads}
    config |= {"intermediate_size": 4 * hidden, "embedding_size": 128, "vocab_size": 30000, "hidden_act": "gelu_new"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    v, e, d = 30000, 128, hidden
    layer = 4 * (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d) + 2 * 2 * d
    total = v * e + 512 * e + 2 * e + 2 * e + (e * d + d) + layer + d * e + e + 2 * e + v
    head, pooler = d * e + e + 2 * e + v, d * d + d
    assert tally(hf.load(path)[1]).params == total
    assert round((total - head + pooler) / 1e6) == published


def test_layoutlm_and_roformer_tables_and_pooler_by_hand():
    """LayoutLMForMaskedLM at its defaults (Xu et al. 2020 §2.2): BERT-base's count and four 2-D position tables of
    1024 × 768 (x, y, height, width) and the pooler (768 × 768 with a bias), whose work is once a sequence: 2 · 768²
    FLOPs over a whole sequence, whatever its length. RoFormerForMaskedLM at its defaults (Su et al. 2021): no position
    table, and the frozen sine table of 1536 positions × 64 (the head's width) held as a parameter."""
    from ffncalc.sources import hf

    d = 768
    layout = tally(hf.load(DEFAULTS / "configs" / "layoutlm.json")[1], convention="exact", seq_len=64)
    assert layout.params == bert_mlm(30522, d, 12, 3072, 512, 2) + 4 * 1024 * d + d * d + d
    pooler = [r for r in layout.rows if r.component == "pooler.dense"]
    assert sum(r.flops for r in pooler) * 64 == 2 * d * d and all(r.per_sequence for r in pooler)
    roformer = tally(hf.load(DEFAULTS / "configs" / "roformer.json")[1])
    assert roformer.params == bert_mlm(50000, d, 12, 3072, 0, 2) + 1536 * 64


SMALL = {"num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4, "intermediate_size": 512}
ROTARY = {"position_embedding_type": "rotary"}


@pytest.mark.torch
@pytest.mark.parametrize(
    "model_type, changes",
    [
        # ESM-1b's layout: learned positions numbered from pad_token_id + 1, a LayerNorm on the embeddings
        ("esm", {"vocab_size": 33, "pad_token_id": 1, "position_embedding_type": "absolute", "emb_layer_norm_before": True}),
        # ESM-2's: rotary positions, masked tokens' embeddings zeroed and the rest rescaled (elementwise)
        ("esm", {"vocab_size": 33, "pad_token_id": 1, "mask_token_id": 32, "token_dropout": True, **ROTARY}),
        ("roformer", {"embedding_size": 128}),  # embeddings_project E -> d, the head back to E
        ("electra", {"embedding_size": 256}),  # E = d: no projection
        ("albert", {"num_hidden_layers": 5, "num_hidden_groups": 2, "inner_group_num": 2, "embedding_size": 64}),
        ("convbert", {"num_groups": 2, "embedding_size": 128, "head_ratio": 1}),
        ("roc_bert", {"enable_shape": False, "concat_input": True}),
        ("ultrabert", {"layer_types": None, "attention_windows": [64, 0], "head_dim": 64, "num_key_value_heads": 4}),
        ("flaubert", {"n_langs": 3, "pre_norm": True, "emb_dim": 256, "n_heads": 4, "n_layers": 2}),
        ("xmod", {"languages": ["en_XX", "de_DE", "fr_XX"], "adapter_layer_norm": True}),
        ("layoutlm", {"max_2d_position_embeddings": 128}),
        ("yoso", {"conv_window": 5}),  # the depthwise convolution over each head's values
        ("mra", {"approx_mode": "sparse", "block_per_row": 2}),  # parameters alone (its attention: CUDA only)
    ],
)
def test_encoder_variants_equal_transformers(tmp_path, model_type, changes):
    """Settings the defaults leave off, small (two layers of 256), built by transformers now on the meta device: every
    parameter per component, and where the forward runs there, its FLOPs at two lengths per component."""
    from ffncalc.analysis import hfcheck
    from ffncalc.sources import hf

    data = json.loads((DEFAULTS / "configs" / f"{model_type}.json").read_text())
    data |= {k: v for k, v in SMALL.items() if k in data}
    data |= changes
    data = {k: v for k, v in data.items() if v is not None}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    c = hf.read_config(path)
    measured = hfcheck.measure(c, flops=True)
    report = hfcheck.check(c, measured=measured)
    assert report.ok and not any(ch.component.startswith("(unmatched)") for ch in report.checks), report.failures
    if model_type in UNMEASURED:
        assert UNMEASURED[model_type] in measured.unmeasured
        return
    checks = hfcheck.check_flops(c, measured)
    assert len(measured.flops) == 2 and checks and all(ch.ok for ch in checks), [ch for ch in checks if not ch.ok]


def test_longformer_base_4096_by_hand():
    """allenai/longformer-base-4096's config (tests/hf_configs) as LongformerForMaskedLM, by hand (Beltagy et al. 2020
    §4: RoBERTa-base with its position table copied out to 4,096 positions): RoBERTa's count with 4098 position rows
    and one token type, and in each layer query_global, key_global and value_global (768 × 768 and a bias each).

    FLOPs at 8 tokens, by hand: LongformerModel pads them to one window of 512 and every layer runs over the 512
    (q, k, v, o and the FFN: 2 per multiply-add); QKᵀ over the one chunk of 2w = 512 queries and keys, AV over the 2
    blocks of w = 256 queries against 3w = 768 values, 12 heads of 64; the head over the 8 tokens alone."""
    from ffncalc.sources import hf

    v, d, ff, layers, w, h, hd = 50265, 768, 3072, 12, 256, 12, 64
    total = bert_mlm(v, d, 12, ff, 4098, 1) + layers * 3 * (d * d + d)
    tests = Path(__file__).resolve().parents[1]
    spec = hf.load(tests / "hf_configs" / "longformer-base-4096.json")[1]
    assert tally(spec).params == _truth_total(tests / "hf_truth" / "longformer-base-4096.json") == total == 148_711_257
    s, p = 8, 512
    rows = tally(spec, convention="exact", seq_len=s).rows
    weights = sum(r.flops for r in rows if r.layers and r.role == "weight") * s
    assert weights == layers * 2 * p * (4 * d * d + 2 * d * ff)
    core = sum(r.flops for r in rows if r.role == "core") * s
    chunks = p // w - 1
    assert core == layers * h * hd * 2 * (chunks * (2 * w) ** 2 + (p // w) * w * 3 * w) == 12_079_595_520
    assert sum(r.flops for r in rows if r.component == "lm_head") * s == 2 * s * v * d


@pytest.mark.torch
def test_longformer_padding_equals_flop_counter_mode(tmp_path):
    """A small Longformer (two layers of 256, a window of 8: w = 4) at 13 and 21 tokens, which LongformerModel pads to
    16 and 24: LongformerForMaskedLM built by transformers now on the meta device, one forward under FlopCounterMode at
    each (no token global), against the exact count per component: the layers over the padded positions, the head
    over the sequence's own."""
    from ffncalc.analysis import hfcheck, hfrun
    from ffncalc.sources import hf

    data = json.loads((DEFAULTS / "configs" / "longformer.json").read_text()) | SMALL | {"attention_window": 8}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    c = hf.read_config(path)
    net = hfcheck.instantiate(c)
    runs = tuple(hfrun.flop_run(net, 1, n) for n in (13, 21))
    measured = hfcheck.Measured("LongformerForMaskedLM", "", (), (), runs)
    checks = hfcheck.check_flops(c, measured)
    assert checks and all(ch.ok for ch in checks), [ch for ch in checks if not ch.ok]
    core = {ch.seq_len: ch.ours for ch in checks if ch.component == hfcheck.CORE}
    # 4 heads of 64; QKᵀ: P / w − 1 chunks of 8 × 8; AV: P queries of 12 values; 2 layers
    assert core == {n: 2 * 4 * 64 * 2 * ((p // 4 - 1) * 64 + p * 12) for n, p in ((13, 16), (21, 24))}


def test_big_bird_defaults_by_hand_and_the_rule_of_its_attention():
    """BigBirdForMaskedLM at BigBirdConfig's defaults (google/bigbird-roberta-base's shape: vocabulary 50358, 4096
    positions, 12 layers of 768), by hand: BERT's masked-LM count and BigBirdModel's pooler (768 × 768 and a bias).

    The rule transformers applies (BigBirdModel.forward): up to (5 + 2·3)·64 = 704 tokens every query meets every key;
    past it the sequence is padded to whole blocks of 64 and each head meets, by hand (Zaheer et al. 2020, ITC), the
    first and last blocks' queries against every key, the second and second-last blocks' against 4 + 3 blocks, and the
    n − 4 middle blocks' against 5 + 3: at 705 tokens, 768 positions, n = 12."""
    from ffncalc.sources import hf

    d, v = 768, 50358
    spec = hf.load(DEFAULTS / "configs" / "big_bird.json")[1]
    assert tally(spec).params == bert_mlm(v, d, 12, 3072, 4096, 2) + d * d + d == 128_111_286
    assert _truth_total(DEFAULTS / "truth" / "big_bird.json") == 128_111_286

    def core(s: int) -> int:
        return sum(r.flops for r in tally(spec, convention="exact", seq_len=s).rows if r.role == "core") * s

    assert core(704) == 12 * 2 * 2 * 704 * 704 * d  # QKᵀ and AV over the square, 12 heads of 64
    b, p, n = 64, 768, 12
    pairs = 2 * b * p + 2 * (4 + 3) * b * b + (n - 4) * (5 + 3) * b * b
    assert core(705) == 12 * 2 * 2 * pairs * d == 15_401_484_288


@pytest.mark.torch
@pytest.mark.parametrize("seq_len", [41, 64])
def test_big_bird_block_sparse_equals_flop_counter_mode(tmp_path, seq_len):
    """A small BigBird (two layers of 64, blocks of 4, one random block: block-sparse past (5 + 2)·4 = 28 tokens) at 41
    tokens (padded to 44) and 64: BigBirdForMaskedLM built fresh by transformers on the meta device for each (a model
    switches to full attention for good once it meets a short sequence), one forward under FlopCounterMode, against the
    exact count per component."""
    from ffncalc.analysis import hfcheck, hfrun
    from ffncalc.sources import hf

    data = json.loads((DEFAULTS / "configs" / "big_bird.json").read_text())
    data |= {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 2, "intermediate_size": 128}
    data |= {"block_size": 4, "num_random_blocks": 1}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    c = hf.read_config(path)
    run = hfrun.flop_run(hfcheck.instantiate(c), 1, seq_len)
    checks = hfcheck.check_flops(c, hfcheck.Measured("BigBirdForMaskedLM", "", (), (), (run,)))
    assert checks and all(ch.ok for ch in checks), [ch for ch in checks if not ch.ok]
    p = -(-seq_len // 4) * 4
    pairs = 2 * 4 * p + 2 * 5 * 16 + (p // 4 - 4) * 6 * 16
    # 2 layers, QKᵀ and AV, 2 heads of 32
    assert [ch.ours for ch in checks if ch.component == hfcheck.CORE] == [2 * 2 * 2 * 2 * pairs * 32]


def test_nystromformer_defaults_by_hand():
    """NystromformerForMaskedLM at NystromformerConfig's defaults ("uw-madison/nystromformer-512 style"), by hand: BERT's
    count with 512 position rows (max_position_embeddings 510 and the 2 before the first position) and in each layer
    the depthwise convolution over the values, 12 heads × 65 taps; num_landmarks = segment_means_seq_len = 64, so every
    query meets every key."""
    from ffncalc.sources import hf

    spec = hf.load(DEFAULTS / "configs" / "nystromformer.json")[1]
    total = bert_mlm(30000, 768, 12, 3072, 512, 2) + 12 * 12 * 65
    assert tally(spec).params == _truth_total(DEFAULTS / "truth" / "nystromformer.json") == total == 109_122_240


@pytest.mark.torch
def test_nystrom_landmarks_equal_flop_counter_mode(tmp_path):
    """A small Nyströmformer (two layers of 256, 4 heads of 64, 4 landmarks over segments of 16, a convolution of 5) at
    16 tokens, the one length its forward takes (segment_means_seq_len): NystromformerForMaskedLM built by transformers
    now on the meta device, one forward under FlopCounterMode, against the exact count per component. By hand (Xiong
    et al. 2021, Algorithm 1), per head and layer: kernel_1 and kernel_3 (n·m·d_h each), kernel_3·V and (kernel_1·Z)·that
    (n·m·d_h each), kernel_2 (m²·d_h), the pseudo-inverse's 6 iterations of 4 products of m³, kernel_1·Z (n·m²)."""
    from ffncalc.analysis import hfcheck, hfrun
    from ffncalc.sources import hf

    data = json.loads((DEFAULTS / "configs" / "nystromformer.json").read_text()) | SMALL
    data |= {"num_landmarks": 4, "segment_means_seq_len": 16, "conv_kernel_size": 5}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    c = hf.read_config(path)
    run = hfrun.flop_run(hfcheck.instantiate(c), 1, 16)
    checks = hfcheck.check_flops(c, hfcheck.Measured("NystromformerForMaskedLM", "", (), (), (run,)))
    assert checks and all(ch.ok for ch in checks), [ch for ch in checks if not ch.ok]
    n, m, hd, h, layers = 16, 4, 64, 4, 2
    per_head = 4 * n * m * hd + m * m * hd + 6 * 4 * m**3 + n * m * m
    core = [ch.ours for ch in checks if ch.component == hfcheck.CORE]
    assert core == [layers * h * 2 * per_head] == [307_200]
    assert [ch.ours for ch in checks if ch.component == "attn.conv"] == [layers * 2 * h * n * hd * 5]


def test_yoso_defaults_by_hand():
    """YosoForMaskedLM at YosoConfig's defaults (uw-madison/yoso-4096's shape), by hand: BERT's count with 4098 position
    rows (4096 positions numbered from 2) and one token type; its attention has no weights of its own (the collision
    weights replace the softmax), and QKᵀ and AV run over the whole square: at 64 tokens, 12 layers × 2 products × 2
    FLOPs × 64 × 64 pairs × 768."""
    from ffncalc.sources import hf

    spec = hf.load(DEFAULTS / "configs" / "yoso.json")[1]
    total = bert_mlm(50265, 768, 12, 3072, 4098, 1)
    assert tally(spec).params == _truth_total(DEFAULTS / "truth" / "yoso.json") == total == 127_449_945
    rows = tally(spec, convention="exact", seq_len=64).rows
    assert sum(r.flops for r in rows if r.role == "core") * 64 == 12 * 2 * 2 * 64 * 64 * 768


@pytest.mark.torch
@pytest.mark.parametrize(
    "model_type, changes, seq_len",
    [
        ("longformer", {"attention_window": 8}, 13),  # padded to 16 inside the block
        ("longformer", {"attention_window": 8}, 24),
        ("big_bird", {"block_size": 4, "num_random_blocks": 1}, 20),  # full attention up to 28 tokens
        ("big_bird", {"block_size": 4, "num_random_blocks": 1}, 41),  # block-sparse, padded to 44
        ("nystromformer", {"conv_kernel_size": 5}, 16),  # the whole square (64 landmarks, segments of 64)
        ("nystromformer", {"num_landmarks": 4, "segment_means_seq_len": 16}, 16),
        ("yoso", {"conv_window": 5}, 16),
        ("yoso", {}, 40),
        ("mra", {}, 64),  # 2 × 2 blocks, every one selected
        ("mra", {"approx_mode": "sparse"}, 128),
        ("mra", {"max_position_embeddings": 128, "block_per_row": 1}, 128),  # 4 of the 16 blocks at full resolution
        ("mra", {"max_position_embeddings": 128, "block_per_row": 1, "approx_mode": "sparse"}, 96),  # 4 of 9
    ],
)
def test_approximate_attention_kept_activations_equal_autograd_saved(tmp_path, model_type, changes, seq_len):
    """What a training forward keeps of each of these attention kinds (kept_elements a token, score_bytes a sequence)
    against what autograd saves when its reference module runs in bf16 on the CPU (analysis/keptcheck.py), small (two
    layers of 256)."""
    from ffncalc.analysis import keptcheck
    from ffncalc.sources import hf

    data = json.loads((DEFAULTS / "configs" / f"{model_type}.json").read_text()) | SMALL | changes
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    checks = keptcheck.check(hf.load(path)[1], seq_len)
    assert checks and all(ch.ok for ch in checks), [ch for ch in checks if not ch.ok]


def mobilebert_mlm(v: int, e: int, d: int, t: int, f: int, ffns: int, layers: int, positions: int, types: int) -> int:
    """MobileBertForMaskedLM by hand (Sun et al. 2020 §3.1; transformers' MobileBertEmbeddings, MobileBertLayer,
    MobileBertLMPredictionHead): the word table (v × e), the trigram projection (3·e -> d with a bias), position and
    token-type tables of d and a NoNorm (weight and bias); per layer two input bottlenecks (d -> t with a bias and a
    NoNorm of t each), q and k (t -> t), v (d -> t), the attention output (t -> t) with biases and its NoNorm, ffns
    FFNs of t -> f -> t with biases and a NoNorm of t each, the output bottleneck (t -> d with a bias) and its NoNorm of
    d; the head's transform (d × d with a bias, a LayerNorm), its own rows (v × (d − e)) and the decoder's bias."""
    embeddings = v * e + (3 * e * d + d) + positions * d + types * d + 2 * d
    bottlenecks = 2 * (d * t + t + 2 * t) + (t * d + d + 2 * d)
    attention = 3 * (t * t + t) + (d * t + t) + 2 * t
    ffn = ffns * ((t * f + f) + (f * t + t) + 2 * t)
    head = d * d + d + 2 * d + v * (d - e) + v
    return embeddings + layers * (bottlenecks + attention + ffn) + head


def test_mobilebert_counts_what_its_masked_lm_class_builds(cli):
    """MobileBERT at MobileBertConfig's defaults (the released google/mobilebert-uncased shape: 24 layers of 512 with
    bottlenecks of 128, 4 FFNs of 512, embeddings of 128): 36,596,538 parameters by hand, which transformers' own
    class holds (tests/hf_defaults/truth/mobilebert.json, checked per component in test_defaults.py); count, verify
    and train run on it."""
    from ffncalc.sources import hf

    total = mobilebert_mlm(30522, 128, 512, 128, 512, 4, 24, 512, 2)
    assert total == 36_596_538
    assert tally(hf.to_spec(hf.read_config(DEFAULTS / "configs" / "mobilebert.json"))).params == total
    path = str(DEFAULTS / "configs" / "mobilebert.json")
    for command in (["count", path], ["train", path, "--tokens", "1B", "--hardware", "h100-sxm", "--gpus", "8"]):
        code, out, err = cli(*command)
        assert code == 0 and err == "", err


@pytest.mark.torch
def test_mobilebert_verifies_against_its_reference_modules(cli):
    code, out, err = cli("verify", str(DEFAULTS / "configs" / "mobilebert.json"), "--seq-len", "32")
    assert code == 0 and "all" in out and "agree" in out, out + err


@pytest.mark.parametrize(
    "key, value",
    [
        ("use_bottleneck", False),
        ("use_bottleneck_attention", True),
        ("key_query_shared_bottleneck", False),
        ("tie_word_embeddings", False),
    ],
)
def test_mobilebert_layouts_not_read_are_refused_in_one_line(cli, tmp_path, key, value):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "mobilebert", key: value}))
    code, out, err = cli("count", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1 and key in err


@pytest.mark.torch
def test_mobilebert_layer_reference_computes_what_transformers_computes(tmp_path):
    """The bottleneck block's reference module, given the weights of transformers' MobileBertLayer (random, NoNorm's
    too), returns that layer's output less its input (the stack adds the input back), in fp64."""
    import torch
    from transformers import MobileBertConfig
    from transformers.models.mobilebert.modeling_mobilebert import MobileBertLayer

    from ffncalc.sources import hf

    config = MobileBertConfig(
        hidden_size=32,
        embedding_size=8,
        intra_bottleneck_size=16,
        num_attention_heads=4,
        intermediate_size=24,
        num_feedforward_networks=3,
    )
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    theirs = MobileBertLayer(config).double().eval()
    for p in theirs.parameters():
        torch.nn.init.normal_(p, std=0.2)
    config.to_json_file(tmp_path / "config.json")
    spec = hf.to_spec(hf.read_config(tmp_path / "config.json"))
    block = dict(spec.layers[0].blocks())["attention"]
    ours = block.torch_module(spec, False).double()
    m = config.num_feedforward_networks - 1
    pairs = {
        "bottleneck_in": "bottleneck.input.dense",
        "norms.0": "bottleneck.input.LayerNorm",
        "bottleneck_qk": "bottleneck.attention.dense",
        "norms.1": "bottleneck.attention.LayerNorm",
        "q": "attention.self.query",
        "k": "attention.self.key",
        "v": "attention.self.value",
        "o": "attention.output.dense",
        "norms.2": "attention.output.LayerNorm",
        "up": "intermediate.dense",
        "down": "output.dense",
        f"norms.{3 + m}": "output.LayerNorm",
        "bottleneck_out": "output.bottleneck.dense",
        f"norms.{4 + m}": "output.bottleneck.LayerNorm",
    }
    for i in range(m):
        pairs |= {f"ffns.{i}.up": f"ffn.{i}.intermediate.dense", f"ffns.{i}.down": f"ffn.{i}.output.dense"}
        pairs[f"norms.{3 + i}"] = f"ffn.{i}.output.LayerNorm"
    source = dict(theirs.named_parameters())
    state = {f"{a}.{w}": source[f"{b}.{w}"] for a, b in pairs.items() for w in ("weight", "bias")}
    assert set(state) == {name for name, _ in ours.named_parameters()}
    ours.load_state_dict(state)
    x = torch.randn(2, 7, 32, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(ours(x) + x, theirs(x))


@pytest.mark.torch
def test_mobilebert_trigram_embedding_computes_what_transformers_computes(tmp_path):
    """The trigram embedding's module, given MobileBertEmbeddings' word table (the first E columns of its table) and
    embedding_transformation, gives what MobileBertEmbeddings gives before its positions, token types and norm: each
    position's next, own and previous rows, projected."""
    import torch
    from transformers import MobileBertConfig
    from transformers.models.mobilebert.modeling_mobilebert import MobileBertEmbeddings

    from ffncalc.sources import hf

    config = MobileBertConfig(vocab_size=50, hidden_size=32, embedding_size=8, max_position_embeddings=16)
    torch.manual_seed(0)
    theirs = MobileBertEmbeddings(config).double().eval()
    torch.nn.init.normal_(theirs.token_type_embeddings.weight)
    config.to_json_file(tmp_path / "config.json")
    spec = hf.to_spec(hf.read_config(tmp_path / "config.json"))
    ours = next(m for m in (p.embed_module(spec) for p in spec.parts) if m is not None).double()
    assert tuple(ours.weight.shape) == (50, 32)  # the table and the head's own 32 − 8 rows
    with torch.no_grad():
        ours.weight[:, :8] = theirs.word_embeddings.weight
        ours.project_in.load_state_dict(theirs.embedding_transformation.state_dict())
        tokens = torch.randint(0, 50, (2, 9))
        added = theirs.position_embeddings.weight[:9] + theirs.token_type_embeddings.weight[0]
        torch.testing.assert_close(ours(tokens) + added, theirs(input_ids=tokens))  # NoNorm at its ones and zeros


WHOLE = Path(__file__).resolve().parents[1] / "hf_whole"


def siglip_tower(d: int, layers: int, ff: int, patch: int, positions: int, head: bool) -> int:
    """SiglipVisionModel by hand (Zhai et al. 2023; transformers' SiglipVisionEmbeddings, SiglipEncoderLayer): the patch
    convolution (d × 3 × patch² and a bias) and a position table; per layer q, k, v, o (d × d and a bias each), the MLP's
    two linears with biases and two LayerNorms; post_layernorm; where ``head``, the attention-pooling head: a probe of d,
    nn.MultiheadAttention's in_proj (3d × d and 3d) and out_proj (d × d and d), a LayerNorm and an MLP."""
    layer = 4 * (d * d + d) + (d * ff + ff) + (ff * d + d) + 2 * 2 * d
    total = d * 3 * patch * patch + d + positions * d + layers * layer + 2 * d
    if head:
        total += d + 3 * d * d + 3 * d + d * d + d + 2 * d + (d * ff + ff) + (ff * d + d)
    return total


def test_modernvbert_and_ultravbert_whole_by_hand():
    """ModernVBertForMaskedLM and UltraVBertForMaskedLM at their configuration classes' defaults, by hand: a SigLIP
    tower of 768 (12 layers, MLP 3072, 16-pixel patches of 224-pixel images: 196 positions; ModernVBERT's with its
    pooling head, UltraVBERT's without), the connector's modality_projection (768 · 4² -> the text width, no bias;
    UltraVBERT's RMSNorm of the text width after it), the text encoder and the masked-LM head with an untied decoder
    (tie_word_embeddings false): ModernBERT-base's count and the decoder's 50368 × 768; UltraBERT's (32 layers of 4096,
    32 heads, SwiGLU 11008, RMSNorms, vocabulary 32000) with its bottleneck head (4096 -> 768 -> 4096, no biases) and
    a decoder of 32000 × 4096 without a bias. Each equals the whole class transformers builds (tests/hf_whole); one
    image of 256 pixels (16 × 16 patches, 16 tokens after the shuffle) costs the connector 2 · 16 · 12288 · width
    FLOPs, as FlopCounterMode counted it."""
    from dataclasses import replace

    from ffncalc.parts.vision import Vision
    from ffncalc.sources import hf

    modern = siglip_tower(768, 12, 3072, 16, 196, True) + 768 * 16 * 768 + modernbert_mlm(768, 22, 1152) + 50368 * 768
    d, v, ff, layers = 4096, 32000, 11008, 32
    text = v * d + layers * (4 * d * d + 3 * d * ff + 2 * d) + d + 2 * d * 768 + v * d
    ultra = siglip_tower(768, 12, 3072, 16, 196, False) + 768 * 16 * d + d + text
    assert (modern, ultra) == (290_659_264, 6_880_839_936)
    for model_type, total, width in (("modernvbert", modern, 768), ("ultravbert", ultra, d)):
        _, model = hf.load(WHOLE / "configs" / f"{model_type}.json")
        assert tally(model).params == total == sum(n for _, n in expanded_params(model_type))
        run = json.loads((WHOLE / "truth" / f"{model_type}.json").read_text())["image_flops"]["runs"][0]
        connector = next(n for k, n in run["modules"].items() if k.endswith("Connector"))
        assert run["size"] == 256 and connector == 2 * 16 * 768 * 16 * width
        (vision,) = [p for p in model.parts if isinstance(p, Vision)]
        assert replace(vision, image_size=256).per_image(model)[1] == run["total"]


def expanded_params(model_type: str):
    from ffncalc.analysis.records import expanded

    return expanded(json.loads((WHOLE / "truth" / f"{model_type}.json").read_text())["params"], 2)


@pytest.mark.torch
@pytest.mark.parametrize(
    "data",
    [
        {"model_type": "modernvbert"},  # every sub-config its class's: a SigLIP tower with its head
        {"model_type": "ultravbert"},  # its SubConfigSpec's vision_use_head false
        # a vision_config without model_type is SigLIP's, and vision_use_head takes SiglipVisionConfig's default (true)
        {"model_type": "ultravbert", "vision_config": {"hidden_size": 384, "num_attention_heads": 6}},
        {
            "model_type": "modernvbert",
            "vision_config": {"model_type": "siglip_vision_model", "vision_use_head": False, "num_hidden_layers": 2},
            "text_config": {"num_hidden_layers": 3, "decoder_bias": False},
            "tie_word_embeddings": True,
            "pixel_shuffle_factor": 2,
        },
    ],
)
def test_sparse_vision_encoder_configs_equal_their_classes(tmp_path, data):
    """ModernVBERT's and UltraVBERT's configs that leave keys out, against the masked-LM class transformers builds from
    them now on the meta device: the whole model's parameters."""
    import torch
    from transformers import AutoConfig, AutoModelForMaskedLM

    from ffncalc.sources import hf

    with torch.device("meta"):
        net = AutoModelForMaskedLM.from_config(AutoConfig.for_model(**data))
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    assert tally(hf.load(path)[1]).params == sum(p.numel() for p in net.parameters())


@pytest.mark.parametrize("model_type", ["modernvbert", "ultravbert"])
def test_vision_encoders_count_and_train(cli, model_type):
    path = str(WHOLE / "configs" / f"{model_type}.json")
    for command in (["count", path], ["train", path, "--tokens", "1B", "--hardware", "h100-sxm", "--gpus", "8"]):
        code, out, err = cli(*command)
        assert code == 0 and err == "", err


@pytest.mark.torch
@pytest.mark.parametrize("model_type", ["modernvbert", "ultravbert"])
def test_vision_encoders_verify_against_their_reference_modules(cli, model_type):
    code, out, err = cli("verify", str(WHOLE / "configs" / f"{model_type}.json"), "--seq-len", "32")
    assert code == 0 and "all" in out and "agree" in out, out + err


@pytest.mark.parametrize("model_type", ["modernvbert", "ultravbert"])
def test_vision_encoder_images_the_shuffle_cannot_group_are_refused(cli, model_type):
    """At their classes' default 224 pixels a SigLIP tower of 16-pixel patches sees 14 a side, which a pixel shuffle of 4
    cannot group (transformers' view fails): an image's FLOPs are refused in one line; 256 pixels, 16 tokens, count."""
    path = str(WHOLE / "configs" / f"{model_type}.json")
    code, out, err = cli("count", path, "--images", "1")
    assert code == 2 and out == "" and err.count("\n") == 1 and "14 patches a side" in err
    code, out, err = cli("count", path, "--images", "1", "--image-size", "256")
    assert code == 0 and err == "" and "16 tokens" in " ".join(out.split())


def funnel_layer_flops(m: int, n: int, rows: int, d: int = 768, a: int = 768, ff: int = 3072) -> int:
    """One Funnel layer's matmul FLOPs by hand (Dai et al. 2020 Appendix A.2.1; FunnelRelMultiheadAttention), 2 a
    multiply-add, over m queries, n keys and values and ``rows`` relative positions, with a = heads × d_head: q on the
    queries, k and v on the keys, r_kernel over the relative positions (once), each query's two segment scores, the
    content and position scores and AV, o, and the FFN's two linears on the queries."""
    attention = m * d * a + 2 * n * d * a + rows * d * a + 2 * m * a + m * n * a + m * rows * a + m * n * a + m * a * d
    return 2 * (attention + 2 * m * d * ff)


def test_funnel_defaults_by_hand():
    """FunnelForMaskedLM at FunnelConfig's defaults (funnel-transformer/small's shape, B4-4-4 with a decoder of 2), by
    hand: the word table (30522 × 768) and its LayerNorm, no position or token-type table; in each of the 12 encoder
    and 2 decoder layers q (no bias), k, v and post_proj (with biases), r_w_bias, r_r_bias and r_s_bias (12 × 64 each),
    r_kernel (768 × 12 × 64), seg_embed (2 × 12 × 64), the FFN of 3072 with biases and two LayerNorms; the head's bias
    (its weight is the table).

    FLOPs at 8 tokens: block 0's 4 layers over 8 positions (16 relative positions, 2·8); block 1's first layer's 4
    pooled queries against 8 keys (8 + 2·4 relative positions), its 3 others over 4 (8); block 2's first, 2 queries
    against 4 keys (4 + 2·2), its 3 others over 2 (4); the decoder's 2 layers over 8 (16); the head over 8 tokens."""
    from ffncalc.sources import hf

    v, d, ff, a = 30522, 768, 3072, 768
    # q, k, v, o; the biases of k, v and o; r_w/r_r/r_s_bias, r_kernel, seg_embed; two LayerNorms; the FFN
    layer = 4 * d * a + 2 * a + d + 3 * a + d * a + 2 * a + 2 * 2 * d + d * ff + ff + ff * d + d
    total = v * d + 2 * d + 14 * layer + v
    spec = hf.load(DEFAULTS / "configs" / "funnel.json")[1]
    assert tally(spec).params == _truth_total(DEFAULTS / "truth" / "funnel.json") == total == 131_003_706
    s = 8
    by_hand = (
        4 * funnel_layer_flops(8, 8, 16)
        + funnel_layer_flops(4, 8, 16)
        + 3 * funnel_layer_flops(4, 4, 8)
        + funnel_layer_flops(2, 4, 8)
        + 3 * funnel_layer_flops(2, 2, 4)
        + 2 * funnel_layer_flops(8, 8, 16)
        + 2 * s * d * v
    )
    assert tally(spec, convention="exact", seq_len=s).flops_per_token * s == by_hand
    runs = json.loads((DEFAULTS / "truth" / "funnel.json").read_text())["flops"]["runs"]
    measured = sum(n for r in runs if r["seq_len"] == s for n in _run_flops(r))
    assert measured == by_hand


def _run_flops(run: dict) -> list[int]:
    from ffncalc.analysis.records import expanded

    return [flops for *_, flops in expanded(run["modules"], 4)]


@pytest.mark.torch
@pytest.mark.parametrize("seq_len", [9, 13, 50])
@pytest.mark.parametrize("sizes, repeats", [([2, 1, 3, 2], [1, 1, 1, 1]), ([2, 3, 2], [2, 2, 3])], ids=["blocks", "repeats"])
def test_funnel_blocks_at_odd_lengths_equal_flop_counter_mode(tmp_path, seq_len, sizes, repeats):
    """A small Funnel Transformer of four blocks of 2, 1, 3 and 2 layers, or three of 2, 3 and 2 layers each run 2, 2
    and 3 times in a row (block_repeats: funnel-transformer/medium's form), and a decoder of one (width 64, 4 heads of
    16), FunnelForMaskedLM built by transformers now on the meta device, one forward under FlopCounterMode at lengths
    that pooling leaves odd (13: 13, 7, 4, 2 positions), against the exact count per component; every parameter too (a
    repeated layer's once)."""
    from ffncalc.analysis import hfcheck, hfrun
    from ffncalc.sources import hf

    data = json.loads((DEFAULTS / "configs" / "funnel.json").read_text())
    data |= {"d_model": 64, "n_head": 4, "d_head": 16, "d_inner": 128, "vocab_size": 100, "num_decoder_layers": 1}
    data |= {"block_sizes": sizes, "block_repeats": repeats}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    c = hf.read_config(path)
    measured = hfcheck.measure(c)
    assert hfcheck.check(c, measured=measured).ok
    run = hfrun.flop_run(hfcheck.instantiate(c), 1, seq_len)
    checks = hfcheck.check_flops(c, hfcheck.Measured(measured.model_class, "", measured.params, (), (run,)))
    assert checks and all(ch.ok for ch in checks), [ch for ch in checks if not ch.ok]
    assert {"encoder.attn.rel", "attn.rel", hfcheck.CORE} <= {ch.component for ch in checks}


@pytest.mark.parametrize(
    "key, value",
    [
        ("attention_type", "factorized"),
        ("separate_cls", False),
        ("truncate_seq", False),
        ("pool_q_only", False),
        ("block_repeats", [1, 2]),
        ("block_sizes", []),
        ("num_decoder_layers", 0),
    ],
)
def test_funnel_forms_not_read_are_refused_in_one_line(cli, tmp_path, key, value):
    data = json.loads((DEFAULTS / "configs" / "funnel.json").read_text()) | {key: value}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data, indent=1))
    code, out, err = cli("count", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1 and key in err, err


@pytest.mark.torch
def test_funnel_verifies_against_its_reference_modules_and_plans_training(cli):
    """FunnelForMaskedLM's defaults as ffncalc's reference model (the encoder's blocks pooling their input, the decoder
    adding the upsampled output to the first block's) at 13 tokens, pooled to 7 and 4, component by component; a
    training step planned, the encoder's blocks' activations counted at their lengths."""
    path = str(DEFAULTS / "configs" / "funnel.json")
    code, out, err = cli("verify", path, "--seq-len", "13")
    assert code == 0 and "all" in out and "agree" in out, out + err
    code, out, err = cli("train", path, "--tokens", "1B", "--hardware", "h100-sxm", "--gpus", "8")
    assert code == 0 and err == "", err


def test_funnel_training_keeps_each_block_at_its_own_length():
    """A plan of 512-token sequences keeps the encoder's layers' activations at their blocks' lengths: block 0's 4 over
    512 positions, block 1's first over its 512 keys and 3 over 256, block 2's first over 256 and 3 over 128."""
    from dataclasses import replace

    from ffncalc.sources import hf

    spec = hf.load(DEFAULTS / "configs" / "funnel.json")[1]
    spec = replace(spec, parts=tuple(p.sized(512) for p in spec.parts))
    held = [(inner.n_layers, positions) for p in spec.parts for inner, positions, _, _ in p.stacks(spec)]
    assert held == [(4, 512), (1, 512), (3, 256), (1, 256), (3, 128)]


def test_a_spec_cannot_pool_the_models_own_layers(cli, tmp_path):
    """The queries of a pooled block's first layer are pooled by the Funnel encoder alone: a layer of the model's own
    stack keeps its length, so a spec stating pooled is refused in one line naming the field."""
    spec = tmp_path / "pooled.yaml"
    spec.write_text(
        "vocab_size: 100\nd_model: 64\nn_layers: 1\ncontext_length: 64\npositions: none\nmask: bidirectional\n"
        "attention: {kind: rel_shift, n_heads: 4, pooled: true}\nffn: {kind: dense, d_ff: 128}\n"
    )
    code, out, err = cli("count", str(spec))
    assert code == 2 and out == "" and err.count("\n") == 1 and "attention.pooled" in err, err


def test_mra_defaults_by_hand():
    """MraForMaskedLM at MraConfig's defaults (uw-madison/mra-base-512-4's shape), by hand: BERT's count with 514
    position rows (512 positions numbered from 2) and one token type; its attention has no weights of its own.

    FLOPs of the attention products at 512 tokens, by hand from mra2_attention (Zeng et al. 2022, Algorithm 1): 16
    blocks of 32 a side, the top K = min(512 / 32 · 4, 16²) = 64 blocks at full resolution; QKᵀ the 16² block means'
    scores and the 64 blocks' 32 × 32, AV the 64 blocks' and ("full") the 16² block weights times the blocks' mean
    values, each at 64 features, in 12 heads of 12 layers, 2 FLOPs a multiply-add. At 100 tokens the sequence is
    counted padded to 128 (mra2_attention runs whole blocks only): every one of its 4² blocks at full resolution."""
    from ffncalc.sources import hf

    spec = hf.load(DEFAULTS / "configs" / "mra.json")[1]
    total = bert_mlm(50265, 768, 12, 3072, 514, 1)
    assert tally(spec).params == _truth_total(DEFAULTS / "truth" / "mra.json") == total == 124_697_433
    rows = tally(spec, convention="exact", seq_len=512).rows
    high, low = 64 * 32 * 32, 16 * 16
    per_head = 64 * ((high + low) + (high + low))
    assert sum(r.flops for r in rows if r.role == "core") * 512 == 12 * 12 * 2 * per_head == 2_425_356_288
    rows = tally(spec, convention="exact", seq_len=100).rows
    per_head = 64 * 2 * (16 * 32 * 32 + 4 * 4)
    assert round(sum(r.flops for r in rows if r.role == "core") * 100) == 12 * 12 * 2 * per_head


@pytest.mark.torch
@pytest.mark.parametrize("mode", ["full", "sparse"])
def test_mra_reference_is_softmax_attention_when_every_block_is_selected(mode):
    """MRA-2 computes exact attention where the top-K blocks are all of them (Zeng et al. 2022 §4: the approximation
    error is the unselected blocks'): its reference module, with every block selected (64 blocks, 2 × 2 at 64
    tokens), equals softmax attention over the same Q, K and V in fp64; with fewer selected (K = 1) it differs."""
    from dataclasses import replace

    import torch

    from ffncalc.sources import hf

    spec = hf.load(DEFAULTS / "configs" / "mra.json")[1]
    block = replace(dict(next(iter(spec.runs())).layer.blocks())["attention"], approx_mode=mode)
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 12, 64, 64, dtype=torch.float64) for _ in range(3))
    module = block.torch_module(spec, False).double()
    dense = torch.softmax(q @ k.transpose(-2, -1) / 8, dim=-1) @ v
    assert torch.allclose(module.attend(q, k, v, None).double(), dense, atol=1e-5)
    one = replace(block, blocks=1).torch_module(spec, False).double()
    assert not torch.allclose(one.attend(q, k, v, None).double(), dense, atol=1e-2)


@pytest.mark.torch
@pytest.mark.parametrize("seq_len", ["512", "128"])
def test_mra_verifies_against_its_reference_modules(cli, seq_len):
    """Its products as the reference module runs them (FlopCounterMode on it), per component: the selection of K
    blocks at 512 tokens and every block at 128."""
    code, out, err = cli("verify", str(DEFAULTS / "configs" / "mra.json"), "--seq-len", seq_len)
    assert code == 0 and "all" in out and "agree" in out, out + err


def test_mra_approx_mode_not_read_is_refused_in_one_line(cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "mra", "approx_mode": "dense"}))
    code, out, err = cli("count", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1 and "approx_mode" in err


def perceiver_mlm(qk: int | None = None, v: int | None = None) -> int:
    """PerceiverForMaskedLM at PerceiverConfig's defaults by hand (Jaegle et al. 2021 §4.1, Appendix F; transformers'
    modeling_perceiver): the byte table (262 × d_model 768) and its 2,048 learned positions; 256 latents of d_latents
    1280; the encoder's cross-attention (LayerNorms over the latents, the bytes and before the MLP; q 1280 -> qk, k and
    v 768 -> qk and v, qk d_model where qk_channels is unset (cross_attention_shape_for_attention kv), o v -> 1280, the
    MLP 1280 -> 1280 -> 1280, every linear with a bias); 26 self-attention layers (two LayerNorms, q and k 1280 -> qk
    (1280 unset), v 1280 -> 1280, o, the MLP); the decoder's 2,048 queries of 768 and its cross-attention (q 768 -> 256,
    k 1280 -> 256, v 1280 -> 768, o 768 -> 768, the MLP 768 wide, three LayerNorms); the head's bias (its weight is
    the byte table)."""
    vocab, w, d, latents, outputs, layers = 262, 768, 1280, 256, 2048, 26
    cross_qk, cross_v = qk or w, v or qk or w
    self_qk = qk or d

    def lin(i: int, o: int) -> int:
        return i * o + o

    cross = 2 * 2 * d + 2 * w + lin(d, cross_qk) + lin(w, cross_qk) + lin(w, cross_v) + lin(cross_v, d) + 2 * lin(d, d)
    layer = 2 * 2 * d + 2 * lin(d, self_qk) + lin(d, d) + lin(d, d) + 2 * lin(d, d)
    decoder = outputs * w + 2 * 2 * w + 2 * d + lin(w, 256) + lin(d, 256) + lin(d, w) + lin(w, w) + 2 * lin(w, w)
    return vocab * w + outputs * w + latents * d + cross + layers * layer + decoder + vocab


def test_perceiver_by_hand_and_its_published_size():
    """PerceiverForMaskedLM by hand (perceiver_mlm), at PerceiverConfig's defaults and with deepmind/language-perceiver's
    narrower queries and keys (qk_channels 256, v_channels 1280): "201M parameters" (Jaegle et al. 2021, Table 11).

    FLOPs by hand at 8 and 32 bytes, 2 a multiply-add: the encoder's queries over the 256 latents, its keys and values
    over the bytes, QKᵀ and AV of 256 latents × s bytes; 26 layers over 256 latents whatever s; the decoder over its
    2,048 queries (whatever s) and the 256 latents; the head over the 2,048 rows. Only the bytes' keys, values and
    products grow with s."""
    from ffncalc.sources import hf

    spec = hf.load(DEFAULTS / "configs" / "perceiver.json")[1]
    assert tally(spec).params == _truth_total(DEFAULTS / "truth" / "perceiver.json") == perceiver_mlm() == 269_319_430
    assert perceiver_mlm(256, 1280) == 201_108_230 and round(perceiver_mlm(256, 1280) / 1e6) == 201
    V, w, d, L, P, n = 262, 768, 1280, 256, 2048, 26
    for s in (8, 32):
        encoder = L * d * w + 2 * s * w * w + 2 * L * s * w + L * w * d + 2 * L * d * d
        layers = n * (6 * L * d * d + 2 * L * L * d)
        decoder = P * w * 256 + L * d * 256 + L * d * w + P * L * 256 + P * L * w + 3 * P * w * w
        macs = encoder + layers + decoder + P * w * V
        assert tally(spec, convention="exact", seq_len=s).flops_per_token * s == 2 * macs
    assert 2 * macs == 152_993_529_856  # at 32 bytes; FlopCounterMode's total over PerceiverForMaskedLM (tests/hf_defaults)


@pytest.mark.torch
def test_perceiver_language_shapes_equal_transformers(tmp_path):
    """deepmind/language-perceiver's narrower queries and keys (qk_channels 256, v_channels 1280: the self-attention
    layers' q and k 1280 -> 256, the encoder cross-attention's q and k -> 256 and v -> 1280), built by transformers now
    on the meta device: every parameter, and the FLOPs of a forward at 8 and 32 bytes, per component."""
    from ffncalc.analysis import hfcheck
    from ffncalc.sources import hf

    data = json.loads((DEFAULTS / "configs" / "perceiver.json").read_text()) | {"qk_channels": 256, "v_channels": 1280}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    c = hf.read_config(path)
    measured = hfcheck.measure(c, flops=True)
    assert hfcheck.check(c, measured=measured).ok
    assert sum(n for _, n in measured.params) == perceiver_mlm(256, 1280)
    checks = hfcheck.check_flops(c, measured)
    assert [r.seq_len for r in measured.flops] == [8, 32] and checks and all(ch.ok for ch in checks)
    assert {"perceiver.cross.attn.q", "perceiver.decoder.attn.v", "attention products"} <= {ch.component for ch in checks if ch.ours}


@pytest.mark.torch
@pytest.mark.parametrize("seq_len", [64, 300])
def test_perceiver_verifies_against_its_reference_modules(cli, seq_len):
    """The reference modules (the latents' cross-attention, the layers over the latents, the decoder's queries and the
    head over its 2,048 rows) hold and compute what the count says, shorter and longer than the 256 latents."""
    code, out, err = cli("verify", str(DEFAULTS / "configs" / "perceiver.json"), "--seq-len", str(seq_len))
    assert code == 0 and "all" in out and "agree" in out, out + err


@pytest.mark.parametrize(
    "changes, key",
    [
        ({"num_blocks": 2}, "num_blocks"),  # the layers run again: not read yet
        ({"v_channels": 256}, "v_channels"),  # values narrower than d_latents, which the residual adds need
        ({"cross_attention_shape_for_attention": "x"}, "cross_attention_shape_for_attention"),
    ],
)
def test_perceiver_settings_not_read_are_refused_in_one_line(cli, tmp_path, changes, key):
    data = json.loads((DEFAULTS / "configs" / "perceiver.json").read_text()) | changes
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    code, out, err = cli("count", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1 and key in err


def test_neomme_record_by_hand():
    """NeoMMEForMaskedLM at its class defaults (transformers' modeling_neomme.py), derived by hand from its
    shapes and held against the recorded transformers truth per component: the factorized token table (V × r)
    and its projection (r × d); the patch stem (LayerNorm over 3·p² patch values, up to 2d, down to d with a
    bias); per layer q, gate and o (d × H·hd each), k and v (d × K·hd each), the per-head alpha of exclusive
    self-attention (H), the two initial-state lambdas and the ReLU² MLP (two d × I); the value table (V × K·hd)
    added in the first and last global layers. Its scale-free RMSNorms hold nothing, and both head weights are
    tied to the token table and its projection, so the head adds none."""
    root = Path(__file__).resolve().parents[1] / "hf_defaults"
    cfg = json.loads((root / "configs" / "neomme.json").read_text())
    vocab, rank, d, d_ff = cfg["vocab_size"], cfg["embedding_rank"], cfg["hidden_size"], cfg["intermediate_size"]
    layers, heads, kv, hd = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    patch = 3 * cfg["patch_size"] ** 2
    assert (vocab, rank, d, d_ff, layers, heads, kv, hd, patch) == (131072, 256, 1024, 3584, 17, 16, 4, 64, 3072)
    tokens = 131072 * 256 + 256 * 1024  # 33,554,432 + 262,144
    stem = 2 * 3072 + 3072 * 2048 + 2048 * 1024 + 1024  # 6,144 + 6,291,456 + 2,098,176
    attention = 3 * 1024 * 1024 + 2 * 1024 * 256 + 16  # 3,670,032
    layer = attention + 2 * 1024 * 3584 + 2  # 11,010,066
    values = 131072 * 256  # 33,554,432
    assert (tokens, stem, layer, values) == (33_816_576, 8_395_776, 11_010_066, 33_554_432)
    truth = json.loads((root / "truth" / "neomme.json").read_text())
    assert truth["model_class"] == "NeoMMEForMaskedLM"
    got = {"tokens": 0, "stem": 0, "layers": 0, "values": 0}
    for entry in truth["params"]:
        name, count = entry[0], entry[1]
        spans = [r.split("-") if "-" in r else [r, r] for r in entry[2]] if len(entry) > 2 else [["0", "0"]]
        copies = sum(int(b) - int(a) + 1 for a, b in spans)
        part = next(
            k
            for k, p in (
                ("tokens", "model.embed_tokens."),
                ("stem", "model.patch_embeddings."),
                ("layers", "model.layers."),
                ("values", "model.value_embeddings."),
            )
            if name.startswith(p)
        )
        got[part] += count * copies
    assert got == {"tokens": tokens, "stem": stem, "layers": layers * layer, "values": values}
    assert sum(got.values()) == 262_937_906
