"""Voxtral Realtime's adaptive norm (parts/ada_norm.py): its linears run once a sequence, the scale on every token, and
a training forward keeps the normed input for the scale's gradient."""

import json
from fractions import Fraction
from pathlib import Path

import pytest

from ffncalc.analysis.count import terms
from ffncalc.sources import hf

WHOLE = Path(__file__).resolve().parents[1] / "hf_whole"


def small(tmp_path) -> Path:
    """Voxtral Realtime's defaults with a language model of width 64 (2 layers, 4 heads of 16, 2 KV heads)."""
    data = json.loads((WHOLE / "configs" / "voxtral_realtime.json").read_text())
    text = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4}
    data["text_config"] = {**data["text_config"], **text, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 512}
    (tmp_path / "config.json").write_text(json.dumps(data))
    return tmp_path / "config.json"


def test_linears_once_a_sequence_and_the_scale_every_token(tmp_path):
    """VoxtralRealtimeTextAdaRmsNorm reads the time embedding, one row a forward: Linear(64, 32) and Linear(32, 64) in
    each of 2 layers are 2 × (64 × 32 + 32 × 64) multiply-adds a sequence, and the scale 64 products a token a layer."""
    _, model = hf.load(small(tmp_path))
    seq = 256
    found = {t.name: t for t in terms(model, seq) if t.component.startswith("ada_norm")}
    once = [found["ada_norm.linear1.weight"], found["ada_norm.linear2.weight"]]
    assert sum(t.macs for t in once) == 2 * (64 * 32 + 32 * 64)
    assert all(t.per_sequence and t.positions == Fraction(1, seq) and t.active_count == 0 for t in once)
    assert found["ada_norm.scale"].elementwise == 2 * 64 and not found["ada_norm.scale"].per_sequence


@pytest.mark.torch
def test_kept_elements_equal_what_autograd_saves(tmp_path):
    """The product h ⊙ (1 + s) keeps h for s's gradient (and 1 + s, one row a sequence): d elements a token beside what
    the FFN keeps of its own input (the product)."""
    import torch

    from ffncalc.parts.ada_norm import AdaNorm

    _, model = hf.load(small(tmp_path))
    (part,) = [p for p in model.parts if isinstance(p, AdaNorm)]
    n, d = 128, model.d_model
    h = torch.randn(1, n, d, requires_grad=True)
    s = torch.randn(1, 1, d, requires_grad=True)
    saved: list[int] = []
    with torch.autograd.graph.saved_tensors_hooks(lambda x: saved.append(x.numel()) or x, lambda x: x):
        h * (1 + s)
    assert sum(saved) == n * part.kept_elements(model) + d
