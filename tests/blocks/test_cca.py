"""Compressed convolutional attention (blocks/cca.py), the MLP router with a skip expert and the previous layer's
router state (blocks/moe.py), and scaled residual adds (parts/residual_scale.py): ZAYA1's parts, counted by hand and
proven against the reference torch modules."""

import pytest

from ffncalc.analysis.count import tally
from ffncalc.model import SpecError, from_data

D, H, G, W, T0, T1, R, E, F = 64, 4, 2, 16, 3, 2, 8, 4, 32
CCA = {"kind": "cca", "n_heads": H, "n_kv_heads": G, "head_dim": W, "time0": T0, "time1": T1, "rotary_dim": 8}
MOE = {
    "kind": "moe",
    "n_experts": E,
    "top_k": 1,
    "expert": {"kind": "gated", "d_ff": F},
    "router_mlp": R,
    "skip_expert": True,
    "router_state": True,
}
DATA = dict(
    vocab_size=50,
    d_model=D,
    n_layers=3,
    context_length=16,
    attention=CCA,
    ffn=MOE,
    tie_embeddings=True,
    layers=[
        {"repeat": 1, "ffn": {**MOE, "router_state": False}},
        {"repeat": 1, "attention": {**CCA, "window": 4}},
        {"repeat": 1, "attention": {**CCA, "bias": True}},
    ],
    residual_scale={"input": True},
)


def test_attention_parameters_by_hand():
    c = (H + G) * W
    cca = D * H * W + D * G * W + c * T0 + c + c * W * T1 + c + 2 * D * G * W // 2 + G + H * W * D
    biased = cca + H * W + G * W + G * W + D  # q, k, both halves of v, o
    rows = tally(from_data(DATA)).rows
    per_layer = {}
    for r in rows:
        if r.name.startswith("attn.") and r.layers:
            per_layer[r.layers] = per_layer.get(r.layers, 0) + r.params
    assert per_layer == {(0, 1): cca, (1, 2): cca, (2, 3): biased}


def test_router_and_residual_scale_by_hand():
    router = D * R + R + R + 2 * (R * R + R) + R * (E + 1)  # down, norm, fc1, fc2, out to E + 1 classes
    experts = E * 3 * D * F
    layer = 2 * D + 8 * D  # two norms; four vectors after each sublayer
    model = 50 * D + 2 * D + D  # tied embedding, its scale and bias, the final norm
    rows = tally(from_data(DATA)).rows
    ffn = sum(r.params for r in rows if r.name.startswith("ffn."))
    assert ffn == 3 * (router + experts) + 2 * R  # the router state's scale from the second layer on
    others = sum(r.params for r in rows if not r.name.startswith(("ffn.", "attn.")))
    assert others == model + 3 * layer


def test_convolutions_by_hand():
    rows = {(r.name, r.layers): r for r in tally(from_data(DATA), seq_len=8).rows}
    c = (H + G) * W
    assert rows[("attn.conv_depthwise.weight", (0, 1))].flops == 2 * c * T0  # per token
    assert rows[("attn.conv_grouped.weight", (0, 1))].flops == 2 * c * W * T1  # each head's W channels mixed


def test_checks():
    with pytest.raises(SpecError, match="group"):
        from_data({**DATA, "attention": {**CCA, "n_kv_heads": 3}}, check=False)
    with pytest.raises(SpecError, match="router_mlp"):
        from_data({**DATA, "ffn": {**MOE, "router_mlp": None}}, check=False)
    with pytest.raises(SpecError, match="sequential"):
        from_data({**DATA, "parallel": True}, check=False)


@pytest.mark.torch
@pytest.mark.parametrize("convention", ["exact", "causal"])
@pytest.mark.parametrize("every_layer", [False, True])
def test_against_reference_modules(convention, every_layer):
    from ffncalc.analysis.verify import verify

    report = verify(from_data(DATA), seq_len=8, convention=convention, every_layer=every_layer)
    assert report.ok, report.failures
