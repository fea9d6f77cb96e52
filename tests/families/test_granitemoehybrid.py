"""Granite 4.0-H with experts and rotary positions (the fixture in hf_configs/ is the dense hybrid, without
positions): the import against what transformers 5.23.0 builds, component by component, and the reference modules."""

import json

import pytest

from ffncalc.analysis import hfcheck
from ffncalc.analysis.count import tally
from ffncalc.analysis.verify import verify
from ffncalc.sources import hf

pytestmark = pytest.mark.torch  # reference modules, real tensors or FlopCounterMode

CONFIG = {
    "model_type": "granitemoehybrid",
    "vocab_size": 96,
    "hidden_size": 32,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 24,
    "shared_intermediate_size": 40,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "layer_types": ["mamba", "attention", "mamba", "mamba"],
    "position_embedding_type": "rope",
    "mamba_n_heads": 8,
    "mamba_d_head": 8,
    "mamba_d_state": 16,
    "mamba_n_groups": 2,
    "mamba_proj_bias": True,
    "attention_bias": True,
    "max_position_embeddings": 64,
}


def test_experts_and_rope_against_transformers(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG))
    report = hfcheck.check(hf.read_config(path))
    assert report.ok, report.failures
    assert {"ffn.router", "ffn.experts", "ffn.shared+gate+up+down", "mixer.in_proj"} <= {c.component for c in report.checks}
    label, spec = hf.load(path)
    assert spec.positions == "rotary"
    d = 32
    t = tally(spec)
    assert t.params - t.active == 4 * (4 - 2) * 3 * d * 24  # each layer skips two of its four experts
    assert sum(n for _, n in hfcheck.measure(hf.read_config(path)).params) == t.params
    assert verify(spec, model=label, seq_len=5).ok
