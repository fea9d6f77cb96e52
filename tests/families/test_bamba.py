"""Bamba (bamba) by hand: Mamba-2 layers with attention at attn_layer_indices, every layer followed by a SwiGLU MLP
(BambaDecoderLayer), counted from the shapes BambaMixer, BambaAttention and BambaMLP build (transformers 5.23.0)."""

import json
from pathlib import Path

from ffncalc.analysis.count import tally
from ffncalc.analysis.hfcheck import Measured
from ffncalc.sources import hf

CONFIGS = Path(__file__).resolve().parents[1] / "hf_configs"
TRUTH = Path(__file__).resolve().parents[1] / "hf_truth"


def test_bamba_9b_by_hand():
    """BambaMixer: d_inner = mamba_expand · d; in_proj d -> d_inner + conv_dim + heads, conv over conv_dim with a
    bias, dt_bias/A_log/D per head, gated norm over d_inner, out_proj; BambaAttention q/k/v/o without bias; a SwiGLU
    MLP and two norms in every layer; lm_head untied. The Transformers documentation states 9.78B."""
    c = json.loads((CONFIGS / "bamba-9b.json").read_text())
    d, heads, v = c["hidden_size"], c["mamba_n_heads"], c["vocab_size"]
    inner = c["mamba_expand"] * d
    conv = inner + 2 * c["mamba_n_groups"] * c["mamba_d_state"]
    mamba = d * (inner + conv + heads) + conv * c["mamba_d_conv"] + conv + 3 * heads + inner + inner * d
    hd, h, kv = d // c["num_attention_heads"], c["num_attention_heads"], c["num_key_value_heads"]
    attn = d * h * hd + 2 * d * kv * hd + h * hd * d
    common = 3 * d * c["intermediate_size"] + 2 * d
    n, n_attn = c["num_hidden_layers"], len(c["attn_layer_indices"])
    total = 2 * v * d + (n - n_attn) * (mamba + common) + n_attn * (attn + common) + d
    t = tally(hf.load(CONFIGS / "bamba-9b.json")[1])
    assert t.params == t.active == total
    assert total == sum(n for _, n in Measured.from_record(json.loads((TRUTH / "bamba-9b.json").read_text())).params)
    assert round(total / 1e9, 2) == 9.78


def test_attention_layers_and_half_rotary():
    """Attention at 9, 18 and 27, Mamba-2 elsewhere; BambaConfig hardcodes partial_rotary_factor 0.5 (64 of 128)."""
    model = hf.load(CONFIGS / "bamba-9b.json")[1]
    assert [i for i, layer in enumerate(model.layers) if layer.attention.kind == "mha"] == [9, 18, 27]
    assert {layer.attention.rotary_dim for layer in model.layers if layer.attention.kind == "mha"} == {64}
    assert {layer.ffn.kind for layer in model.layers} == {"gated"}
