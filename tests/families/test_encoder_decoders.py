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
READ_PLANNED += ["led", "pegasus_x", "bigbird_pegasus", "dia", "prophetnet", "encoder-decoder"]
READ_PLANNED += ["seamless_m4t", "seamless_m4t_v2", "canary", "cohere_asr", "speech-encoder-decoder", "speecht5"]
READ_PLANNED += ["nllb-moe", "t5gemma2"]


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


# types of the speech-seq2seq mapping whose class is a decoder with no encoder (Kyutai's: its codec held beside it)
DECODER_ONLY = ["kyutai_speech_to_text"]
# the encoder-decoders a family reads (the audio-language ones read whole, as their wrappers: test_whole_models.py)
READ = [
    t
    for t in coverage.ENCODER_DECODER_TYPES
    if t not in coverage.SEQ2SEQ_NOT_YET and t not in coverage.REFUSED_AT_DEFAULTS and t not in wrappers() and t not in DECODER_ONLY
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
            "led",
            "pegasus_x",
            "bigbird_pegasus",
            "dia",
            "prophetnet",
            "encoder-decoder",
            "seamless_m4t",
            "seamless_m4t_v2",
            "canary",
            "cohere_asr",
            "speech-encoder-decoder",
            "speecht5",
            "nllb-moe",
            "t5gemma2",
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


# NLLB-MoE's experts at its defaults run as transformers 5.23 computes them, not as the model is designed: its own
# test below (test_nllb_moe_flops_equal_flop_counter_mode_where_transformers_routes_top_2)
@pytest.mark.parametrize("model_type", [t for t in READ if t != "nllb-moe"])
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
    # T5Gemma 2's merged attention has no cross-attention projections of its own (its k and v the self-attention's)
    assert any(ch.component == "encoder.cross.q" for ch in checks) or model_type == "t5gemma2"


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


def test_led_pads_its_source_to_whole_windows_and_attends_in_overlapping_chunks():
    """LEDForConditionalGeneration at LEDConfig's defaults by hand: the shared table (50,265 × 1,024, tied to lm_head);
    the encoder's position table of 16,384 rows and the decoder's of 1,024 (no offset), a LayerNorm on each stack's
    embeddings; 12 encoder layers of query, key, value, query_global, key_global, value_global and output (1,024 ×
    1,024 and a bias each), fc1 and fc2 (1,024 ↔ 4,096, biases) and two LayerNorms; 12 decoder layers of BART's (q, k,
    v, out_proj, a cross-attention's four, fc1, fc2, three LayerNorms). FLOPs over S = 1,000 source tokens: LEDEncoder
    pads them to 1,024 (two windows of 512), so every encoder layer's projections run over 1,024 rows; QKᵀ over
    1,024 / 256 − 1 = 3 overlapping chunks of 512 queries against their 512 keys, in 16 heads of 64; AV over 1,024
    queries of 3 × 256 values; 2 FLOPs a multiply-add, per token of the 1,000."""

    d, ff, vocab, layers, w = 1024, 4096, 50265, 12, 256
    encoder_layer = 7 * (d * d + d) + 2 * d * ff + ff + d + 4 * d
    decoder_layer = 8 * (d * d + d) + 2 * d * ff + ff + d + 6 * d
    total = vocab * d + (16384 + 1024) * d + 2 * 2 * d + layers * (encoder_layer + decoder_layer)
    spec = hf.load(DEFAULTS / "configs" / "led.json")[1]
    assert tally(spec).params == total == 459_801_600
    rows = {r.name: r for r in tally(spec, seq_len=1000).rows}
    assert rows["encoder.attn.q.weight"].flops == Fraction(2 * layers * d * d * 1024, 1000)
    assert rows["encoder.attn.scores"].flops == Fraction(2 * layers * 16 * 64 * 3 * 512 * 512, 1000)
    assert rows["encoder.attn.values"].flops == Fraction(2 * layers * 16 * 64 * 1024 * 3 * w, 1000)
    assert rows["encoder.attn.q_global.weight"].flops == 0
    assert rows["encoder.cross.k.weight"].flops == 2 * layers * d * d  # the source's own 1,000 rows, unpadded


@pytest.mark.torch
def test_led_with_a_window_of_8_equals_transformers(tmp_path):
    """LEDForConditionalGeneration small (2 layers a stack of width 64, 4 heads of 16, a window of 8), built by
    transformers: every parameter, and every component's FLOPs under FlopCounterMode at 8 and 16 tokens and at 13 (padded
    to 16: the chunks and the padding's rows), LEDEncoder's question whether any token is global answered for a
    sequence given no global_attention_mask."""
    from dataclasses import replace

    from ffncalc.analysis import hfcheck

    data = json.loads((DEFAULTS / "configs" / "led.json").read_text())
    data.update(d_model=64, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128)
    data.update(encoder_layers=2, decoder_layers=2, vocab_size=100, attention_window=8)
    data.update(max_encoder_position_embeddings=64, max_decoder_position_embeddings=32)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    c = hf.read_config(path)
    measured = hfcheck.measure(c, flops=True)
    assert [r.seq_len for r in measured.flops] == [8, 16]
    report = hfcheck.check(c, model="led", measured=measured)
    assert report.ok and not any(ch.component.startswith("(unmatched)") for ch in report.checks), report.failures
    odd = replace(measured, flops=(hfcheck.flop_run(hfcheck.instantiate(c), 1, 13),))
    for m in (measured, odd):
        checks = hfcheck.check_flops(c, m)
        assert checks and all(ch.ok for ch in checks), [ch for ch in checks if not ch.ok]


def test_led_windows_that_differ_by_layer_are_refused_in_one_line(cli, tmp_path):
    data = json.loads((DEFAULTS / "configs" / "led.json").read_text())
    data["attention_window"] = [512] * 11 + [256]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    code, out, err = cli("count", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1 and "attention_window" in err, err


def test_pegasus_x_carries_global_tokens_and_staggers_every_other_layer():
    """PegasusXForConditionalGeneration at PegasusXConfig's defaults by hand: the shared table (96,103 × 1,024, tied to
    lm_head), embed_global (32 × 1,024); 16 encoder layers of q, k, v, out_proj (1,024 × 1,024, no biases), fc1 and fc2
    (1,024 ↔ 4,096, biases) and three LayerNorms (the global tokens' own among them); 16 decoder layers of self- and
    cross-attention (eight bias-free projections), fc1, fc2 and three LayerNorms; a final LayerNorm a stack; sinusoidal
    positions computed, no parameters. FLOPs over S = 1,000 source tokens: padded to L = 1,024 (two blocks of 512), the
    stack's rows are L and the 32 global tokens; each of the 8 odd layers pads another 512 rows (half a block either
    side), L' = 1,536. QKᵀ a layer: the G global queries against G + L' keys and the L' local queries against G + 512,
    16 heads of 64, 2 FLOPs a multiply-add, per token of the 1,000."""

    d, ff, vocab, layers, g, b = 1024, 4096, 96103, 16, 32, 512
    encoder_layer = 4 * d * d + 2 * d * ff + ff + d + 3 * 2 * d
    decoder_layer = 8 * d * d + 2 * d * ff + ff + d + 3 * 2 * d
    total = vocab * d + g * d + layers * (encoder_layer + decoder_layer) + 2 * 2 * d
    spec = hf.load(DEFAULTS / "configs" / "pegasus_x.json")[1]
    assert tally(spec).params == total == 568_568_832
    rows = {r.name: r for r in tally(spec, seq_len=1000).rows}
    pairs = sum(g * (g + s) + s * (g + b) for s in [1024, 1536] * 8)
    assert rows["encoder.attn.scores"].flops == Fraction(2 * 16 * 64 * pairs, 1000)
    assert rows["encoder.attn.q.weight"].flops == Fraction(2 * d * d * (16 * (1024 + g) + 8 * b), 1000)
    assert rows["encoder.ffn.up.weight"].flops == Fraction(2 * layers * d * ff * (1024 + g), 1000)


@pytest.mark.torch
def test_pegasus_x_with_blocks_of_8_equals_transformers(tmp_path):
    """PegasusXForConditionalGeneration small (3 encoder layers, one staggered, and 2 decoder layers of width 64, 4
    heads of 16, blocks of 8, 4 global tokens), built by transformers: every parameter, and every component's FLOPs under
    FlopCounterMode at 8 and 32 tokens and at 13 (padded to 16, the staggered layer's blocks over 24)."""
    from dataclasses import replace

    from ffncalc.analysis import hfcheck

    data = json.loads((DEFAULTS / "configs" / "pegasus_x.json").read_text())
    data.update(d_model=64, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128)
    data.update(encoder_layers=3, decoder_layers=2, vocab_size=100, block_size=8, num_global_tokens=4)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    c = hf.read_config(path)
    measured = hfcheck.measure(c, flops=True)
    report = hfcheck.check(c, model="pegasus_x", measured=measured)
    assert report.ok and not any(ch.component.startswith("(unmatched)") for ch in report.checks), report.failures
    odd = replace(measured, flops=(hfcheck.flop_run(hfcheck.instantiate(c), 1, 13),))
    for m in (measured, odd):
        checks = hfcheck.check_flops(c, m)
        assert checks and all(ch.ok for ch in checks), [ch for ch in checks if not ch.ok]
    assert any(ch.component == "encoder.attn.global_norm" for ch in report.checks)


def test_bigbird_pegasus_attends_global_sliding_and_random_blocks_past_its_shortest_sparse_sequence():
    """BigBirdPegasusForConditionalGeneration at BigBirdPegasusConfig's defaults by hand: the shared table (96,103 ×
    1,024, tied to lm_head), a learned position table of 4,096 rows a stack; 16 encoder layers of query, key, value and
    output (1,024 × 1,024, no biases: use_bias false), fc1 and fc2 (1,024 ↔ 4,096, biases) and two LayerNorms; 16
    decoder layers of self- and cross-attention (eight bias-free projections), fc1, fc2 and three LayerNorms; each
    stack's layernorm_embedding after its last layer. FLOPs: up to (5 + 2 × 3) × 64 = 704 source tokens every query meets
    every key; over S = 1,000 the source is padded to L = 1,024 (16 blocks of 64) and in each of the 16 heads of 64 the
    first and last blocks' queries meet all L keys, the second and second-last's (4 + 3) blocks, and the 12 middle
    blocks' (5 + 3): QKᵀ 2 FLOPs a multiply-add, per token of the 1,000."""

    d, ff, vocab, layers, b = 1024, 4096, 96103, 16, 64
    encoder_layer = 4 * d * d + 2 * d * ff + ff + d + 2 * 2 * d
    decoder_layer = 8 * d * d + 2 * d * ff + ff + d + 3 * 2 * d
    total = vocab * d + 2 * 4096 * d + layers * (encoder_layer + decoder_layer) + 2 * 2 * d
    spec = hf.load(DEFAULTS / "configs" / "bigbird_pegasus.json")[1]
    assert tally(spec).params == total == 576_891_904
    pairs = b * (2 * 1024 + 2 * 7 * b + 12 * 8 * b)
    rows = {r.name: r for r in tally(spec, seq_len=1000).rows}
    assert rows["encoder.attn.scores"].flops == Fraction(2 * layers * 16 * 64 * pairs, 1000)
    assert rows["encoder.ffn.up.weight"].flops == Fraction(2 * layers * d * ff * 1024, 1000)
    short = {r.name: r for r in tally(spec, seq_len=700).rows}
    assert short["encoder.attn.scores"].flops == 2 * layers * 16 * 64 * 700
    assert short["encoder.ffn.up.weight"].flops == 2 * layers * d * ff


@pytest.mark.torch
def test_bigbird_pegasus_with_blocks_of_4_equals_transformers(tmp_path):
    """BigBirdPegasusForConditionalGeneration small (2 layers a stack of width 64, 4 heads of 16, blocks of 4, one random
    block: full attention up to 28 tokens), built by transformers: every parameter, and every component's FLOPs under
    FlopCounterMode at 8 tokens (full) and at 32, 29 and 33 (block-sparse, the last two padded to 32 and 36)."""
    from dataclasses import replace

    from ffncalc.analysis import hfcheck

    data = json.loads((DEFAULTS / "configs" / "bigbird_pegasus.json").read_text())
    data.update(d_model=64, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128)
    data.update(encoder_layers=2, decoder_layers=2, vocab_size=100, block_size=4, num_random_blocks=1, max_position_embeddings=128)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    c = hf.read_config(path)
    measured = hfcheck.measure(c, flops=True)
    assert [r.seq_len for r in measured.flops] == [8, 32]
    report = hfcheck.check(c, model="bigbird_pegasus", measured=measured)
    assert report.ok and not any(ch.component.startswith("(unmatched)") for ch in report.checks), report.failures
    runs = [measured] + [replace(measured, flops=(hfcheck.flop_run(hfcheck.instantiate(c), 1, n),)) for n in (29, 33)]
    for m in runs:
        checks = hfcheck.check_flops(c, m)
        assert checks and all(ch.ok for ch in checks), [ch for ch in checks if not ch.ok]


def test_dia_reads_bytes_and_decodes_frames_of_nine_codebooks():
    """DiaForConditionalGeneration at DiaConfig's defaults (Dia-1.6B's layout) by hand: the encoder's byte table (256 ×
    1,024), 12 layers of q, k, v (1,024 → 16 × 128) and o back, a SiLU-gated MLP (gate_up_proj 1,024 → 2 × 4,096,
    down_proj back) and two RMSNorms, a final RMSNorm; the decoder's table of 9 channels × 1,028 codes (× 2,048), 18
    layers of q and o (2,048 ↔ 16 × 128), k and v (2,048 → 4 × 128), a cross-attention (q 2,048 → 16 × 128, k and v from
    the encoder's 1,024 → 16 × 128, o back), the MLP (2,048 → 2 × 8,192, back) and three RMSNorms, a final RMSNorm;
    logits_dense (2,048 → 9 × 1,028, untied). No biases. Published: "1.6B". The cross-attention cache of a 512-byte
    text in bf16: 18 layers × K and V × 16 × 128 × 512 × 2 bytes."""
    from ffncalc import api

    d, e, ff, eff, table = 2048, 1024, 8192, 4096, 9 * 1028
    encoder = 256 * e + 12 * (4 * e * 2048 + 3 * e * eff + 2 * e) + e
    decoder_layer = 2 * d * 2048 + 2 * d * 512 + (d * 2048 + 2 * e * 2048 + 2048 * d) + 3 * d * ff + 3 * d
    total = encoder + 2 * table * d + 18 * decoder_layer + d
    path = str(DEFAULTS / "configs" / "dia.json")
    assert api.count(path).params == total == 1_611_160_576
    f = api.infer(path, prompt=1, generate=16, source_len=512).to_dict()["figures"]
    assert f["cross_kv_bytes_per_sequence"]["value"] == 18 * 2 * 16 * 128 * 512 * 2


def test_prophetnet_runs_two_predicting_streams_beside_the_main_one():
    """ProphetNetForConditionalGeneration at ProphetNetConfig's defaults by hand: word_embeddings (30,522 × 1,024) shared
    by both stacks and tied to lm_head; each stack's position table (512 rows) and embeddings LayerNorm; 12 encoder
    layers of query, key, value and out_proj (1,024 × 1,024 and a bias each), the FFN (1,024 ↔ 4,096, biases) and two
    LayerNorms; 12 decoder layers the same, relative_pos_embeddings (1,024 → 32 buckets × 16 heads, a bias), a
    cross-attention (four more) and its LayerNorm; ngram_embeddings (2 × 1,024). FLOPs per token of T = 8 decoder
    tokens: every decoder layer's projections and FFN run over the main stream and both predicting streams (3 rows a
    token); its self-attention meets T keys from each main query and 2T from each predicting one ((1 + 2 × 2)·T² pairs
    a head); the head reads the two predicting streams (2 rows a token); 2 FLOPs a multiply-add."""
    from ffncalc import api

    d, ff, vocab, layers = 1024, 4096, 30522, 12
    attention, mlp = 4 * (d * d + d), 2 * d * ff + ff + d
    encoder = 512 * d + 2 * d + layers * (attention + mlp + 4 * d)
    decoder = 512 * d + 2 * d + 2 * d + layers * (2 * attention + d * 512 + 512 + mlp + 6 * d)
    path = str(DEFAULTS / "configs" / "prophetnet.json")
    assert api.count(path).params == vocab * d + encoder + decoder == 391_321_600
    rows = {r.name: r for r in tally(hf.load(path)[1], seq_len=8).rows}
    assert rows["attn.q.weight"].flops == 2 * layers * d * d * 3
    assert rows["ffn.up.weight"].flops == 2 * layers * d * ff * 3
    assert rows["attn.scores"].flops == 2 * layers * d * 5 * 8
    assert rows["encoder.cross.scores"].flops == 2 * layers * d * 8 * 3  # each of the 3 rows meets the 8 source keys
    assert rows["encoder.cross.k.weight"].flops == 2 * layers * d * d  # the source's 8 rows, per token
    head = sum(r.flops for r in rows.values() if r.component == "lm_head")
    assert head == 2 * vocab * d * 2


def test_encoder_decoder_composes_a_bert_encoder_and_a_bert_decoder():
    """EncoderDecoderModel at EncoderDecoderConfig's defaults (bert2bert at BertConfig's) by hand: the encoder, BertModel:
    word, position (512) and token-type (2) tables of 768 and their LayerNorm, 12 layers of query, key, value and
    output dense (768 × 768 and a bias each), intermediate and output dense (768 ↔ 3,072, biases) and two LayerNorms,
    the pooler (768 × 768 and a bias); the decoder, BertLMHeadModel: its own tables and LayerNorm, 12 layers the same
    with a crossattention (four more projections and a LayerNorm), the masked-LM head's transform (768 × 768, a bias,
    a LayerNorm) and its bias of 30,522, the decoder tied to its own table. FLOPs per token at a source of 64 tokens and
    T = 16: the pooler's dense once a sequence, 2 × 768 × 768 / 16."""
    d, ff, vocab = 768, 3072, 30522
    embeddings = (vocab + 512 + 2) * d + 2 * d
    layer = 4 * (d * d + d) + 2 * d * ff + ff + d + 4 * d
    cross = 4 * (d * d + d) + 2 * d
    encoder = embeddings + 12 * layer + d * d + d
    decoder = embeddings + 12 * (layer + cross) + d * d + d + 2 * d + vocab
    spec = hf.load(DEFAULTS / "configs" / "encoder-decoder.json")[1]
    assert tally(spec).params == encoder + decoder == 247_363_386
    rows = {r.name: r for r in tally(spec, seq_len=16).rows}
    assert rows["encoder.pooler.dense.weight"].flops == Fraction(2 * d * d, 16)


@pytest.mark.parametrize(
    "change, says", [({"tie_encoder_decoder": True}, "tie_encoder_decoder"), ({"encoder": {"model_type": "gpt2"}}, "encoder")]
)
def test_encoder_decoder_wrappers_not_read_are_refused_in_one_line(cli, tmp_path, change, says):
    data = json.loads((DEFAULTS / "configs" / "encoder-decoder.json").read_text())
    data.update(change)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    code, out, err = cli("count", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1 and says in err, err


@pytest.mark.parametrize("model_type", ["seamless_m4t", "seamless_m4t_v2"])
def test_seamless_m4t_text_to_text_holds_nllb_stacks(model_type):
    """SeamlessM4TForTextToText and SeamlessM4Tv2ForTextToText (what the seq2seq mapping builds for these types) at
    their configurations' defaults by hand: shared (256,102 × 1,024) for both stacks and the tied lm_head; 24 encoder
    layers of q, k, v, out_proj (1,024 × 1,024 and a bias each), fc1 and fc2 (1,024 ↔ 8,192, biases) and two LayerNorms,
    24 decoder layers the same with a cross-attention (four more) and its LayerNorm, a final LayerNorm a stack; the
    sinusoidal tables (1,026 and 4,098 rows) buffers. v1 and v2 differ only in those tables."""
    d, ff, vocab, layers = 1024, 8192, 256102, 24
    attention, mlp = 4 * (d * d + d), 2 * d * ff + ff + d
    total = vocab * d + layers * (attention + mlp + 4 * d) + layers * (2 * attention + mlp + 6 * d) + 2 * 2 * d
    assert tally(hf.load(DEFAULTS / "configs" / f"{model_type}.json")[1]).params == total == 1_370_531_840


def test_canary_reads_log_mel_frames_through_a_conformer():
    """CanaryForConditionalGeneration at CanaryConfig's defaults by hand. The encoder (ParakeetEncoder): the subsampling's
    Conv2d (256 filters of 3 × 3 over one channel, biases), two depthwise Conv2d (256 × 3 × 3) each with a pointwise one
    (256 × 256), biases, and the linear from 256 channels × 128 / 8 bins to 1,024; 32 Conformer blocks of two FFNs
    (1,024 ↔ 4,096, biases), q, k, v, o (1,024 × 1,024, biases), bias_u and bias_v (1,024 each), relative_k_proj (1,024
    × 1,024, no bias), pointwise_conv1 (1,024 → 2,048), the depthwise conv (1,024 × 9), BatchNorm (weight and bias),
    pointwise_conv2 (1,024 × 1,024), all biased, and five LayerNorms. The decoder: embed_tokens (16,384 × 1,024, tied
    to proj_out, whose bias is its own), embedding_layernorm, 8 layers of self- and cross-attention (eight 1,024 × 1,024
    projections with biases), the MLP (1,024 ↔ 4,096, biases) and three LayerNorms, a final LayerNorm. FLOPs per source
    position: each block's position scores meet 2S − 1 relative positions, 2 × 8 heads × 128 × (2S − 1) at S = 100."""
    d, ff, c = 1024, 4096, 256
    sub = (c * 9 + c) + 2 * (c * 9 + c + c * c + c) + c * 16 * d + d
    ffn = 2 * d * ff + ff + d
    block = 2 * ffn + 4 * (d * d + d) + 2 * d + d * d + (2 * d * d + 2 * d) + (9 * d + d) + 2 * d + (d * d + d) + 5 * 2 * d
    layer = 8 * (d * d + d) + ffn + 3 * 2 * d
    total = sub + 32 * block + 16384 * d + 2 * d + 8 * layer + 2 * d + 16384
    spec = hf.load(DEFAULTS / "configs" / "canary.json")[1]
    assert tally(spec).params == total == 962_155_520
    rows = {r.name: r for r in tally(spec, seq_len=100).rows}
    assert rows["encoder.attn.rel_scores"].flops == 2 * 32 * 8 * 128 * 199
    assert rows["encoder.sub.conv0.weight"].flops == 2 * c * 9 * 64 * 4  # 4 time rows a position, 64 bins


def test_cohere_asr_bridges_its_wider_encoder_to_the_decoder():
    """CohereAsrForConditionalGeneration at CohereAsrConfig's defaults: a 48-block Conformer of width 1,280 (FFNs of
    5,120) and the decoder of width 1,024 with a learned position table (1,024 rows) and an untied proj_out; the
    decoder's proj (1,280 → 1,024 and a bias) over the encoder's output once a source position, every cross-attention's
    k and v then 1,024 → 1,024. The cross-attention cache of 100 source positions in bf16: 8 layers × K and V × 1,024 ×
    100 × 2 bytes."""
    from ffncalc import api

    path = str(DEFAULTS / "configs" / "cohere_asr.json")
    assert api.count(path).params == 2_065_647_872
    rows = {r.name: r for r in tally(hf.load(path)[1]).rows}
    assert rows["encoder.bridge.weight"].params == 1280 * 1024
    assert rows["encoder.cross.k.weight"].params == 8 * 1024 * 1024
    f = api.infer(path, prompt=1, generate=16, source_len=100).to_dict()["figures"]
    assert f["cross_kv_bytes_per_sequence"]["value"] == 8 * 2 * 1024 * 100 * 2


def test_speech_encoder_decoder_reads_the_waveform_through_wav2vec2_features():
    """SpeechEncoderDecoderModel at SpeechEncoderDecoderConfig's defaults (a wav2vec2 encoder, a bert decoder) by hand:
    the feature encoder's seven bias-free Conv1d (512 × 1 × 10, then 512 × 512 × 3 four times and 512 × 512 × 2 twice),
    the first one's GroupNorm (weight and bias), the feature projection (a LayerNorm of 512, 512 → 768 and a bias),
    masked_spec_embed (768), the positional Conv1d (768 × 48 × 128 weight-normed: 128 magnitudes, and a bias), the
    encoder's LayerNorm, 12 post-norm layers (q, k, v, out_proj 768 × 768 and biases, 768 ↔ 3,072 with biases, two
    LayerNorms); the bert decoder as EncoderDecoderModel's. S = 8 positions come from the shortest waveform giving them,
    320 × 8 + 80 = 2,640 samples: the first conv (stride 5) makes (2,640 − 10) // 5 + 1 = 527 outputs of 512 × 10
    multiply-adds, 2 FLOPs each; the positional conv (padded by 64 either side) 8 + 1."""
    d, ff = 768, 3072
    feat = 512 * 10 + 2 * 512 + 4 * 512 * 512 * 3 + 2 * 512 * 512 * 2 + 2 * 512 + 512 * d + d
    pos = d * 48 * 128 + 128 + d
    layer = 4 * (d * d + d) + 2 * d * ff + ff + d + 4 * d
    encoder = feat + d + pos + 2 * d + 12 * layer
    decoder = (30522 + 512 + 2) * d + 2 * d + 12 * (layer + 4 * (d * d + d) + 2 * d) + d * d + d + 2 * d + 30522
    spec = hf.load(DEFAULTS / "configs" / "speech-encoder-decoder.json")[1]
    assert tally(spec).params == encoder + decoder == 232_252_858
    rows = {r.name: r for r in tally(spec, seq_len=8).rows}
    assert rows["encoder.feat.conv0.weight"].flops == Fraction(2 * 512 * 10 * 527, 8)
    assert rows["encoder.pos_conv.weight_v"].flops == Fraction(2 * d * 48 * 128 * 9, 8)  # S + 1 outputs


def test_speecht5_speech_to_text_adds_relative_position_keys_in_its_encoder():
    """SpeechT5ForSpeechToText at SpeechT5Config's defaults by hand: the speech prenet (wav2vec2's seven bias-free
    convolutions and first GroupNorm, its projection 512 → 768, masked_spec_embed, the weight-normed positional conv
    768 × 48 × 128 with 128 magnitudes and a bias), the encoder's LayerNorm, pe_k (2 × 160 rows of 64), 12 post-norm
    encoder layers (q, k, v, out_proj 768 × 768 and biases, 768 ↔ 3,072 with biases, two LayerNorms); the text prenet's
    table (81 × 768, tied to the postnet's lm_head), 6 decoder layers (self- and cross-attention, eight projections with
    biases, the FFN, three LayerNorms). FLOPs: every encoder query meets each key's relative row as it meets the key:
    at S = 64 the relative product equals QKᵀ, 2 × 12 layers × 12 heads × 64 × 64 per source position."""
    d, ff = 768, 3072
    feat = 512 * 10 + 2 * 512 + 4 * 512 * 512 * 3 + 2 * 512 * 512 * 2 + 2 * 512 + 512 * d + d
    pos = d * 48 * 128 + 128 + d
    layer = 4 * (d * d + d) + 2 * d * ff + ff + d + 4 * d
    encoder = feat + d + pos + 2 * d + 320 * 64 + 12 * layer
    decoder = 81 * d + 6 * (layer + 4 * (d * d + d) + 2 * d)
    spec = hf.load(DEFAULTS / "configs" / "speecht5.json")[1]
    assert tally(spec).params == encoder + decoder == 151_165_056
    rows = {r.name: r for r in tally(spec, seq_len=64).rows}
    assert rows["encoder.attn.rel_scores"].flops == rows["encoder.attn.scores"].flops == 2 * 12 * 12 * 64 * 64


@pytest.mark.torch
def test_a_roberta2roberta_encoder_decoder_equals_transformers(tmp_path):
    """EncoderDecoderModel of a RobertaModel encoder and a RobertaForCausalLM decoder (small: 2 layers of width 64, 4
    heads, a vocabulary of 100, 40 positions from pad_token_id + 1), built by transformers: every parameter (the
    encoder's pooler, the decoder's lm_head tied to its own table) and every component's FLOPs under FlopCounterMode at
    two lengths."""
    from transformers import AutoConfig

    from ffncalc.analysis import hfcheck

    small = {"hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128, "num_hidden_layers": 2}
    small.update(vocab_size=100, max_position_embeddings=40)
    encoder = {**AutoConfig.for_model("roberta").to_dict(), **small}
    decoder = {**AutoConfig.for_model("roberta", is_decoder=True, add_cross_attention=True).to_dict(), **small}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "encoder-decoder", "encoder": encoder, "decoder": decoder}, default=str))
    c = hf.read_config(path)
    measured = hfcheck.measure(c, flops=True)
    report = hfcheck.check(c, model="encoder-decoder", measured=measured)
    assert report.ok and not any(ch.component.startswith("(unmatched)") for ch in report.checks), report.failures
    checks = hfcheck.check_flops(c, measured)
    assert checks and all(ch.ok for ch in checks), [ch for ch in checks if not ch.ok]
    assert any(ch.component == "encoder.pooler.dense" for ch in checks)


def test_led_training_keeps_the_cross_attention_keys_of_the_source_not_its_padding():
    """LED at LEDConfig's defaults, T = 128, micro-batch 1: sources of 1,000 and 1,024 tokens both run the encoder over
    1,024 padded positions (two windows of 512), whose activations and output are the same; every one of the 12 decoder
    layers' cross-attention keeps K and V of the source's own rows only (16 heads of 64, 16-bit): the two differ by 24
    rows × 12 layers × 2 × 1,024 × 2 bytes."""
    from ffncalc import api

    path = str(DEFAULTS / "configs" / "led.json")
    short, whole = (
        api.train(path, tokens="1M", seq_len=128, source_len=s).to_dict()["figures"]["activation_bytes_per_device"]["value"]
        for s in (1000, 1024)
    )
    assert whole - short == 24 * 12 * 2 * 1024 * 2


def nllb_moe_total(vocab: int, d: int, layers: int, d_ff: int, experts: int, step: int) -> int:
    """NllbMoeForConditionalGeneration by hand: the shared table (both stacks' embed_tokens and the tied lm_head; the
    sinusoidal positions a buffer); per encoder layer q, k, v, out_proj (d × d and a bias each), two LayerNorms
    (weight and bias) and an FFN: fc1 d -> d_ff and fc2 back with biases, or in every step-th layer ((i + 1) % step
    == 0) a router (d × experts, no bias) and ``experts`` such FFNs; per decoder layer the same, a cross-attention
    (four more projections) and its LayerNorm; a final LayerNorm a stack."""
    attention = 4 * (d * d + d)
    ffn = d * d_ff + d_ff + d_ff * d + d
    sparse = layers // step
    ffns = (layers - sparse) * ffn + sparse * (d * experts + experts * ffn)
    encoder = layers * (attention + 2 * 2 * d) + ffns + 2 * d
    decoder = layers * (2 * attention + 3 * 2 * d) + ffns + 2 * d
    return vocab * d + encoder + decoder


def test_nllb_moe_54b_counts_its_published_size():
    """facebook/nllb-moe-54b (NLLB Team 2022, "No Language Left Behind", §6.2: "NLLB-200, a 54.5B parameter
    Sparsely Gated Mixture of Experts model"): 24 + 24 layers of 2,048 wide, FFN 8,192, 128 experts in every fourth
    layer, 256,206 tokens. Active per token: two of the 128 experts in each of the 12 sparse layers."""
    from ffncalc import api

    path = str(Path(__file__).resolve().parents[1] / "hf_configs" / "nllb-moe-54b.json")
    total = nllb_moe_total(256206, 2048, 24, 8192, 128, 4)
    counted = api.count(path)
    assert counted.params == total == 54_500_569_088
    assert counted.active_params == total - 12 * 126 * (2 * 2048 * 8192 + 8192 + 2048)


def test_nllb_moe_experts_at_defaults_run_as_transformers_5_23_computes_them():
    """At NllbMoeConfig's defaults (1,024 wide, 12 + 12 layers, 128 experts in layers 3, 7 and 11 of each stack) the
    parameters are transformers' module by module (test_defaults.py) and by hand; one forward's FLOPs equal
    FlopCounterMode's in every component but the experts. NllbMoeExperts.forward one-hot encodes the router's one-hot
    top-1 mask again, so expert_0 runs over the n_experts − 1 (token, expert) pairs the mask leaves out and expert_1
    over each token's first choice: 128 expert rows a token where the design (top-2) computes 2, 64 times as many."""
    from ffncalc.analysis import hfcheck

    c = hf.read_config(DEFAULTS / "configs" / "nllb-moe.json")
    measured = hfcheck.Measured.from_record(json.loads((DEFAULTS / "truth" / "nllb-moe.json").read_text()))
    assert sum(n for _, n in measured.params) == nllb_moe_total(128112, 1024, 12, 4096, 128, 4) == 6_880_712_704
    checks = hfcheck.check_flops(c, measured)
    experts = [ch for ch in checks if ch.component.endswith("ffn.experts")]
    assert experts and all(ch.transformers == 64 * ch.ours for ch in experts)
    assert all(ch.ok for ch in checks if ch not in experts)
    assert any(ch.component == "encoder.cross.q" for ch in checks)


@pytest.mark.torch
def test_nllb_moe_flops_equal_flop_counter_mode_where_transformers_routes_top_2(tmp_path):
    """With num_experts 2 transformers' NllbMoeExperts runs each token through both experts (expert_0 over the pair
    its top-1 mask leaves out, expert_1 over its first choice): the top-2 routing of the design. Built live at the
    class's defaults otherwise, one forward at two lengths under FlopCounterMode equals the count in every component
    and run of layers, the experts' among them."""
    from ffncalc.analysis import hfcheck

    data = json.loads((DEFAULTS / "configs" / "nllb-moe.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**data, "num_experts": 2}))
    c = hf.read_config(path)
    measured = hfcheck.measure(c, flops=True)
    assert hfcheck.check(c, measured=measured).ok
    checks = hfcheck.check_flops(c, measured)
    assert [r.seq_len for r in measured.flops] == [8, 32]
    assert checks and all(ch.ok for ch in checks), [ch for ch in checks if not ch.ok]
    assert {"ffn.experts", "encoder.ffn.experts"} <= {ch.component for ch in checks}


def t5gemma2_total(vocab: int, d: int, layers: int, heads: int, kv: int, hd: int, d_ff: int, vision: int) -> int:
    """T5Gemma2ForConditionalGeneration by hand, its text side: one table (vocab × d: the encoder's embed_tokens, the
    decoder's and lm_head.out_proj tied to it) and its eoi_embedding (d); per layer of each stack q and o (d ↔ heads·hd),
    k and v (d → kv·hd), q_norm and k_norm (hd each), the GeGLU MLP (gate and up d → d_ff, down back) and four RMSNorms
    (d each), the decoder's merged attention holding no weights beyond these; a final norm a stack; ``vision``: the
    SigLIP tower and projector."""
    layer = 2 * d * heads * hd + 2 * d * kv * hd + 2 * hd + 3 * d * d_ff + 4 * d
    return vocab * d + d + 2 * layers * layer + 2 * d + vision


def siglip_total(d: int, layers: int, d_ff: int, patch: int, image: int, text: int, head: bool) -> int:
    """SiglipVisionModel by hand: the patch convolution (3·patch² → d with a bias), a table of (image / patch)² rows,
    per layer q, k, v, out_proj (d × d with biases), fc1 and fc2 with biases and two LayerNorms, post_layernorm; where
    vision_use_head the pooling head (a probe of d, nn.MultiheadAttention's in_proj (3d × d and 3d) and out_proj, a
    LayerNorm, an MLP of d_ff); then Gemma 3's projector: mm_soft_emb_norm (d) and mm_input_projection_weight (d ×
    text)."""
    tower = 3 * patch * patch * d + d + (image // patch) ** 2 * d
    tower += layers * (4 * (d * d + d) + 2 * d * d_ff + d_ff + d + 4 * d) + 2 * d
    if head:
        tower += d + 3 * d * d + 3 * d + d * d + d + 2 * d + 2 * d * d_ff + d_ff + d
    return tower + d + d * text


def test_t5gemma2_270m_counts_its_stacks_and_its_vision_tower():
    """google/t5gemma-2-270m-270m (Zhang et al. 2025, "T5Gemma 2"): Gemma 3 270M's layers (18 of 640 wide, 4 heads and 1
    key-value head of 256, GeGLU of 2,048, 262,144 tokens) as its encoder and its decoder, the encoder reading SigLIP
    So400m's 27 layers (1,152 wide, MLP of 4,304, patches of 14 over 896 pixels, no pooling head) through Gemma 3's
    projector. Its cross-attention cache at a source of 512 tokens, bf16: 18 layers × K and V × 1·256 × 512 × 2 bytes."""
    from ffncalc import api

    path = str(Path(__file__).resolve().parents[1] / "hf_configs" / "t5gemma-2-270m-270m.json")
    vision = siglip_total(1152, 27, 4304, 14, 896, 640, head=False)
    total = t5gemma2_total(262144, 640, 18, 4, 1, 256, 2048, vision)
    assert api.count(path).params == total == 786_029_296
    f = api.infer(path, prompt=1, generate=16, source_len=512).to_dict()["figures"]
    assert f["cross_kv_bytes_per_sequence"]["value"] == 18 * 2 * 256 * 512 * 2 == 9_437_184


def test_t5gemma2_merged_attention_meets_its_own_keys_and_the_sources_in_one_softmax():
    """T5Gemma2MergedAttention at T5Gemma2Config's defaults (26 decoder layers of 8 heads and 4 key-value heads of
    256, 2,304 wide), by hand at T = 64 decoder tokens over S = 256 source tokens: each layer's k_proj and v_proj
    project the S encoder rows too (2 × 2,304 × 4·256 multiply-adds a source row each, S / T a decoder token), every
    query meets the S source keys in QKᵀ and AV (2 × 8 × 256 × S multiply-adds), with no q, o or norm of a
    cross-attention of its own; the parameters are the class's (whose vision tower at SiglipVisionConfig's defaults
    has its pooling head)."""
    from dataclasses import replace

    spec = hf.load(DEFAULTS / "configs" / "t5gemma2.json")[1]
    part = spec.part("encoder")
    longer = replace(spec, parts=tuple(replace(p, source_length=256) if p is part else p for p in spec.parts))
    rows = tally(longer, seq_len=64).rows

    def total(name: str, field: str) -> Fraction:  # over the runs of sliding and global layers
        return sum(getattr(r, field) for r in rows if r.name == name)

    for name in ("encoder.cross.k.weight", "encoder.cross.v.weight"):
        assert total(name, "flops") == 2 * 26 * 2304 * 4 * 256 * Fraction(256, 64) and total(name, "params") == 0
    for name in ("encoder.cross.scores", "encoder.cross.values"):
        assert total(name, "flops") == 2 * 26 * 8 * 256 * 256
    assert not any(r.name.startswith(("encoder.cross.q", "encoder.cross.o", "encoder.cross.norm")) for r in rows)
    vision = siglip_total(768, 12, 3072, 16, 224, 2304, head=True)
    total = t5gemma2_total(262208, 2304, 26, 8, 4, 256, 9216, vision)
    assert tally(spec).params == total == 4_747_846_400


def test_t5gemma2_images_are_refused_in_one_line(cli):
    """The projector's image tokens replace image tokens of the encoder's source (T5Gemma2Encoder.forward), which
    --images does not place."""
    path = str(Path(__file__).resolve().parents[1] / "hf_configs" / "t5gemma-2-270m-270m.json")
    code, out, err = cli("infer", path, "--prompt", "4", "--generate", "4", "--images", "1")
    assert code == 2 and out == "" and err.count("\n") == 1 and "encoder's source" in err, err


def mimi_total(h: int, f: int, ratios: list[int], layers: int, d_ff: int, vq: int) -> int:
    """MimiModel by hand (kernel 7, last kernel 3, one residual block of kernel 3 and 1 at half the width, one
    channel, stride 2 between its 25 Hz and 12.5 Hz frames, a depthwise upsample): the SEANet encoder (a convolution
    1 → f; for each ratio reversed at width w a residual block and a convolution w → 2w of kernel 2·ratio; one to h),
    two transformers of ``layers`` layers (q, k, v, o h × h, fc1 and fc2 of d_ff, no biases; two LayerNorms with biases
    and two layer scales), the downsample (h × h × 4), the upsample (h × 1 × 4), the SEANet decoder (mirrored with
    transposed convolutions) and the quantizers' projections (two each way, h × vq); every convolution of the SEANets
    with a bias."""

    def residual(w: int) -> int:
        return w * (w // 2) * 3 + w // 2 + (w // 2) * w + w

    encoder, w = 7 * f + f, f
    for r in reversed(ratios):
        encoder += residual(w) + w * 2 * w * 2 * r + 2 * w
        w *= 2
    encoder += w * h * 3 + h
    decoder = h * w * 7 + w
    for r in ratios:
        decoder += w * (w // 2) * 2 * r + w // 2 + residual(w // 2)
        w //= 2
    decoder += f * 3 + 1
    transformer = layers * (4 * h * h + 2 * h * d_ff + 4 * h + 2 * h)
    return encoder + decoder + 2 * transformer + h * h * 4 + h * 4 + 4 * h * vq


def test_kyutai_speech_to_text_counts_its_decoder_and_the_mimi_codec_beside_it():
    """KyutaiSpeechToTextForConditionalGeneration at KyutaiSpeechToTextConfig's defaults (kyutai/stt-2.6b-en's layout)
    by hand: one table of 4,001 text tokens, 32 codebooks × 2,049 codes and a padding row (69,570 × 2,048), 48 layers of
    q, k, v, o (2,048 × 32·64, no biases), fc1 (2,048 → 11,264: the gate's and the value's halves) and fc2 (5,632 →
    2,048), two RMSNorms; a final norm; lm_head (4,001 × 2,048, untied); the Mimi codec at MimiConfig's defaults beside
    it. The class equals it module by module (test_defaults.py); one forward over frames reads no codec weight, and its
    FLOPs equal FlopCounterMode's at two lengths."""
    from ffncalc.analysis import hfcheck

    d, layers, vocab = 2048, 48, 4001
    rows = vocab + 32 * 2049 + 1
    decoder = rows * d + layers * (4 * d * d + 3 * d * 5632 + 2 * d) + d + vocab * d
    codec = mimi_total(512, 64, [8, 6, 5, 4], 8, 2048, 256)
    path = DEFAULTS / "configs" / "kyutai_speech_to_text.json"
    spec = hf.load(path)[1]
    assert tally(spec).params == decoder + codec == 2_696_431_425
    assert sum(r.params for r in tally(spec).rows if r.component.startswith("codec.")) == codec == 79_308_609
    c = hf.read_config(path)
    measured = hfcheck.Measured.from_record(json.loads((DEFAULTS / "truth" / "kyutai_speech_to_text.json").read_text()))
    checks = hfcheck.check_flops(c, measured)
    assert [r.seq_len for r in measured.flops] == list(hfcheck.flop_lengths(c))
    assert checks and all(ch.ok for ch in checks) and not any(ch.component.startswith("codec") for ch in checks)


@pytest.mark.parametrize(
    "command",
    [
        ["train", "--tokens", "1M", "--hardware", "h100-sxm"],
        ["infer", "--prompt", "4", "--generate", "4", "--hardware", "h100-sxm"],
        ["fit", "--hardware", "l4"],
    ],
)
def test_kyutai_speech_to_text_trains_serves_and_fits_at_its_defaults(cli, command):
    """A decoder over frames: no encoder, so no source (--source-len is refused in one line); its codec's weights are
    held with the rest."""
    path = str(DEFAULTS / "configs" / "kyutai_speech_to_text.json")
    code, out, err = cli(command[0], path, *command[1:], "--format", "json")
    assert code == 0 and err == "", err
    code, out, err = cli(command[0], path, *command[1:], "--source-len", "16")
    assert code == 2 and out == "" and err.count("\n") == 1 and "no encoder" in err, err


def test_t5gemma2_training_keeps_each_decoder_layers_source_keys_and_values(tmp_path):
    """Per source position, each decoder layer's merged attention keeps for backward the source's keys after k_norm
    and its values (K and V of the 4 key-value heads of 256, for QKᵀ's and AV's gradients), k_norm's input (the
    projected keys, kv·hd) and its fp32 inverse RMS a key head (2 16-bit elements each): 3 × 4·256 + 2·4 elements of 2
    bytes. One decoder layer more adds that for each of the 512 more source positions when the source doubles."""
    from ffncalc import api

    data = json.loads((DEFAULTS / "configs" / "t5gemma2.json").read_text())

    def growth(layers: int) -> int:
        decoder = {**data["decoder"], "num_hidden_layers": layers, "layer_types": ["sliding_attention"] * layers}
        path = tmp_path / f"{layers}.json"
        path.write_text(json.dumps({**data, "decoder": decoder}))
        short, long = (
            api.train(str(path), tokens="1M", seq_len=128, source_len=s).to_dict()["figures"]["activation_bytes_per_device"]["value"]
            for s in (512, 1024)
        )
        return long - short

    kv, hd = 4, 256
    assert growth(3) - growth(2) == 512 * 2 * (3 * kv * hd + 2 * kv)


def test_moonshine_streaming_reads_frames_and_windowed_layers_by_hand():
    """MoonshineStreamingForConditionalGeneration at its repaired defaults, by hand (modeling_moonshine_streaming.py):
    S = 23 source positions come from the shortest waveform giving them, 4·23 − 3 = 89 frames of 80 samples, each a
    matmul of 80 × 320 (the embedder's linear); conv1 (causal, kernel 5, stride 2) makes 2·23 − 1 = 45 outputs of 640
    × 320 × 5 multiply-adds, conv2 23 of 320 × 640 × 5. Each encoder layer attends within its sliding_windows [left,
    right]: keys 0 ≤ i − j < left and 0 < j − i < right. In the useful view, [16, 4] meets min(i, 15) keys before, the
    query, and min(22 − i, 3) after: Σ min(i, 15) = 0 + 1 + … + 15 + 7·15 = 225, Σ min(22 − i, 3) = 0 + 1 + 2 + 20·3 =
    63, so 23 + 225 + 63 = 311 pairs; [16, 0] 23 + 225 = 248. Layers 0, 1, 4, 5 are [16, 4], 2 and 3 [16, 0]; QKᵀ and
    AV each 8 heads of 40, 2 FLOPs a multiply-add. The decoder's own attention is the causal triangle either way."""
    spec = hf.load(DEFAULTS / "configs" / "moonshine_streaming.json")[1]
    s = 23
    rows = {r.name: r for r in tally(spec, seq_len=s).rows}
    assert rows["encoder.frame_proj.weight"].flops == Fraction(2 * 80 * 320 * 89, s)
    assert rows["encoder.conv1.weight"].flops == Fraction(2 * 640 * 320 * 5 * 45, s)
    assert rows["encoder.conv2.weight"].flops == 2 * 320 * 640 * 5
    assert 0 + sum(range(16)) + 7 * 15 == 225 and sum(range(3)) + 20 * 3 == 63
    pairs = 4 * (23 + 225 + 63) + 2 * (23 + 225)
    useful = sum(r.flops for r in tally(spec, convention="causal", seq_len=s).rows if r.name == "encoder.attn.scores")
    executed = sum(r.flops for r in tally(spec, seq_len=s).rows if r.name == "encoder.attn.scores")
    assert useful * s == 2 * 8 * 40 * pairs
    assert executed * s == 6 * 2 * 8 * 40 * s * s  # eager attention computes the square, masked


@pytest.mark.torch
def test_moonshine_streaming_windows_are_the_masks_transformers_builds():
    """Every [left, right] window over every length: the query-key pairs ffncalc counts equal those transformers'
    sliding_window_mask_function allows (the encoder's mask under an attention mask)."""
    from transformers.models.moonshine_streaming.modeling_moonshine_streaming import sliding_window_mask_function

    from ffncalc.model.terms import attended_pairs

    for left, right in [(16, 4), (16, 0), (16, 1), (3, 7), (2, 2)]:
        allowed = sliding_window_mask_function((left, right))
        for n in (1, 5, 23, 40):
            pairs = sum(bool(allowed(0, 0, q, k)) for q in range(n) for k in range(n))
            assert attended_pairs(n, left - 1, select="both", ahead=max(right - 1, 0)) == pairs, (left, right, n)


@pytest.mark.torch
def test_moonshine_streaming_flops_equal_flop_counter_mode_and_every_command_runs(cli):
    """Its repaired defaults: one forward under FlopCounterMode per component at two lengths (the encoder over the
    shortest waveform giving each, unmasked: every window's square), and train, infer and fit without a traceback."""
    from ffncalc.analysis import hfcheck

    config = DEFAULTS / "configs" / "moonshine_streaming.json"
    c = hf.read_config(config)
    measured = hfcheck.Measured.from_record(json.loads((DEFAULTS / "truth" / "moonshine_streaming.json").read_text()))
    assert [r.seq_len for r in measured.flops] == list(hfcheck.flop_lengths(c))
    checks = hfcheck.check_flops(c, measured)
    assert checks and all(ch.ok for ch in checks), [ch for ch in checks if not ch.ok]
    assert {"encoder.frame_proj", "encoder.conv1", "encoder.conv2", "encoder.cross.k"} <= {ch.component for ch in checks}
    for command in (
        ["train", str(config), "--tokens", "1M", "--hardware", "h100-sxm"],
        ["infer", str(config), "--prompt", "4", "--generate", "4", "--source-len", "100", "--hardware", "h100-sxm"],
        ["fit", str(config), "--hardware", "l4"],
    ):
        code, out, err = cli(*command, "--format", "json")
        assert code == 0 and err == "", err
    for convention in ("exact", "causal"):
        code, out, err = cli("verify", str(config), "--seq-len", "24", "--convention", convention)
        assert code == 0 and "all" in out and "agree" in out, out + err


@pytest.mark.torch
def test_moonshine_streaming_with_an_encoder_wider_than_its_decoder_equals_transformers(tmp_path):
    """Moonshine Streaming small's shape, smaller: an encoder 96 wide of 4 heads of 16 (q, k, v 96 → 64, o back) with
    three layers of their own windows beside a decoder 64 wide (4 heads of 16); the decoder's pos_emb at the encoder's width and proj,
    96 → 64 without a bias, which every cross-attention reads. Built by transformers on the meta device: every
    parameter, and every component's FLOPs under FlopCounterMode at two lengths."""
    from ffncalc.analysis import hfcheck

    data = json.loads((DEFAULTS / "configs" / "moonshine_streaming.json").read_text())
    data["encoder_config"].update(
        hidden_size=96, intermediate_size=192, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4,
        head_dim=16, sliding_windows=[[4, 2], [8, 0], [3, 3]],
    )  # fmt: skip
    # its forward views the queries as num_key_value_heads heads (MoonshineStreamingAttention): as many as the queries
    data.update(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4)
    data.update(head_dim=16, vocab_size=100, max_position_embeddings=64)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    c = hf.read_config(path)
    measured = hfcheck.measure(c, flops=True)
    report = hfcheck.check(c, model="moonshine_streaming", measured=measured)
    assert report.ok and not any(ch.component.startswith("(unmatched)") for ch in report.checks), report.failures
    checks = hfcheck.check_flops(c, measured)
    assert checks and all(ch.ok for ch in checks), [ch for ch in checks if not ch.ok]
    rows = {r.name: r for r in tally(hf.load(path)[1]).rows}
    assert rows["encoder.bridge.weight"].params == 96 * 64 and "encoder.bridge.bias" not in rows
    assert rows["encoder.pos_embed.weight"].params == 64 * 96
    assert sum(r.params for r in tally(hf.load(path)[1]).rows if r.name == "encoder.cross.k.weight") == 2 * 64 * 4 * 16


def test_moonshine_streaming_is_recorded_at_the_smallest_repair_of_its_defaults():
    """MoonshineStreamingConfig defines no num_key_value_heads, which the decoder's MoonshineStreamingAttention reads:
    transformers refuses the raw defaults (the reason kept), and builds them with one KV head per query head (8).
    MoonshineStreamingForConditionalGeneration then by hand (modeling_moonshine_streaming.py), d = 320, ff = 1,280:
    the embedder's asinh scale log_k (1), its linear from a frame of 16,000 · 5 / 1,000 = 80 samples to d (no bias),
    conv1 d → 2d and conv2 2d → d (kernel 5, biases); 6 encoder layers of q, k, v, o (d × 8·40, no biases), fc1 d → ff
    and fc2 back with biases, two unit-offset LayerNorms (a gamma each), a final one; the decoder's table (32,768 × d),
    6 layers of self- and cross-attention (eight d × d projections), fc1 d → 2·ff and fc2 ff → d with biases, three
    LayerNorms without biases, a final one, the table of 4,096 positions added to the encoder's output (pos_emb), and
    proj_out (32,768 × d, untied)."""
    from ffncalc.analysis import hfcheck

    record = json.loads((DEFAULTS / "truth" / "moonshine_streaming.json").read_text())
    assert "num_key_value_heads" in record["refused_unrepaired"] and record["repaired"] == {"num_key_value_heads": 8}
    assert "moonshine_streaming" in coverage.REFUSED_AT_DEFAULTS
    d, ff, vocab, frame = 320, 1280, 32768, 16000 * 5 // 1000
    embedder = 1 + frame * d + (2 * d * d * 5 + 2 * d) + (d * 2 * d * 5 + d)
    encoder_layer = 4 * d * 8 * 40 + (d * ff + ff) + (ff * d + d) + 2 * d
    decoder_layer = 8 * d * d + (d * 2 * ff + 2 * ff) + (ff * d + d) + 3 * d
    measured = hfcheck.Measured.from_record(record).params
    part = {
        "embedder": ("model.encoder.embedder.", embedder),
        "encoder layers": ("model.encoder.layers.", 6 * encoder_layer),
        "encoder norm": ("model.encoder.final_norm.", d),
        "decoder table": ("model.decoder.embed_tokens.", vocab * d),
        "decoder layers": ("model.decoder.layers.", 6 * decoder_layer),
        "decoder norm": ("model.decoder.norm.", d),
        "source positions": ("model.decoder.pos_emb.", 4096 * d),
        "head": ("proj_out.", vocab * d),
    }
    for name, (prefix, expected) in part.items():
        assert sum(n for key, n in measured if key.startswith(prefix)) == expected, name
    assert sum(n for _, n in measured) == sum(e for _, e in part.values()) == 44_054_721
