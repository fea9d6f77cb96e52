"""Nemotron-H (nemotron_h) by hand: every layer is one block alone after one RMSNorm (NemotronHBlock), Mamba-2,
attention, a squared-ReLU MLP or a mixture of such MLPs with one shared MLP, by hybrid_override_pattern.

The counts here are derived from the shapes NemotronHMamba2Mixer, NemotronHAttention, NemotronHMLP and NemotronHMoE
build (transformers 5.23.0), not read back from ffncalc; tests/hf_truth/ holds what transformers itself built.
"""

import json
from pathlib import Path

import pytest

from ffncalc.analysis.count import tally
from ffncalc.analysis.hfcheck import Measured
from ffncalc.errors import InputError
from ffncalc.sources import hf

CONFIGS = Path(__file__).resolve().parents[1] / "hf_configs"
TRUTH = Path(__file__).resolve().parents[1] / "hf_truth"


def raw(name):
    return json.loads((CONFIGS / f"{name}.json").read_text())


def mamba_layer(c):
    """NemotronHMamba2Mixer: in_proj d -> d_inner + conv_dim + heads (no bias), a depthwise conv over conv_dim
    channels with a bias, dt_bias, A_log and D per head, the gated norm over d_inner, out_proj d_inner -> d; plus
    the block's norm."""
    d, h, p = c["hidden_size"], c["mamba_num_heads"], c["mamba_head_dim"]
    inner = h * p
    conv = inner + 2 * c["n_groups"] * c["ssm_state_size"]
    return d * (inner + conv + h) + conv * c["conv_kernel"] + conv + 3 * h + inner + inner * d + d


def attention_layer(c):
    """NemotronHAttention: q, k, v, o without bias, head_dim 128 (the config class's default where unstated)."""
    d, h, kv, hd = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c.get("head_dim", 128)
    return d * h * hd + 2 * d * kv * hd + h * hd * d + d


def mlp_layer(c):
    """NemotronHMLP: up_proj and down_proj of intermediate_size, no gate, no bias."""
    return 2 * c["hidden_size"] * c["intermediate_size"] + c["hidden_size"]


def moe_layer(c, experts):
    """NemotronHMoE with ``experts`` routed experts in use: the router's weight (n_routed_experts × d; its
    e_score_correction_bias is a buffer), that many non-gated experts of moe_intermediate_size, one shared MLP."""
    d = c["hidden_size"]
    return (
        c["n_routed_experts"] * d + experts * 2 * d * c["moe_intermediate_size"] + 2 * d * c["moe_shared_expert_intermediate_size"] + d
    )


def by_hand(c, active=False):
    layer = {
        "M": mamba_layer(c),
        "*": attention_layer(c),
        "-": mlp_layer(c) if "-" in c["hybrid_override_pattern"] else 0,
        "E": moe_layer(c, c["num_experts_per_tok"] if active else c["n_routed_experts"]) if "E" in c["hybrid_override_pattern"] else 0,
    }
    embed = c["vocab_size"] * c["hidden_size"]
    return 2 * embed + sum(layer[ch] for ch in c["hybrid_override_pattern"]) + c["hidden_size"]


@pytest.mark.parametrize("name", ["nemotron-3-nano-30b-a3b", "nemotron-h-56b-base-8k"])
def test_total_by_hand(name):
    c = raw(name)
    total = tally(hf.load(CONFIGS / f"{name}.json")[1]).params
    assert total == by_hand(c)
    assert total == sum(n for _, n in Measured.from_record(json.loads((TRUTH / f"{name}.json").read_text())).params)


def test_nano_30b_a3b_active_by_hand_and_published():
    """6 of 128 experts per token. NVIDIA's card: 31.6B total; the Nemotron 3 Nano report: 3.2B active (3.6B with
    the embeddings)."""
    c = raw("nemotron-3-nano-30b-a3b")
    t = tally(hf.load(CONFIGS / "nemotron-3-nano-30b-a3b.json")[1])
    assert t.active == by_hand(c, active=True)
    assert 31.55e9 < t.params < 31.65e9
    assert 3.55e9 < t.active < 3.65e9
    assert 3.2e9 < t.active_without_input_embedding < 3.3e9


def test_pattern_layers_and_no_positions():
    """The 52 layers of the pattern: 23 Mamba-2, 23 MoE, 6 attention; NemotronHModel applies no rotary."""
    data = hf.spec_data(hf.read_config(CONFIGS / "nemotron-3-nano-30b-a3b.json"))
    model = hf.load(CONFIGS / "nemotron-3-nano-30b-a3b.json")[1]
    kinds = [(layer.attention.kind, layer.ffn.kind) for layer in model.layers]
    assert kinds.count(("mamba2", "none")) == 23 and kinds.count(("none", "moe")) == 23
    assert kinds.count(("mha", "none")) == 6 and len(kinds) == 52
    assert data["positions"] == "none" and data["norm"]["per_layer"] == 1


def test_dense_pattern_reads_the_mlp_layers():
    """Nemotron-H-56B: 118 layers of M, - and *; every "-" a relu² MLP of intermediate_size."""
    model = hf.load(CONFIGS / "nemotron-h-56b-base-8k.json")[1]
    pattern = raw("nemotron-h-56b-base-8k")["hybrid_override_pattern"]
    kinds = {"M": ("mamba2", "none"), "*": ("mha", "none"), "-": ("none", "dense")}
    assert [(layer.attention.kind, layer.ffn.kind) for layer in model.layers] == [kinds[ch] for ch in pattern]
    assert {layer.ffn.activation for layer in model.layers if layer.ffn.kind == "dense"} == {"relu2"}


def _write(tmp_path, **changes):
    data = {**raw("nemotron-3-nano-30b-a3b"), **changes}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return path


def test_tie_word_embeddings_ties_nothing(tmp_path):
    """NemotronHForCausalLM declares no tied weights: lm_head stays its own matrix whatever the key says."""
    untied = tally(hf.load(CONFIGS / "nemotron-3-nano-30b-a3b.json")[1]).params
    assert tally(hf.load(_write(tmp_path, tie_word_embeddings=True))[1]).params == untied


def test_layers_block_type_wins_and_counts_the_layers(tmp_path):
    """layers_block_type (legacy names remapped) over hybrid_override_pattern; num_hidden_layers is ignored."""
    path = _write(tmp_path, layers_block_type=["mamba", "moe", "attention", "mlp"], num_hidden_layers=52)
    model = hf.load(path)[1]
    assert [(layer.attention.kind, layer.ffn.kind) for layer in model.layers] == [
        ("mamba2", "none"),
        ("none", "moe"),
        ("mha", "none"),
        ("none", "dense"),
    ]


def test_latent_moe_is_refused(tmp_path):
    """fc1_latent_proj / fc2_latent_proj around experts of latent width have no spec form: refused, not guessed."""
    with pytest.raises(InputError, match="moe_latent_size"):
        hf.load(_write(tmp_path, moe_latent_size=1024))
