"""NeoMME (transformers' modeling_neomme.py, NeoMMEForMaskedLM): its count at the class defaults derived by hand per
component and its forward FLOPs by hand against FlopCounterMode's recorded runs; a small build with stated windows, biases
and an untied head held against the transformers class itself (parameters and FlopCounterMode at two lengths, per
component) and against ffncalc's reference modules (verify, kept activations); what is not read refused in one line.

The per-component proof at the defaults against the recorded truth is also tests/families/test_defaults.py and
test_encoders.py::test_encoder_flops_at_defaults_equal_flop_counter_mode."""

import json
from pathlib import Path

import pytest

from ffncalc.analysis.count import tally
from ffncalc.analysis.records import expanded
from ffncalc.sources import hf

DEFAULTS = Path(__file__).resolve().parents[1] / "hf_defaults"
CONFIG = DEFAULTS / "configs" / "neomme.json"

# NeoMMEConfig's defaults, as the recorded configuration states them
V, R, D, I, L, H, K, HD, P = 131072, 256, 1024, 3584, 17, 16, 4, 64, 32


def _components(spec) -> dict[str, int]:
    out: dict[str, int] = {}
    for row in tally(spec).rows:
        if row.params:
            out[row.component] = out.get(row.component, 0) + row.params
    return out


def test_defaults_by_hand_per_component():
    """NeoMMEForMaskedLM at its defaults: the token table V × r and its projection r × d (the head's projection is the
    same tensor, transposed; lm_head is the table), the patch stem (LayerNorm over 3·p² values with weight and bias,
    3·p² -> 2d without a bias, 2d -> d with one), the value table V × K·hd, and in each of the L layers q, the gate and
    o (d × H·hd each), k and v (d × K·hd), the per-head alpha (H), the two lambdas and the ReLU² MLP (d × I twice). Its
    RMSNorms (embedding, q/k, the layers', final) have no weight."""
    data = json.loads(CONFIG.read_text())
    assert (data["vocab_size"], data["embedding_rank"], data["hidden_size"], data["intermediate_size"]) == (V, R, D, I)
    assert (data["num_hidden_layers"], data["num_attention_heads"], data["num_key_value_heads"], data["head_dim"]) == (L, H, K, HD)
    patch = 3 * P * P
    expected = {
        "embed": V * R,
        "embed.project_in": R * D,
        "patch_stem.norm": 2 * patch,
        "patch_stem.up": patch * 2 * D,
        "patch_stem.down": 2 * D * D + D,
        "value_embeddings": V * K * HD,
        "attn.q": L * D * H * HD,
        "attn.k": L * D * K * HD,
        "attn.v": L * D * K * HD,
        "attn.g": L * D * H * HD,
        "attn.o": L * H * HD * D,
        "attn.alpha": L * H,
        "ffn.up": L * D * I,
        "ffn.down": L * I * D,
        "initial_mix.lambdas": L * 2,
    }
    spec = hf.to_spec(hf.read_config(CONFIG))
    assert _components(spec) == expected
    assert sum(expected.values()) == tally(spec).params == 262_937_906


def test_defaults_flops_by_hand_equal_the_recorded_flop_counter_runs():
    """Forward FLOPs of one sequence of s tokens, 2 a multiply-add: the embedding projection r -> d and the head's d ->
    r, lm_head r -> V; in every layer q, gate and o (d·H·hd each), k and v (d·K·hd each), the MLP (2·d·I) and QKᵀ and AV
    over the whole square in every head (eager attention masks the windows after computing them). Equal to what
    FlopCounterMode measured on the class at both recorded lengths (scripts/hf_defaults.py)."""

    def by_hand(s: int) -> int:
        layer = 2 * (3 * D * H * HD + 2 * D * K * HD + 2 * D * I) + 2 * 2 * H * s * HD
        return s * (2 * (2 * R * D + R * V) + L * layer)

    spec = hf.to_spec(hf.read_config(CONFIG))
    truth = json.loads((DEFAULTS / "truth" / "neomme.json").read_text())
    runs = truth["flops"]["runs"]
    assert [r["seq_len"] for r in runs] == [8, 1032]  # past the longest window, 1024 on both sides
    for run in runs:
        s = run["seq_len"]
        measured = sum(flops for _module, _param, _op, flops in expanded(run["modules"], 4))
        assert measured == by_hand(s) == tally(spec, seq_len=s).forward_flops


def test_windows_and_value_layers_follow_the_config_class():
    """NeoMMEConfig.__post_init__: every sixth layer and the last full attention; the sliding layers alternate
    sliding_window (256) and 1024 by their own index; the value embeddings in the first and last full layers; partial
    rotary over a quarter of each head in the full layers."""
    spec = hf.to_spec(hf.read_config(CONFIG))
    windows = [layer.attention.window for layer in spec.layers]
    assert windows == [256, 1024, 256, 1024, 256, None, 1024, 256, 1024, 256, 1024, None, 256, 1024, 256, 1024, None]
    assert [layer.attention.rotary_dim for layer in spec.layers] == [16 if w is None else 64 for w in windows]
    assert [i for i, layer in enumerate(spec.layers) if layer.mark("value_embeddings")] == [5, 16]


def test_the_count_says_images_are_not_charged(cli):
    code, out, err = cli("count", str(CONFIG))
    assert code == 0 and err == ""
    assert "262,937,906" in out and "images" in out and "not charged" in out


def test_the_published_retriever_size():
    """NeoMME-260M-Retriever's model card states 263M parameters (https://huggingface.co/Hcompany/
    NeoMME-260M-Retriever-ST-dense): NeoMMEForRetrieval is the same NeoMMEModel with a multi-vector head, d ->
    embedding_dim (128) without a bias, and neither the head's projection nor lm_head (tied, so they add nothing here)."""
    total = tally(hf.to_spec(hf.read_config(CONFIG))).params
    assert round((total + D * 128) / 1e6) == 263


SMALL = {
    "model_type": "neomme",
    "vocab_size": 96,
    "embedding_rank": 16,
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 7,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "sliding_window": 3,
    "max_position_embeddings": 64,
    "patch_size": 4,
    "attention_bias": True,
    "mlp_bias": True,
    "tie_word_embeddings": False,
    "residual_multiplier": 0.5,
    "layer_types": ["sliding_attention"] * 2 + ["full_attention"] + ["sliding_attention"] * 3 + ["full_attention"],
    "per_layer_config": {"0": {"sliding_window": 5}, "2": {"sliding_window": None}, "6": {"sliding_window": None}},
    "rope_parameters": {
        "full_attention": {"rope_type": "default", "rope_theta": 1e6, "partial_rotary_factor": 0.5},
        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 1.0},
    },
}


def _small(tmp_path, **changes) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**SMALL, **changes}))
    return path


@pytest.mark.torch
def test_a_small_build_equals_the_class_and_flop_counter_mode(tmp_path):
    """Stated windows (a layer per_layer_config leaves out takes sliding_window), biases, an untied head (its own
    projection and lm_head): parameters per component equal NeoMMEForMaskedLM's, and FLOPs per component equal
    FlopCounterMode over the class at a short length and one past every window."""
    from ffncalc.analysis import hfcheck

    c = hf.read_config(_small(tmp_path))
    spec = hf.to_spec(c)
    assert [layer.attention.window for layer in spec.layers] == [5, 3, None, 3, 3, 3, None]
    measured = hfcheck.measure(c, flops=True)
    report = hfcheck.check(c, measured=measured)
    assert report.ok, report.failures
    assert not any(ch.component.startswith("(unmatched)") for ch in report.checks)
    # the head's projection, its own here: d × r beside the embedding's r × d
    assert ("embed.project_in+project_out", None, 2 * 16 * 32) in {(ch.component, ch.layers, ch.ours) for ch in report.checks}
    assert [r.seq_len for r in measured.flops] == [8, 16]
    checks = hfcheck.check_flops(c, measured)
    assert checks and all(ch.ok for ch in checks), [ch for ch in checks if not ch.ok]
    assert not any(ch.component.startswith("(unmatched)") for ch in checks)


@pytest.mark.torch
@pytest.mark.parametrize("changes", [{}, {"tie_word_embeddings": True}])
@pytest.mark.parametrize("convention", ["exact", "causal"])
def test_a_small_build_verifies_against_its_reference_modules(cli, tmp_path, changes, convention):
    path = str(_small(tmp_path, **changes))
    code, out, err = cli("verify", path, "--seq-len", "12", "--convention", convention, "--every-layer")
    assert code == 0 and "agree" in out, out + err


@pytest.mark.torch
def test_kept_activations_equal_what_the_reference_saves(cli, tmp_path):
    code, out, err = cli("verify", str(_small(tmp_path)), "--seq-len", "16", "--memory")
    assert code == 0 and "equal what its module saves" in out, out + err


@pytest.mark.parametrize(
    "changes, key",
    [
        ({"per_layer_config": {"1": {"intermediate_size": 8}}}, "per_layer_config"),
        ({"per_layer_config": {"9": {"sliding_window": 4}}}, "per_layer_config"),
        ({"per_layer_config": {"1": {"sliding_window": 0}}}, "per_layer_config"),
        ({"layer_types": ["sliding_attention"] * 7}, "layer_types"),
        ({"rope_parameters": {"full_attention": {"partial_rotary_factor": 2.0}}}, "rope_parameters"),
        ({"residual_multiplier": -0.5}, "residual_multiplier"),
    ],
)
def test_what_is_not_read_is_refused_in_one_line(cli, tmp_path, changes, key):
    code, out, err = cli("count", str(_small(tmp_path, **changes)))
    assert code == 2 and out == "" and err.count("\n") == 1 and key in err, err


def test_value_embeddings_need_the_layers_that_hand_them_on(cli, tmp_path):
    """A spec's value table reaches the layers' attention through initial-state mixing; without it, one line."""
    spec = tmp_path / "model.yaml"
    spec.write_text(
        "vocab_size: 64\nd_model: 32\nn_layers: 2\ncontext_length: 16\nmask: bidirectional\n"
        "attention: {kind: exclusive, n_heads: 4}\nffn: {kind: dense, d_ff: 64}\n"
        "value_embeddings: {width: 32, layers: [1]}\n"
    )
    code, out, err = cli("count", str(spec))
    assert code == 2 and err.count("\n") == 1 and "value_embeddings" in err, err


# transformers' parameter names -> the reference model's (ffncalc/model/reference.py: the blocks' and parts' modules)
RENAMES = (
    (r"^model\.embed_tokens\.word_embeddings\.", "embed."),
    (r"^model\.embed_tokens\.embedding_projection\.", "embed.project_in."),
    (r"^model\.patch_embeddings\.up_proj\.", "patch_stem.up."),
    (r"^model\.patch_embeddings\.down_proj\.", "patch_stem.down."),
    (r"^model\.patch_embeddings\.norm\.", "patch_stem.norm."),
    (r"^model\.value_embeddings\.", "value_embeddings."),
    (r"^model\.layers\.(\d+)\.lambdas$", r"layers.\1.initial_mix.lambdas"),
    (r"^model\.layers\.(\d+)\.self_attn\.exclusive_self_attention\.alpha$", r"layers.\1.attn.alpha"),
    (r"^model\.layers\.(\d+)\.self_attn\.output_projection\.gate_proj\.", r"layers.\1.attn.g."),
    (r"^model\.layers\.(\d+)\.self_attn\.output_projection\.o_proj\.", r"layers.\1.attn.o."),
    (r"^model\.layers\.(\d+)\.self_attn\.([qkv])_proj\.", r"layers.\1.attn.\2."),
    (r"^model\.layers\.(\d+)\.mlp\.(up|down)_proj\.", r"layers.\1.ffn.\2."),
    (r"^lm_head\.", "lm_head."),
)


@pytest.mark.torch
@pytest.mark.parametrize("tie", [True, False])
def test_the_reference_computes_what_the_class_computes(tmp_path, tie):
    """The reference model (the exclusive attention's module, the value embeddings, initial-state mixing, the head
    through the projection) run on real tensors gives NeoMMEForMaskedLM's logits, every weight random and copied
    across; rotary positions of base 10,000 in both layer types, as the reference rotates them."""
    import re

    import torch
    from transformers import AutoConfig, AutoModelForMaskedLM

    from ffncalc.model import reference

    rope = {"rope_type": "default", "rope_theta": 10000.0}
    changes = {
        "tie_word_embeddings": tie,
        "rope_parameters": {
            "full_attention": {**rope, "partial_rotary_factor": 0.5},
            "sliding_attention": {**rope, "partial_rotary_factor": 1.0},
        },
    }
    path = _small(tmp_path, **changes)
    torch.manual_seed(0)
    theirs = AutoModelForMaskedLM.from_config(AutoConfig.for_model(**json.loads(path.read_text())), attn_implementation="eager")
    theirs.eval()
    ours = reference.build(hf.to_spec(hf.read_config(path)), device="cpu")
    ours.eval()
    mine = dict(ours.named_parameters())
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            p.normal_(0.0, 0.3)
            if name == "unembedding_projection.weight":  # hidden_states @ W: the head's Linear holds Wᵀ
                mine["embed.project_out.weight"].copy_(p.T)
                continue
            target = name
            for pattern, repl in RENAMES:
                target = re.sub(pattern, repl, target)
            mine[target].copy_(p)
        tokens = torch.randint(0, SMALL["vocab_size"], (2, 12))
        expected = theirs(input_ids=tokens).logits
        got = ours(tokens)
    assert torch.allclose(got, expected, atol=1e-4, rtol=1e-4), (got - expected).abs().max()
