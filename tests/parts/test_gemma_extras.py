"""The parts beside every layer's blocks (ffncalc/parts/): per-layer inputs, AltUp and LAuReL, counted by hand
and proven against the reference torch modules."""

import pytest

from ffncalc.analysis.count import tally
from ffncalc.model import SpecError, from_data

ATTENTION = {"n_heads": 4, "n_kv_heads": 2, "head_dim": 8, "qk_norm": "head", "v_norm": True}
SHARED = {"n_heads": 4, "n_kv_heads": 2, "head_dim": 8, "qk_norm": "head", "kv_shared": True, "window": 4}
DATA = dict(
    vocab_size=50,
    d_model=32,
    n_layers=3,
    context_length=16,
    attention=ATTENTION,
    layers=[{"repeat": 2}, {"repeat": 1, "attention": SHARED}],
    ffn={"kind": "gated", "d_ff": 64, "activation": "gelu_tanh"},
    tie_embeddings=True,
    norm={"kind": "rmsnorm", "per_layer": 4},
    per_layer_inputs={"width": 8, "vocab_size": 40},
    altup={"inputs": 3},
    laurel={"rank": 4},
)


def test_parameters_by_hand():
    d, layers, p, n, r = 32, 3, 8, 3, 4
    model = 50 * d + 40 * layers * p + d * layers * p + p  # embedding; per-layer table, projection, its norm
    model += 2 * (n - 1) * d * d + d  # AltUp's projections in and out; the final norm
    attention = d * 32 + 2 * d * 16 + 8 + 8 + 32 * d  # q, k, v, q_norm, k_norm, o
    shared = d * 32 + 8 + 32 * d  # q, q_norm, o: the keys and values are an earlier layer's
    layer = 4 * d + 3 * d * 64  # four norms, GeGLU
    layer += d + d * n + n * n * n + n * n + d  # router_norm, router, prediction and correction coefs, output scale
    layer += 2 * d * r + d  # LAuReL
    layer += 2 * d * p + d  # the layer's input: gate, projection, norm
    assert tally(from_data(DATA)).params == model + 2 * (layer + attention) + layer + shared


def test_altup_prediction_is_a_product_of_activations():
    rows = {(r.name, r.layers): r for r in tally(from_data(DATA), seq_len=8).rows}
    assert rows[("altup.predict", (0, 2))].flops == 2 * 2 * 32 * 3 * 3  # two layers, d·n² multiply-adds each
    assert rows[("altup.router.weight", (2, 3))].flops == 2 * 2 * 32 * 3  # the router runs twice a layer


def test_laurel_needs_sequential_pre_norm_layers():
    with pytest.raises(SpecError, match="LAuReL"):
        from_data({**DATA, "parallel": True, "norm": {"kind": "rmsnorm", "per_layer": 2}}, check=False)


@pytest.mark.torch
@pytest.mark.parametrize("convention", ["exact", "causal"])
@pytest.mark.parametrize("every_layer", [False, True])
def test_against_reference_modules(convention, every_layer):
    from ffncalc.analysis.verify import verify

    for data in (DATA, {**DATA, "altup": None, "laurel": None}, {**DATA, "per_layer_inputs": None}):
        report = verify(from_data(data), seq_len=8, convention=convention, every_layer=every_layer)
        assert report.ok, report.failures


S, F = "sliding_attention", "full_attention"
# Small configs of the two families with every part: shared KV in the last layers, per-layer FFN widths and
# activation sparsity (Gemma 3n), double-wide MLPs in the shared layers (Gemma 4)
SMALL = {
    "gemma3n_text": {
        "vocab_size": 96,
        "vocab_size_per_layer_input": 80,
        "hidden_size": 32,
        "num_hidden_layers": 5,
        "intermediate_size": [64, 64, 48, 48, 64],
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "hidden_size_per_layer_input": 8,
        "altup_num_inputs": 3,
        "laurel_rank": 4,
        "num_kv_shared_layers": 2,
        "sliding_window": 4,
        "layer_types": [S, F, S, F, S],
        "activation_sparsity_pattern": [0.95, 0.0, 0.0, 0.0, 0.0],
        "max_position_embeddings": 64,
    },
    "gemma4_text": {
        "vocab_size": 96,
        "vocab_size_per_layer_input": 80,
        "hidden_size": 32,
        "num_hidden_layers": 4,
        "intermediate_size": 48,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 8,
        "global_head_dim": 16,
        "hidden_size_per_layer_input": 8,
        "num_kv_shared_layers": 2,
        "use_double_wide_mlp": True,
        "sliding_window": 4,
        "layer_types": [S, F, S, F],
        "max_position_embeddings": 64,
    },
}


@pytest.mark.torch
@pytest.mark.parametrize("model_type", sorted(SMALL))
def test_small_configs_against_transformers(model_type, tmp_path):
    """Parameters and forward FLOPs component by component against what transformers builds and runs, and the
    imported spec against the reference modules."""
    import json

    from ffncalc.analysis import hfcheck
    from ffncalc.analysis.verify import verify
    from ffncalc.sources import hf

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": model_type, **SMALL[model_type]}))
    c = hf.read_config(path)
    measured = hfcheck.measure(c, flops=True)
    report = hfcheck.check(c, measured=measured)
    assert report.ok, report.failures
    assert not any(ch.component.startswith("(unmatched)") for ch in report.checks)
    assert {"ple.embed", "ple.projection", "ple.gate", "ple.proj", "ple.norm"} <= {ch.component for ch in report.checks}
    flops = hfcheck.check_flops(c, measured)
    assert flops and all(ch.ok for ch in flops), [ch for ch in flops if not ch.ok]
    label, spec = hf.load(path)
    assert verify(spec, model=label, seq_len=6).ok
