"""The parts beside the token embedding (parts/prompts.py): prompt positions, segment embeddings and the shared
relative-bias table (CPM-Ant), counted by hand and proven against the reference torch modules."""

from fractions import Fraction

import pytest

from ffncalc.analysis.count import tally
from ffncalc.model import from_data

DATA = dict(
    vocab_size=10,
    d_model=8,
    n_layers=2,
    context_length=16,
    positions="none",
    attention={"n_heads": 2, "head_dim": 4},
    ffn={"kind": "gated", "d_ff": 16, "activation": "gelu"},
    prompts={"length": 3, "types": 2},
    segments={"types": 4},
    relative_bias={"buckets": 6, "heads": 2, "segments": 4},
)


def test_parameters_by_hand():
    d = 8
    model = 10 * d + 2 * 3 * d + 4 * d + (4 * 4 + 6) * 2  # vocabulary, prompt rows, segments, bias table
    layer = 4 * d * d + 3 * d * 16 + 2 * d  # q, k, v, o; GeGLU; two norms
    assert tally(from_data(DATA)).params == model + 2 * layer + d + 10 * d  # final norm, untied head


def test_layers_run_over_the_prompt_positions():
    # 5 tokens, 3 prompt positions: the layers see 8 positions, the head 5
    t = tally(from_data(DATA), seq_len=5)
    per_position = 2 * (4 * 64 + 3 * 128) + 2 * 2 * (2 * 4 * 8)  # weights; QKᵀ and AV over 8 keys
    assert t.flops_per_token == Fraction(8, 5) * 2 * per_position + 2 * 10 * 8
    assert t.forward_flops == 8 * 2 * per_position + 5 * 2 * 10 * 8
    rows = {r.name: r for r in t.rows}
    assert rows["relative_bias.add"].elementwise == Fraction(8, 5) * 2 * 2 * 8  # heads × keys per position
    assert rows["prompts.embed.weight"].component == "embed"


def test_without_prompts_nothing_is_scaled():
    data = {**DATA, "prompts": None}
    assert tally(from_data(data), seq_len=5).flops_per_token == 2 * (2 * (4 * 64 + 3 * 128) + 4 * 2 * 4 * 5) + 160


@pytest.mark.torch
@pytest.mark.parametrize("convention", ["exact", "causal"])
def test_against_reference_modules(convention):
    from ffncalc.analysis.verify import verify

    for data in (DATA, {**DATA, "prompts": None}):
        report = verify(from_data(data), seq_len=5, convention=convention)
        assert report.ok, report.failures
