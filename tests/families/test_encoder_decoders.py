"""Encoder-decoders (BART and the models built as it is, T5 and mT5): both stacks counted whole, the cross-attention in every
decoder layer, each proven against transformers' class at its defaults (tests/families/test_defaults.py, and the
FLOPs below) and by hand; their training and serving plans (both stacks' activations, the cross-attention cache) by
hand; pipeline stages, which are not planned for them, refused in one line."""

import json
from fractions import Fraction
from pathlib import Path

import pytest

from ffncalc.analysis.count import tally
from ffncalc.sources import hf, presets
from ffncalc.sources.hf import coverage
from ffncalc.sources.hf.towers import wrappers

DEFAULTS = Path(__file__).resolve().parents[1] / "hf_defaults"


def bart_total(vocab: int, d: int, enc: int, dec: int, d_ff: int, rows: int) -> int:
    """BartForConditionalGeneration by hand: the shared table (also the tied head); per stack a position table of
    ``rows`` and a LayerNorm on its embeddings (weight and bias); per encoder layer q, k, v, out_proj (d × d and a
    bias each), fc1 and fc2 with biases, two LayerNorms; per decoder layer the same and a cross-attention (four more
    d × d projections with biases) with its LayerNorm. final_logits_bias is a buffer."""
    attention = 4 * (d * d + d)
    ffn = d * d_ff + d_ff + d_ff * d + d
    encoder_layer = attention + ffn + 2 * 2 * d
    decoder_layer = encoder_layer + attention + 2 * d
    return vocab * d + 2 * (rows * d + 2 * d) + enc * encoder_layer + dec * decoder_layer


def test_bart_large_preset_counts_the_whole_model():
    total = bart_total(50265, 1024, 12, 12, 4096, 1026)
    assert tally(presets.load("bart-large")[1]).params == total == 406_291_456  # "406M"


def test_the_encoders_work_runs_over_the_source_once():
    """Per decoder token at T = 512 with a source of S = 1,024 tokens: the encoder's layers run over S rows and the
    cross-attention's k and v project the S encoder rows, so each counts S / T times per decoder token; each
    decoder query meets all S keys. By hand for BART-large's 12 encoder layers' attention q projection and the
    decoder's cross-attention products."""
    from dataclasses import replace

    from ffncalc.model.stack import Model

    spec: Model = presets.load("bart-large")[1]
    part = spec.part("encoder")
    longer = replace(spec, parts=tuple(replace(p, source_length=1024) if p is part else p for p in spec.parts))
    rows = {r.name: r for r in tally(longer, seq_len=512).rows}
    assert rows["encoder.attn.q.weight"].flops == 2 * 12 * 1024 * 1024 * Fraction(1024, 512)
    assert rows["encoder.cross.k.weight"].flops == 2 * 12 * 1024 * 1024 * Fraction(1024, 512)
    assert rows["encoder.cross.q.weight"].flops == 2 * 12 * 1024 * 1024
    assert rows["encoder.cross.scores"].flops == 2 * 12 * 16 * 1024 * 64  # 16 heads of 64 over 1,024 keys


@pytest.mark.parametrize(
    "command",
    [
        ["train", "--tokens", "1B", "--pp", "2", "--gpus", "2"],
        ["infer", "--prompt", "8", "--generate", "8", "--pp", "2", "--gpus", "2"],
        ["fit", "--hardware", "l4", "--pp", "2", "--gpus", "2"],
    ],
)
def test_pipeline_stages_of_an_encoder_decoder_are_refused_in_one_line(cli, command):
    """Where the encoder runs among pipeline stages (Megatron-LM gives it ranks of its own) is not planned."""
    code, out, err = cli(command[0], "bart-large", *command[1:])
    assert code == 2 and out == "" and err.count("\n") == 1 and "an encoder-decoder" in err


@pytest.mark.parametrize(
    "args, says",
    [
        (["whisper-large-v3", "--source-len", "100"], "1,500 positions"),  # a 30-s window's frames, halved by conv2
        (["bart-large", "--source-len", "2000"], "end at 1,024"),  # 1,026 learned rows, the first two offset
        (["gpt2", "--source-len", "10"], "no encoder"),
    ],
)
def test_a_source_length_the_model_cannot_take_is_refused_in_one_line(cli, args, says):
    code, out, err = cli("infer", *args, "--prompt", "4", "--generate", "4")
    assert code == 2 and out == "" and err.count("\n") == 1 and says in err, err


def test_flan_t5_xl_cross_attention_cache_and_decode_step_by_hand():
    """google/flan-t5-xl at a source of S = 512 tokens, 1 decoder prompt token and 128 generated: every decoder layer
    caches K and V of its 32 heads of d_kv 64 for each source token, in bf16: 24 × 2 × 32·64 × 512 × 2 bytes. A decode
    step reads the decoder's weights but not the shared token table (looked up), nor the encoder's, nor the
    cross-attention's k and v (projected once at the prefill): per decoder layer q, k, v, o (4 × 2,048 × 2,048), the
    cross-attention's q and o (2 × 2,048 × 2,048), wi_0, wi_1 and wo (3 × 2,048 × 5,120) and three RMS norms (3 ×
    2,048); the untied lm_head (32,128 × 2,048) and the final norm; the decoder's relative-bias table is looked up;
    2 bytes each; then the self-attention cache at 129 tokens (24 × 2 × 2,048 × 2 bytes a token) and the cross cache."""
    from ffncalc import api

    f = api.infer("flan-t5-xl", prompt=1, generate=128, source_len=512).to_dict()["figures"]
    d, heads, d_kv, d_ff, layers = 2048, 32, 64, 5120, 24
    cross = layers * 2 * heads * d_kv * 512 * 2
    assert f["cross_kv_bytes_per_sequence"]["value"] == cross == 100_663_296
    decoder_layer = 4 * d * heads * d_kv + 2 * d * heads * d_kv + 3 * d * d_ff + 3 * d
    read = 2 * (layers * decoder_layer + 32128 * d + d)
    self_cache = 129 * layers * 2 * heads * d_kv * 2
    assert f["kv_bytes"]["value"] == self_cache
    assert f["step_bytes"]["value"] == read + self_cache + cross
    # each decode step's query meets the S source keys in every layer's cross-attention: QKᵀ and AV, 2 FLOPs a
    # multiply-add, beside 2 FLOPs per weight it reads (k and v of the cross-attention not among them)
    matmuls = 2 * (layers * (decoder_layer - 3 * d) + 32128 * d)
    self_keys = 4 * layers * heads * d_kv * 129  # the last step's query against its 129 cached keys
    assert f["step_flops"]["value"] == matmuls + 4 * layers * heads * d_kv * 512 + self_keys


def test_flan_t5_xl_train_flops_decomposed_per_stack():
    """Under 6N (2 FLOPs a parameter a token forward, 6 in training) at T = 128 decoder tokens and S = 512 source
    tokens: the encoder's 24 layers (q, k, v, o; wi_0, wi_1, wo; two norms), its final norm and relative-bias table,
    and each decoder layer's cross-attention k and v run over the source, S / T = 4 times a decoder token; the decoder's
    layers (the cross-attention's q and o among them), its tables, final norm and head once. At T = S the total is 3
    times the count's forward FLOPs a token."""
    from ffncalc import api

    d, heads, d_kv, d_ff, layers = 2048, 32, 64, 5120, 24
    encoder = layers * (4 * d * heads * d_kv + 3 * d * d_ff + 2 * d) + 32 * 32 + d
    cross_kv = layers * 2 * d * heads * d_kv
    decoder = layers * (6 * d * heads * d_kv + 3 * d * d_ff + 3 * d) + 2 * 32128 * d + d + 32 * 32
    f = api.train("flan-t5-xl", tokens="1M", seq_len=128, source_len=512).to_dict()["figures"]
    assert f["train_flops_per_token_source"]["value"] == 6 * (encoder + cross_kv) * 512 // 128
    assert f["train_flops_per_token_target"]["value"] == 6 * decoder
    assert f["train_flops_per_token"]["value"] == 6 * (encoder + cross_kv) * 4 + 6 * decoder
    same = api.train("flan-t5-xl", tokens="1M", seq_len=512).to_dict()["figures"]
    counted = api.count("flan-t5-xl", seq_len=512, convention="6n")
    assert same["train_flops_per_token"]["value"] == 3 * counted.forward_flops_per_token


def test_flan_t5_xl_training_keeps_the_encoder_at_the_source_length():
    """Doubling the source from 512 to 1,024 tokens (T = 128, micro-batch 1, flash attention) adds 512 source
    positions' activations: in each of the encoder's 24 layers (Korthikanti et al. 2022 §4.1 at T5's widths, 16-bit)
    the attention's input, Q, K, V and its output (d + 4·32·64 elements), the gated FFN's input, wi_0's and wi_1's
    outputs, the activation's and the product (d + 4·5,120), two 1-byte dropout masks of d, two norms' inputs and the
    flash kernel's fp32 log-sum-exp a head (4 × 32 bytes); beside them the encoder's output and its final norm's input
    (2 × d), and every decoder layer's cross-attention K and V (24 × 2 × 32·64)."""
    from ffncalc import api

    d, heads, d_kv, d_ff, layers = 2048, 32, 64, 5120, 24
    encoder_layer = 2 * (d + 4 * heads * d_kv) + 2 * (d + 4 * d_ff) + 2 * d + 2 * 2 * d + 4 * heads
    per_source = layers * encoder_layer + 2 * 2 * d + 2 * layers * 2 * heads * d_kv
    short, long = (
        api.train("flan-t5-xl", tokens="1M", seq_len=128, source_len=s).to_dict()["figures"]["activation_bytes_per_device"]["value"]
        for s in (512, 1024)
    )
    assert long - short == 512 * per_source


READ_PLANNED = ["bart", "mbart", "plbart", "marian", "pegasus", "blenderbot", "blenderbot-small", "m2m_100", "fsmt", "mvp"]
READ_PLANNED += ["t5", "mt5", "umt5", "switch_transformers", "whisper"]
READ_PLANNED += ["t5gemma", "pop2piano", "longt5", "speech_to_text", "moonshine"]


@pytest.mark.parametrize("model_type", READ_PLANNED)
def test_every_read_encoder_decoder_trains_serves_and_fits_at_its_defaults(cli, model_type):
    config = str(DEFAULTS / "configs" / f"{model_type}.json")
    for command in (
        ["train", config, "--tokens", "1M", "--hardware", "h100-sxm"],
        ["infer", config, "--prompt", "4", "--generate", "4", "--hardware", "h100-sxm"],
        ["fit", config, "--hardware", "l4"],
    ):
        code, out, err = cli(*command, "--format", "json")
        assert code == 0 and err == "", err
        figures = json.loads(out)["figures"]
        assert "source_len" in json.loads(out)["inputs"]
        if command[0] != "train":
            assert figures[("cross_kv_bytes" if command[0] == "infer" else "cross_kv_bytes_per_device")]["value"] > 0


@pytest.mark.torch
@pytest.mark.parametrize("name", ["bart-large", "flan-t5-xl", "whisper-large-v3"])
def test_presets_verify_against_their_reference_modules(cli, name):
    code, out, err = cli("verify", name, "--seq-len", "32")
    assert code == 0 and "all" in out and "agree" in out, out + err


# the encoder-decoders a family reads (the audio-language ones read whole, as their wrappers: test_whole_models.py)
READ = [
    t
    for t in coverage.ENCODER_DECODER_TYPES
    if t not in coverage.SEQ2SEQ_NOT_YET and t not in coverage.REFUSED_AT_DEFAULTS and t not in wrappers()
]


def test_the_encoder_decoders_read():
    assert (
        set(READ)
        == set(READ_PLANNED)
        == {
            "bart",
            "mbart",
            "plbart",
            "marian",
            "pegasus",
            "blenderbot",
            "blenderbot-small",
            "m2m_100",
            "fsmt",
            "mvp",
            "t5",
            "mt5",
            "umt5",
            "switch_transformers",
            "whisper",
            "t5gemma",
            "pop2piano",
            "longt5",
            "speech_to_text",
            "moonshine",
        }
    )


def test_flan_t5_xl_preset_counts_the_whole_model():
    """T5ForConditionalGeneration for google/flan-t5-xl by hand: the shared table and the untied head (32,128 × 2,048
    each); per encoder layer q, k, v, o (2,048 × 32·64 each, no biases), the gated FFN (wi_0, wi_1 2,048 × 5,120, wo
    back) and two RMS norms; per decoder layer the same, a cross-attention (four more) and its norm; each stack a
    table of 32 buckets × 32 heads and a final norm. Published: "3B"."""
    d, ff, vocab = 2048, 5120, 32128
    attention = 4 * d * 32 * 64
    encoder_layer = attention + 3 * d * ff + 2 * d
    decoder_layer = encoder_layer + attention + d
    total = 2 * vocab * d + 24 * encoder_layer + 24 * decoder_layer + 2 * (32 * 32 + d)
    assert tally(presets.load("flan-t5-xl")[1]).params == total == 2_849_757_184


def test_whisper_large_v3_preset_counts_the_whole_model():
    """WhisperForConditionalGeneration for openai/whisper-large-v3 by hand: the encoder's conv1 (1,280 × 128 × 3 and
    a bias), conv2 (1,280 × 1,280 × 3 and a bias), its table of 1,500 positions, 32 layers (q, v, out_proj with biases
    and k_proj without, fc1 and fc2 with biases, two LayerNorms) and a final LayerNorm; the decoder's table of 51,866
    tokens (tied to proj_out) and of 448 positions, 32 layers (the same, and a cross-attention with its LayerNorm) and
    a final LayerNorm. Published: 1.54B (the Hub's 1,543,490,560)."""
    d, f, layers, vocab, mels = 1280, 5120, 32, 51866, 128
    attention = 4 * d * d + 3 * d  # k_proj without a bias
    mlp = 2 * d * f + f + d
    encoder = d * mels * 3 + d + d * d * 3 + d + 1500 * d + layers * (attention + mlp + 4 * d) + 2 * d
    decoder = vocab * d + 448 * d + layers * (2 * attention + mlp + 6 * d) + 2 * d
    assert tally(presets.load("whisper-large-v3")[1]).params == encoder + decoder == 1_543_490_560


@pytest.mark.parametrize("model_type", READ)
def test_encoder_decoder_flops_at_defaults_equal_flop_counter_mode(model_type):
    """One forward of the class at its defaults (decoder_input_ids as long as input_ids; no layer dropped) under
    FlopCounterMode, per component and layer run, at a short sequence and one past every window, against the exact
    convention: the encoder's products and projections model-level, the cross-attention's in each decoder layer."""
    from ffncalc.analysis import hfcheck

    c = hf.read_config(DEFAULTS / "configs" / f"{model_type}.json")
    measured = hfcheck.Measured.from_record(json.loads((DEFAULTS / "truth" / f"{model_type}.json").read_text()))
    assert [r.seq_len for r in measured.flops] == list(hfcheck.flop_lengths(c))
    checks = hfcheck.check_flops(c, measured)
    assert checks and all(ch.ok for ch in checks), [ch for ch in checks if not ch.ok]
    assert any(ch.component == "encoder.cross.q" for ch in checks)


def test_whisper_large_v3_serves_over_its_window_whatever_the_prompt():
    """openai/whisper-large-v3: the encoder runs over its 30-s window's 1,500 positions (3,000 log-mel frames, halved
    by conv2's stride) once a request; every one of the 32 decoder layers caches K and V of its 20 heads of 64 for
    each of them, in bf16: 32 × 2 × 1,280 × 1,500 × 2 bytes; the prefill runs the encoder whole, so a longer decoder
    prompt adds only the decoder's work."""
    from ffncalc import api

    one, many = (api.infer("whisper-large-v3", prompt=p, generate=16).to_dict() for p in (1, 4))
    assert one["inputs"]["source_len"] == 1500
    assert one["figures"]["cross_kv_bytes_per_sequence"]["value"] == 32 * 2 * 20 * 64 * 1500 * 2 == 245_760_000
    assert many["figures"]["cross_kv_bytes"]["value"] == one["figures"]["cross_kv_bytes"]["value"]
    # the decoder's 3 more prompt tokens: 2 FLOPs per weight each reads (k and v of the cross-attention projected
    # once from the source, the token table looked up, proj_out tied to it), every query meeting the 1,500 source
    # keys, and the self-attention's causal triangle of 4 against 1 (2 + 3 + 4 more keys met, 2 products each)
    d, f, layers, vocab = 1280, 5120, 32, 51866
    weights = layers * (4 * d * d + 2 * d * d + 2 * d * f) + vocab * d
    extra = 3 * 2 * weights + 3 * 4 * layers * d * 1500 + (2 + 3 + 4) * 4 * layers * d
    assert many["figures"]["prefill_flops"]["value"] - one["figures"]["prefill_flops"]["value"] == extra


def test_umt5_holds_a_relative_bias_table_in_every_layer():
    """UMT5ForConditionalGeneration at UMT5Config's defaults by hand: the shared table (250,112 × 512), tied to lm_head
    (UMT5Config forces tie_word_embeddings); per encoder layer q, k, v, o (512 × 6·64 each), the gated FFN (wi_0, wi_1
    512 × 1,024, wo back), two RMS norms and its own relative_attention_bias (32 buckets × 6 heads); per decoder layer
    the same, a cross-attention (four more projections) and its norm; each stack a final norm. T5 holds one table a
    stack (in its first block); UMT5 one a layer (Chung et al. 2023)."""

    d, inner, ff, layers, table = 512, 6 * 64, 1024, 8, 32 * 6
    encoder_layer = 4 * d * inner + 3 * d * ff + 2 * d + table
    decoder_layer = 8 * d * inner + 3 * d * ff + 3 * d + table
    total = 250112 * d + layers * (encoder_layer + decoder_layer) + 2 * d
    assert tally(hf.load(DEFAULTS / "configs" / "umt5.json")[1]).params == total == 172_122_112


def test_switch_transformers_holds_top1_mixtures_in_every_fourth_layer():
    """SwitchTransformersForConditionalGeneration at its defaults by hand: the shared table (32,128 × 768) tied to
    lm_head; 12 encoder and 12 decoder blocks of 12 heads of 64 (q, k, v, o; in the decoder a cross-attention's four
    more), RMS norms (two a block, three in the decoder), one relative-bias table (32 × 12) a stack and a final norm a
    stack; the MLP (wi 768 → 2,048, wo back, no biases) replaced in blocks 1, 5 and 9 of each stack (i % 4 == 1, the
    step 12 // num_sparse_*_layers 3) by a router (768 × 8) and 8 such experts. A token runs one expert (top-1, Fedus
    et al. 2022): the active parameters leave out 7 experts in each of the 6 sparse blocks."""
    from ffncalc import api

    d, ff, experts, vocab = 768, 2048, 8, 32128
    attention, mlp = 4 * d * d, 2 * d * ff
    sparse = d * experts + experts * mlp
    encoder = 12 * attention + 9 * mlp + 3 * sparse + 12 * 2 * d
    decoder = 12 * 2 * attention + 9 * mlp + 3 * sparse + 12 * 3 * d
    total = vocab * d + encoder + decoder + 2 * 32 * 12 + 2 * d
    counted = api.count(str(DEFAULTS / "configs" / "switch_transformers.json"))
    assert counted.params == total == 317_312_256
    assert counted.active_params == total - 6 * (experts - 1) * mlp


def test_fsmt_holds_a_table_a_stack_and_its_own_output_projection():
    """FSMTForConditionalGeneration at FSMTConfig's defaults by hand: the encoder's table (src_vocab_size 42,024 ×
    1,024), the decoder's (tgt_vocab_size 42,024) and output_projection (1,024 → 42,024, untied: tie_word_embeddings
    false); each stack's SinusoidalPositionalEmbedding, an nn.Embedding of 1,024 + pad 1 + 1 rows whose weight is a
    parameter; 12 post-norm layers a stack (q, k, v, out_proj with biases, fc1 and fc2 with biases, two LayerNorms;
    in the decoder a cross-attention and its LayerNorm more); no norm on the embeddings, no final norm."""

    d, ff, vocab, rows = 1024, 4096, 42024, 1024 + 1 + 1
    attention, ffn = 4 * (d * d + d), d * ff + ff + ff * d + d
    encoder_layer = attention + ffn + 2 * 2 * d
    decoder_layer = encoder_layer + attention + 2 * d
    total = 3 * vocab * d + 2 * rows * d + 12 * (encoder_layer + decoder_layer)
    assert tally(hf.load(DEFAULTS / "configs" / "fsmt.json")[1]).params == total == 483_913_728


def test_mvp_is_bart_at_its_defaults_and_its_prompts_are_refused_in_one_line(cli, tmp_path):
    """MvpForConditionalGeneration at MvpConfig's defaults (use_prompt false) is BART-large's layout over 50,267
    tokens; with use_prompt its MvpPrompt modules (prefix keys and values in every attention) are not read."""

    path = DEFAULTS / "configs" / "mvp.json"
    assert tally(hf.load(path)[1]).params == bart_total(50267, 1024, 12, 12, 4096, 1026) == 406_293_504
    prompted = tmp_path / "config.json"
    prompted.write_text(json.dumps({**json.loads(path.read_text()), "use_prompt": True}))
    code, out, err = cli("count", str(prompted))
    assert code == 2 and out == "" and err.count("\n") == 1 and "use_prompt" in err, err


def test_t5gemma_holds_gemma_2_stacks_and_a_grouped_cross_attention():
    """T5GemmaForConditionalGeneration at T5GemmaConfig's defaults (its encoder and decoder T5GemmaModuleConfig's:
    the 2B-2B layout) by hand: the encoder's table and the decoder's (256,000 × 2,304 each; lm_head.out_proj tied to
    the decoder's); 26 encoder layers of q and o (2,304 ↔ 8·256), k and v (2,304 → 4·256), the GeGLU MLP (gate and up
    2,304 → 9,216, down back) and four RMSNorms; 26 decoder layers the same, a cross-attention (q, k, v, o as the
    self-attention's: grouped, 4 key-value heads) and its two norms (pre and post); a final norm a stack. The
    cross-attention cache at a source of 512 tokens, bf16: 26 layers × K and V × 4·256 × 512 × 2 bytes."""
    from ffncalc import api

    d, ff, vocab, layers, hd = 2304, 9216, 256000, 26, 256
    attention = 2 * d * 8 * hd + 2 * d * 4 * hd
    encoder_layer = attention + 3 * d * ff + 4 * d
    decoder_layer = encoder_layer + attention + 2 * d
    total = 2 * vocab * d + layers * (encoder_layer + decoder_layer) + 2 * d
    path = str(DEFAULTS / "configs" / "t5gemma.json")
    assert api.count(path).params == total == 5_596_853_760
    f = api.infer(path, prompt=1, generate=16, source_len=512).to_dict()["figures"]
    assert f["cross_kv_bytes_per_sequence"]["value"] == layers * 2 * 4 * hd * 512 * 2 == 54_525_952


def test_pop2piano_is_t5_with_a_composer_table_and_a_head_of_its_own():
    """Pop2PianoForConditionalGeneration at Pop2PianoConfig's defaults by hand: the shared table and lm_head (2,400 ×
    512 each: the head is not tied), mel_conditioner's composer table (21 × 512); per encoder layer q, k, v, o (512 ×
    8·64 each), the gated FFN (wi_0, wi_1 512 × 2,048, wo back) and two RMS norms; per decoder layer the same, a
    cross-attention (four more projections) and its norm; each stack a relative-bias table (32 buckets × 8 heads) and
    a final norm."""
    d, ff, vocab, layers = 512, 2048, 2400, 6
    encoder_layer = 4 * d * d + 3 * d * ff + 2 * d
    decoder_layer = 8 * d * d + 3 * d * ff + 3 * d
    total = 2 * vocab * d + 21 * d + layers * (encoder_layer + decoder_layer) + 2 * (32 * 8 + d)
    assert tally(hf.load(DEFAULTS / "configs" / "pop2piano.json")[1]).params == total == 59_108_352


def test_longt5_encoder_attends_three_blocks_of_its_padded_sequence():
    """LongT5ForConditionalGeneration at LongT5Config's defaults (local_radius 127: blocks of 128): over S = 1,000 source
    tokens LongT5LocalAttention pads the sequence to 8 blocks (1,024 positions) and each padded query meets the 384
    keys of its block and the two beside it, in each of the 8 heads of 64 and the 6 encoder layers: QKᵀ 2 FLOPs a
    multiply-add, 2 × 6 × 8 × 64 × 384 × 1,024 in all, per token of the 1,000; AV the same. The parameters are T5's
    (t5-small's layout: 60,506,624)."""

    spec = hf.load(DEFAULTS / "configs" / "longt5.json")[1]
    rows = {r.name: r for r in tally(spec, seq_len=1000).rows}
    for name in ("encoder.attn.scores", "encoder.attn.values"):
        assert rows[name].flops == Fraction(2 * 6 * 8 * 64 * 384 * 1024, 1000)
    d, ff, vocab = 512, 2048, 32128
    encoder = 6 * (4 * d * d + 2 * d * ff + 2 * d) + 32 * 8 + d
    decoder = 6 * (8 * d * d + 2 * d * ff + 3 * d) + 32 * 8 + d
    assert tally(spec).params == vocab * d + encoder + decoder == 60_506_624


@pytest.mark.torch
def test_longt5_transient_global_equals_transformers(tmp_path):
    """LongT5ForConditionalGeneration with encoder_attention_type "transient-global" (small: 2 layers a stack of width
    64, 4 heads of 16, blocks of local_radius 7 + 1, a global token per 4 positions), built by transformers on the meta
    device: every parameter (global_input_layer_norm in each encoder layer, global_relative_attention_bias beside the
    first layer's table) and, under FlopCounterMode, every component's FLOPs at 8 and 16 tokens and at 19 (three
    blocks, the last padded, and 4 global tokens, the last taking 3 orphans): the global tokens' sums, their k and v,
    each padded query against 3 × 8 + G keys. By hand for 19: QKᵀ in each of the 2 encoder layers 2 FLOPs × 4 heads ×
    16 × (24 + 4) keys × 24 padded queries."""
    from dataclasses import replace

    from ffncalc.analysis import hfcheck

    data = json.loads((DEFAULTS / "configs" / "longt5.json").read_text())
    data.update(d_model=64, d_kv=16, num_heads=4, d_ff=128, num_layers=2, num_decoder_layers=2, vocab_size=100)
    data.update(local_radius=7, encoder_attention_type="transient-global", global_block_size=4)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    c = hf.read_config(path)
    measured = hfcheck.measure(c, flops=True)
    report = hfcheck.check(c, model="longt5", measured=measured)
    assert report.ok and not any(ch.component.startswith("(unmatched)") for ch in report.checks), report.failures
    assert any(ch.component == "encoder.attn.global_norm" for ch in report.checks)
    odd = replace(measured, flops=(hfcheck.flop_run(hfcheck.instantiate(c), 1, 19),))
    for m in (measured, odd):
        checks = hfcheck.check_flops(c, m)
        assert checks and all(ch.ok for ch in checks), [ch for ch in checks if not ch.ok]
        assert any(ch.component == "encoder.attn.k" and ch.ours for ch in checks)
    rows = {r.name: r for r in tally(hf.load(path)[1], seq_len=19).rows}
    assert rows["encoder.attn.scores"].flops * 19 == 2 * 2 * 4 * 16 * (24 + 4) * 24


def test_speech_to_text_subsamples_four_frames_a_position():
    """Speech2TextForConditionalGeneration at Speech2TextConfig's defaults by hand: Conv1dSubsampler's conv_layers.0
    (80 filterbank features → 1,024 channels, kernel 5, and a bias) and conv_layers.1 (the GLU's 512 → 2 × 256,
    kernel 5, and a bias); 12 encoder layers of width 256 (q, k, v, out_proj with biases, fc1 256 → 2,048 and fc2
    back with biases, two LayerNorms) and a final LayerNorm; the decoder's table (10,000 × 256, tied to lm_head), 6
    layers (the same, and a cross-attention with its LayerNorm) and a final LayerNorm; both position tables sinusoidal
    buffers. FLOPs per source position: conv_layers.0 runs at 2 outputs a position (stride 2 over 4 frames), 2 FLOPs a
    multiply-add of its 1,024 × 80 × 5 weights each; conv_layers.1 at 1."""
    d, ff = 256, 2048
    attention = 4 * (d * d + d)
    mlp = 2 * d * ff + ff + d
    convs = 1024 * 80 * 5 + 1024 + 512 * 512 * 5 + 512
    encoder = convs + 12 * (attention + mlp + 4 * d) + 2 * d
    decoder = 10000 * d + 6 * (2 * attention + mlp + 6 * d) + 2 * d
    spec = hf.load(DEFAULTS / "configs" / "speech_to_text.json")[1]
    rows = {r.name: r for r in tally(spec, seq_len=64).rows}
    assert tally(spec).params == encoder + decoder == 29_536_256
    assert rows["encoder.conv1.weight"].flops == 2 * 2 * 1024 * 80 * 5
    assert rows["encoder.conv2.weight"].flops == 2 * 512 * 512 * 5


def test_moonshine_reads_the_waveform_through_three_convolutions():
    """MoonshineForConditionalGeneration at MoonshineConfig's defaults (Moonshine tiny's layout) by hand: conv1 (288 ×
    1 × 127, no bias), groupnorm (weight and bias), conv2 (576 × 288 × 7 and a bias), conv3 (288 × 576 × 3 and a
    bias); 6 encoder layers of q, k, v, o (288 × 8·36, no biases), fc1 288 → 1,152 and fc2 back with biases, two
    LayerNorms without biases, and a final one; the decoder's table (32,768 × 288, tied to proj_out), 6 layers of
    self- and cross-attention (eight 288 × 288 projections), fc1 288 → 2 × 1,152 and fc2 1,152 → 288 with biases, three
    LayerNorms, and a final one. FLOPs: S = 100 source positions come from the shortest waveform giving them, 384 × 100
    + 511 samples, conv1 (stride 64) making 6 × 100 + 7 outputs of 288 × 127 multiply-adds, 2 FLOPs each."""
    d, ff, heads = 288, 1152, 8
    convs = d * 127 + 2 * d + 2 * d * d * 7 + 2 * d + d * 2 * d * 3 + d
    encoder = convs + 6 * (4 * d * d + 2 * d * ff + ff + d + 2 * d) + d
    decoder = 32768 * d + 6 * (8 * d * d + d * 2 * ff + 2 * ff + ff * d + d + 3 * d) + d
    spec = hf.load(DEFAULTS / "configs" / "moonshine.json")[1]
    assert tally(spec).params == encoder + decoder == 27_092_736
    assert d // heads == 36
    rows = {r.name: r for r in tally(spec, seq_len=100).rows}
    assert rows["encoder.conv1.weight"].flops == Fraction(2 * d * 127 * (6 * 100 + 7), 100)


@pytest.mark.parametrize(
    "model_type, change, says",
    [
        ("longt5", {"encoder_attention_type": "sparse"}, "encoder_attention_type"),
        ("speech_to_text", {"conv_kernel_sizes": [5]}, "num_conv_layers"),
        ("moonshine", {"attention_bias": True}, "attention_bias"),
    ],
)
def test_encoder_decoder_configs_not_read_are_refused_in_one_line(cli, tmp_path, model_type, change, says):
    data = json.loads((DEFAULTS / "configs" / f"{model_type}.json").read_text())
    for key, value in change.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) else value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data, indent=1))
    code, out, err = cli("count", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1 and says in err, err


@pytest.mark.torch
def test_t5gemma_with_an_encoder_wider_than_its_decoder_equals_transformers(tmp_path):
    """T5Gemma 9B-2B's shape, small: an encoder of width 96 (3 layers, 4 heads of 16 over 2 key-value heads) beside a
    decoder of width 64 (2 layers), each with its own table; every decoder layer's cross-attention projects k and v
    from the encoder's width (T5GemmaCrossAttention: cross_attention_hidden_size), 96 → 2·16. Built by transformers
    on the meta device: every parameter, and every component's FLOPs under FlopCounterMode at two lengths."""
    from ffncalc.analysis import hfcheck

    data = json.loads((DEFAULTS / "configs" / "t5gemma.json").read_text())
    common = {"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100, "layer_types": None}
    data["encoder"].update(common, hidden_size=96, intermediate_size=192, num_hidden_layers=3, sliding_window=8)
    data["decoder"].update(common, hidden_size=64, intermediate_size=128, num_hidden_layers=2, sliding_window=8)
    data["vocab_size"] = 100
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    c = hf.read_config(path)
    measured = hfcheck.measure(c, flops=True)
    report = hfcheck.check(c, model="t5gemma", measured=measured)
    assert report.ok and not any(ch.component.startswith("(unmatched)") for ch in report.checks), report.failures
    checks = hfcheck.check_flops(c, measured)
    assert checks and all(ch.ok for ch in checks), [ch for ch in checks if not ch.ok]
    k = sum(r.params for r in tally(hf.load(path)[1]).rows if r.name == "encoder.cross.k.weight")
    assert k == 2 * 96 * 2 * 16  # 2 decoder layers of 96 → 32


def test_a_t5_config_stating_an_untied_head_is_counted_tied_as_transformers_builds_it(tmp_path):
    """transformers 5.23's T5Config sets tie_word_embeddings true whatever the file says (the stated false only turns
    off scale_decoder_outputs), so T5ForConditionalGeneration shares lm_head with the table: Flan-T5-XL's config,
    tie_word_embeddings false, builds the preset's 2,849,757,184 less lm_head's 32,128 × 2,048 = 65,798,144."""
    import json

    import ffncalc

    data = {
        "model_type": "t5",
        "d_model": 2048,
        "d_ff": 5120,
        "d_kv": 64,
        "num_heads": 32,
        "num_layers": 24,
        "vocab_size": 32128,
        "feed_forward_proj": "gated-gelu",
        "tie_word_embeddings": False,
    }
    (tmp_path / "config.json").write_text(json.dumps(data))
    assert ffncalc.count(str(tmp_path / "config.json")).params == 2_849_757_184 - 32_128 * 2_048 == 2_783_959_040
