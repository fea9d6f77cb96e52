"""Evolla (EvollaForProteinText2Text) read whole: its SaProt protein encoder, sequence-compressor resampler and
projector (parts/protein.py) beside the Llama-form language model, with an adapter after every fourth layer's MLP,
against the class transformers 5.23 builds at EvollaConfig's defaults (tests/hf_whole, scripts/hf_whole.py) and hand
derivations from modeling_evolla.py. Its input is a protein, not an image: its FLOPs are a protein's and a forward's."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ffncalc.analysis.count import tally, terms
from ffncalc.analysis.records import expanded
from ffncalc.errors import InputError
from ffncalc.parts.protein import Protein
from ffncalc.sources import hf

HERE = Path(__file__).resolve().parents[1] / "hf_whole"
CONFIG = HERE / "configs" / "evolla.json"


def truth() -> dict:
    return json.loads((HERE / "truth" / "evolla.json").read_text())


def protein_of(model) -> Protein:
    (part,) = [p for p in model.parts if isinstance(p, Protein)]
    return part


def by_component(model) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in terms(model, 8, partial=True):
        if t.numel and not t.tied:
            out[t.component] = out.get(t.component, 0) + t.numel * t.stored_count
    return out


# EvollaConfig's defaults (configuration_evolla.py): the language model, SaProtConfig's encoder, the resampler
D, KV, FF, VOCAB, LAYERS = 4096, 1024, 14336, 128256, 32
W, WF, PLAYERS, PVOCAB = 1280, 5120, 33, 446
LATENTS, DEPTH, RHEADS, RHEAD = 64, 6, 8, 64


def resampler_by_hand() -> int:
    """EvollaSequenceCompressorResampler at the encoder's width W: the latents; a layer — norm_media and norm_latents
    (LayerNorms, 2W each), to_q (W → 8 · 64), to_kv (W → 2 · 8 · 64), to_out (8 · 64 → W), no biases; EvollaFeedForward
    (a LayerNorm, fc1 W → 4W and fc2 back, no biases) — 6 times; no norm at W after them."""
    inner = RHEADS * RHEAD
    layer = 2 * 2 * W + W * inner + W * 2 * inner + inner * W + 2 * W + 2 * W * 4 * W
    return LATENTS * W + DEPTH * layer


def adapter_by_hand(d: int = D, heads_width: int = D) -> int:
    """EvollaSequenceAlignerCrossAttention: query, key_protein and value_protein (d → heads · d / heads, biases),
    attention_norm (an RMSNorm: d), out_proj (d → d with a bias: aligner_enable_bias), ff (a LayerNorm of d, fc1 d → 4d,
    fc2 back, no biases), gate_attention and gate_ffw (one element each)."""
    return 3 * (d * heads_width + heads_width) + d + (d * d + d) + 2 * d + 2 * d * 4 * d + 2


def test_resampler_and_adapter_parameters_by_hand():
    """The resampler's 94,499,840 parameters (64 × 1,280 latents and 6 layers of 15,736,320: 4 × 1,280 of norms, 1,280 ×
    512 for q, twice that for k and v, 512 × 1,280 for to_out, 2 × 1,280 for the MLP's norm, 2 × 1,280 × 5,120) and one
    adapter's 201,355,266 (4 linears of 4,096² with biases, a 4,096 RMSNorm, an 8,192 LayerNorm, 2 × 4,096 × 16,384,
    2 gates), each the sum of the components ffncalc writes and of what transformers builds."""
    assert resampler_by_hand() == 64 * 1280 + 6 * 15_736_320 == 94_499_840
    assert adapter_by_hand() == 4 * (4096 * 4096 + 4096) + 4096 + 8192 + 2 * 4096 * 16384 + 2 == 201_355_266
    _, model = hf.load(CONFIG)
    mine = by_component(model)
    assert sum(n for c, n in mine.items() if c.startswith("protein.resampler.")) == resampler_by_hand()
    assert sum(n for c, n in mine.items() if c.startswith("protein.adapter.")) == 8 * adapter_by_hand()
    params = expanded(truth()["params"], 2)
    theirs = sum(n for name, n in params if "sequence_compressor_resampler." in name and "projector" not in name)
    theirs -= sum(n for name, n in params if name.endswith("sequence_compressor_resampler.norm.weight"))
    theirs -= sum(n for name, n in params if name.endswith("sequence_compressor_resampler.norm.bias"))
    assert theirs == resampler_by_hand()
    assert sum(n for name, n in params if ".layers.3.adapter." in name) == adapter_by_hand()
    assert sum(1 for name, _ in params if name.endswith("adapter.gate_ffw")) == 8


def test_evolla_whole_by_hand():
    """At EvollaConfig's defaults: Llama 3 8B's language model (32 layers of 4,096, 32 heads, 8 KV heads, SwiGLU 14,336,
    untied, 128,256 rows), an adapter after layers 3, 7, … 31 ((i + 1) % (32 // 8) == 0); the SaProt encoder (446
    rows of 1,280, 33 pre-LayerNorm layers with biased q, k, v, o and a GELU MLP of 5,120 with biases, the final
    emb_layer_norm_after; no position table: rotary), the resampler, protein_projector (1,280 → 4,096 with a bias) and
    its LayerNorm: 10,390,787,344 parameters, as the class transformers builds."""
    _, model = hf.load(CONFIG)
    text = 2 * VOCAB * D + D + LAYERS * (2 * D * D + 2 * KV * D + 3 * D * FF + 2 * D) + 8 * adapter_by_hand()
    encoder = PVOCAB * W + PLAYERS * (4 * (W * W + W) + 2 * W * WF + WF + W + 4 * W) + 2 * W
    projector = W * D + D + 2 * D
    assert tally(model).params == text + encoder + resampler_by_hand() + projector == 10_390_787_344
    assert sum(n for _, n in expanded(truth()["params"], 2)) == 10_390_787_344
    assert truth()["model_class"] == "EvollaForProteinText2Text"
    adapted = [i for i, layer in enumerate(model.layers) if layer.mark("protein") is True]
    assert adapted == [3, 7, 11, 15, 19, 23, 27, 31]
    mine = by_component(model)
    assert sum(n for c, n in mine.items() if c.startswith("protein.projector.")) == projector


def test_one_protein_flops_by_hand_and_as_flop_counter_mode_counts():
    """One protein of L tokens through the encoder (33 layers: the four projections and the MLP a token, every token
    meeting every token in QKᵀ and AV), the resampler (6 layers: q over the 64 latents, k and v over the L tokens and
    the latents side by side, 8 heads of 64 meeting all L + 64, to_out and the MLP over the latents) and the projector over
    the latents, 2 FLOPs a multiply-add: FlopCounterMode's count of model.protein_encoder at L = 1,024 and 256."""
    _, model = hf.load(CONFIG)
    part = protein_of(model)
    inner = RHEADS * RHEAD
    for run in truth()["protein_flops"]["runs"]:
        n = run["positions"]
        encoder = PLAYERS * (n * (4 * W * W + 2 * W * WF) + 2 * n * n * W)
        kv = n + LATENTS
        resampler = DEPTH * (LATENTS * W * inner + kv * W * 2 * inner + 2 * LATENTS * kv * inner + LATENTS * inner * W)
        resampler += DEPTH * LATENTS * 2 * W * 4 * W
        macs = encoder + resampler + LATENTS * W * D
        assert part.per_protein(model, n) == (LATENTS, 2 * macs) == (LATENTS, run["total"])
    assert part.length == 1024  # EvollaProcessor's protein_max_length, where no --source-len is given
    assert replace(part, length=256).per_protein(model)[1] == part.given(source_len=256).per_protein(model)[1]


@pytest.fixture
def small(tmp_path):
    """The record's reduced class as a config.json."""
    record = truth()["forward_flops"]
    data = json.loads(CONFIG.read_text())
    reduced = record["reduced"]
    data = {**data, **reduced, "protein_encoder_config": {**data["protein_encoder_config"], **reduced["protein_encoder_config"]}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return path


def test_forward_flops_equal_flop_counter_mode(small):
    """The class built small on the CPU (the record's "reduced": 4 layers of 64, an adapter after layers 1 and 3; an
    encoder of 32, 2 layers; a resampler of 4 latents): one forward of T text tokens and one protein of L tokens under
    FlopCounterMode equals ffncalc's exact forward FLOPs at T with the protein's L tokens, and the protein encoder's
    share its per_protein, at (T, L) = (8, 16) and (24, 40)."""
    _, model = hf.load(small)
    part = protein_of(model)
    assert [i for i, layer in enumerate(model.layers) if layer.mark("protein") is True] == [1, 3]
    for run in truth()["forward_flops"]["runs"]:
        m = replace(model, parts=tuple(part.given(source_len=run["positions"]) if p is part else p for p in model.parts))
        assert tally(m, seq_len=run["tokens"], convention="exact").forward_flops == run["total"]
        assert part.per_protein(model, run["positions"])[1] == run["protein"]


def test_text_flops_per_token_by_hand(small):
    """The reduced model's decoder at T tokens with one protein of L, by hand: the table lookup uncounted; a layer's
    q and o (64 × 64), k and v (64 × 32: 2 KV heads of 16) and SwiGLU (3 × 64 × 128) a token, QKᵀ and AV over the
    executed T × T square; each of the 2 adapters' query and out_proj (64 × 64), fc1 and fc2 (64 × 192) a token, key and
    value (64 × 64) once a latent (4), QKᵀ and AV over the 4 latents; the head (64 × 100) a token; and the protein
    path once: its total FlopCounterMode's."""
    _, model = hf.load(small)
    part = protein_of(model)
    d, kv, ff, vocab, n_layers, latents = 64, 32, 128, 100, 4, 4
    for run in truth()["forward_flops"]["runs"]:
        t, n = run["tokens"], run["positions"]
        layer = t * (2 * d * d + 2 * d * kv + 3 * d * ff) + 2 * t * t * d
        adapter = t * (2 * d * d + 2 * d * 3 * d) + latents * 2 * d * d + 2 * t * latents * d
        macs = n_layers * layer + 2 * adapter + t * d * vocab
        total = 2 * macs + part.per_protein(model, n)[1]
        m = replace(model, parts=tuple(part.given(source_len=n) if p is part else p for p in model.parts))
        assert tally(m, seq_len=t, convention="exact").forward_flops == total == run["total"]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"protein_encoder_config": {"position_embedding_type": "absolute"}}, "'absolute': only rotary positions are read"),
        ({"protein_encoder_config": {"num_attention_heads": 7}}, "num_attention_heads: 7 heads do not divide the width 1280"),
        ({"protein_encoder_config": 3}, "protein_encoder_config: expected an object, got 3"),
    ],
)
def test_shapes_not_read_are_one_line(tmp_path, change, words):
    data = json.loads(CONFIG.read_text())
    for key, value in change.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) else value
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(InputError) as err:
        hf.load(tmp_path / "config.json")
    assert str(err.value).endswith(words) and "\n" not in str(err.value)


def test_sparse_config_takes_saprot_defaults(tmp_path):
    """A config.json stating nothing but its model_type counts as the class builds its defaults (SaProtConfig's for the
    encoder, whose model_type is empty and so has no recorded class defaults)."""
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "evolla"}))
    assert tally(hf.load(tmp_path / "config.json")[1]).params == 10_390_787_344


def test_cli_count_states_the_protein_path(cli):
    code, out, _ = cli("count", str(CONFIG), "--seq-len", "512")
    assert code == 0 and "1,535,635,357,696" in out and "64 rows every adapter cross-attends" in out


@pytest.mark.torch
def test_verify_holds_the_count_against_the_reference_modules(small):
    """The reduced model's reference modules (the protein path run once over 24 protein tokens in ``enter``, each
    adapter around its layer): every component's parameters and FLOPs equal to the count, at 16 text tokens."""
    from ffncalc.analysis.verify import verify

    label, model = hf.load(small)
    part = protein_of(model)
    model = replace(model, parts=tuple(part.given(source_len=24) if p is part else p for p in model.parts))
    report = verify(model, model=label, seq_len=16)
    assert report.ok
    assert {"protein.encoder.attn.scores", "protein.resampler.attn.q.weight", "protein.adapter.k.weight"} <= {
        c.component for c in report.checks
    }
