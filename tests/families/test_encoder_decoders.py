"""Encoder-decoders (BART and the models built as it is, T5 and mT5): both stacks counted whole, the cross-attention in every
decoder layer, each proven against transformers' class at its defaults (tests/families/test_defaults.py, and the
FLOPs below) and by hand; the plans that are not built for them yet refused in one line."""

import json
from fractions import Fraction
from pathlib import Path

import pytest

from ffncalc.analysis.count import tally
from ffncalc.sources import presets
from ffncalc.sources.hf import coverage

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
    "command", [["train", "--tokens", "1B"], ["infer", "--prompt", "8", "--generate", "8"], ["fit", "--hardware", "l4"]]
)
def test_plans_not_built_for_an_encoder_decoder_are_refused_in_one_line(cli, command):
    code, out, err = cli(command[0], "bart-large", *command[1:])
    assert code == 2 and out == "" and err.count("\n") == 1 and "an encoder-decoder" in err


@pytest.mark.torch
@pytest.mark.parametrize("name", ["bart-large", "flan-t5-xl", "whisper-large-v3"])
def test_presets_verify_against_their_reference_modules(cli, name):
    code, out, err = cli("verify", name, "--seq-len", "32")
    assert code == 0 and "all" in out and "agree" in out, out + err


READ = [t for t in coverage.ENCODER_DECODER_TYPES if t not in coverage.SEQ2SEQ_NOT_YET and t not in coverage.REFUSED_AT_DEFAULTS]


def test_the_encoder_decoders_read():
    assert set(READ) == {
        "bart",
        "mbart",
        "plbart",
        "marian",
        "pegasus",
        "blenderbot",
        "blenderbot-small",
        "m2m_100",
        "t5",
        "mt5",
        "whisper",
    }


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
    from ffncalc.sources import hf

    c = hf.read_config(DEFAULTS / "configs" / f"{model_type}.json")
    measured = hfcheck.Measured.from_record(json.loads((DEFAULTS / "truth" / f"{model_type}.json").read_text()))
    assert [r.seq_len for r in measured.flops] == list(hfcheck.flop_lengths(c))
    checks = hfcheck.check_flops(c, measured)
    assert checks and all(ch.ok for ch in checks), [ch for ch in checks if not ch.ok]
    assert any(ch.component == "encoder.cross.q" for ch in checks)
