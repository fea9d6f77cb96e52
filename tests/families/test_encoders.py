"""Encoders: bidirectional stacks counted whole (token types, post-norm layers, the masked-LM head), every view
counting the whole attention square, and the questions that do not apply to them refused in one line.

Expected totals are derived by hand below from the published shapes (Devlin et al. 2019 Table/§3, Liu et al. 2019
§4) and the layout transformers' BertForMaskedLM and RobertaForMaskedLM build; the per-component proof against
transformers itself is tests/families/test_defaults.py (every encoder type at its class defaults) and test_hf.py
(the public configs)."""

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
