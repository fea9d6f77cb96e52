"""A layer's norms where they differ from the model's (absent, or gated: spec.NormUse) and the prediction head
before the unembedding (parts/prediction_head.py; model/norms.py), counted by hand and proven against the reference torch modules."""

import pytest

from ffncalc.analysis.count import tally
from ffncalc.analysis.memory import activation_bytes
from ffncalc.analysis.plan import Step
from ffncalc.model import SpecError, from_data

D, R, V = 32, 4, 50
ATTENTION = {"n_heads": 4, "head_dim": 8}
FFN = {"kind": "gated", "d_ff": 64}
DATA = dict(
    vocab_size=V,
    d_model=D,
    n_layers=4,
    context_length=16,
    attention=ATTENTION,
    ffn=FFN,
    norm={"kind": "rmsnorm", "gate_rank": R},
    norms=["gated", "gated"],
    layers=[{"repeat": 1, "norms": ["none", "norm"]}, {"repeat": 1, "norms": ["gated", "norm"]}, {"repeat": 2}],
    prediction_head={"activation": "gelu", "bias": True},
)
PLAIN = {**DATA, "norm": {"kind": "rmsnorm"}, "norms": None, "layers": None, "prediction_head": None}


def test_parameters_by_hand():
    gate = 2 * D * R  # fc1 d -> r, fc2 r -> d, no biases
    norms = D + (2 * D + gate) + 2 * (2 * D + 2 * gate)  # one norm; two, one gated; two layers of two gated
    head = D * D + D + D  # dense with its bias, the head's norm
    assert tally(from_data(DATA)).params - tally(from_data(PLAIN)).params == norms - 4 * 2 * D + head


def test_gate_and_head_flops_by_hand():
    rows = {(r.name, r.layers): r for r in tally(from_data(DATA), seq_len=8).rows}
    assert rows[("norms.gate.fc1.weight", (2, 4))].flops == 2 * 2 * 2 * D * R  # two layers, two gated norms each
    assert ("norms.gate.fc1.weight", (0, 1)) not in rows
    assert rows[("prediction_head.dense.weight", None)].flops == 2 * D * D


def test_identical_layers_with_other_norms_are_runs_of_their_own():
    assert [(r.first, r.stop) for r in from_data(DATA).runs()] == [(0, 1), (1, 2), (2, 4)]
    assert [(r.first, r.stop) for r in from_data(PLAIN).runs()] == [(0, 4)]


def test_absent_norms_keep_no_input():
    one = {**PLAIN, "norms": ["none", "norm"]}
    step = Step(seq_len=8, micro_batch=1, recompute="none")
    assert (
        activation_bytes(from_data(PLAIN), step) - activation_bytes(from_data(one), step) == 4 * 2 * 8 * D
    )  # 2 bytes per token of each absent norm's input, four layers


def test_stated_norms_are_checked():
    with pytest.raises(SpecError, match="per_layer"):
        from_data({**PLAIN, "norms": ["norm"]}, check=False)
    with pytest.raises(SpecError, match="gate_rank"):
        from_data({**PLAIN, "norms": ["gated", "norm"]}, check=False)


@pytest.mark.torch
@pytest.mark.parametrize("convention", ["exact", "causal"])
@pytest.mark.parametrize("every_layer", [False, True])
def test_against_reference_modules(convention, every_layer):
    from ffncalc.analysis.verify import verify

    for data in (DATA, {**DATA, "norm": {"kind": "layernorm", "gate_rank": R}}):
        report = verify(from_data(data), seq_len=8, convention=convention, every_layer=every_layer)
        assert report.ok, report.failures
