"""Layer groups that run an earlier group's layers again (model/reuse.py): parameters counted once, where they are
stored, the work at every run; HRM's cycles (z_L_init, an add and a weight-free norm per stack run); counted by hand,
proven against the reference torch modules and, for a small HRM-Text config, against transformers (parameters, the
FLOPs of one forward, and the logits of the reference model with transformers' weights)."""

import json

import pytest

from ffncalc.analysis.count import tally
from ffncalc.model import SpecError, from_data

D, V, F, H, HD = 16, 50, 24, 2, 8
ATTN = {"n_heads": H, "head_dim": HD}
# layers 0, 1: group A (stored); 2: a layer of its own (the three one run); 3, 4: A's two layers run again
DATA = dict(
    vocab_size=V,
    d_model=D,
    n_layers=5,
    context_length=16,
    attention=ATTN,
    ffn={"kind": "gated", "d_ff": F},
    positions="none",
    layers=[{"repeat": 2, "name": "A"}, {"repeat": 1}, {"repeat": 2, "reuses": "A"}],
)
LINEARS = 4 * D * H * HD + 3 * D * F  # q, k, v, o; gate, up, down
LAYER = LINEARS + 2 * D  # and the layer's two RMSNorm weights
CORE = 2 * 2 * H * HD * 8  # QKᵀ and AV per token over the full square of 8 keys, 2 FLOPs per multiply-add


def test_parameters_by_hand():
    assert tally(from_data(DATA)).params == 2 * V * D + 3 * LAYER + D  # embed, head, three stored layers, final norm


def test_stored_once_run_at_every_use():
    t = tally(from_data(DATA), seq_len=8)
    rows = {(r.name, r.layers): r for r in t.rows}
    assert [rows[("attn.q.weight", s)].params for s in ((0, 3), (3, 5))] == [3 * D * D, 0]  # 0..2: one run
    assert [rows[("attn.q.weight", s)].flops for s in ((0, 3), (3, 5))] == [3 * 2 * D * D, 2 * 2 * D * D]
    assert ("norms", (3, 5)) not in {(r.component, r.layers) for r in t.rows if r.params}
    assert t.flops_per_token == 5 * (2 * LINEARS + CORE) + 2 * V * D
    assert t.matrices == 2 + 3 * 7  # embed, head; seven matrices in each stored layer


def test_two_flops_per_parameter_at_every_run():
    t = tally(from_data(DATA), convention="6n")
    assert t.active == t.params
    assert t.flops_per_token == 2 * t.params + 2 * 2 * LAYER  # A's two layers run twice, stored once


def test_a_reuse_of_a_reuse_points_at_the_stored_layer():
    data = {**DATA, "n_layers": 7, "layers": DATA["layers"] + [{"repeat": 2, "reuses": "B"}]}
    data["layers"][2] = {"repeat": 2, "reuses": "A", "name": "B"}
    model = from_data(data)
    assert [layer.reuse for layer in model.layers] == [None, None, None, 3, 3, 5, 5]
    assert tally(model).params == 2 * V * D + 3 * LAYER + D


@pytest.mark.parametrize(
    "groups, message",
    [
        ([{"repeat": 2}, {"repeat": 1}, {"repeat": 2, "reuses": "A"}], "no earlier layer group named 'A'"),
        ([{"repeat": 2, "reuses": "A"}, {"repeat": 1}, {"repeat": 2, "name": "A"}], "no earlier layer group named 'A'"),
        ([{"repeat": 2, "name": "A"}, {"repeat": 2, "reuses": "A"}, {"repeat": 1, "reuses": "A"}], "has 2 layers"),
        ([{"repeat": 2, "name": "A"}, {"repeat": 1, "name": "A"}, {"repeat": 2, "reuses": "A"}], "two layer groups"),
        (
            [{"repeat": 2, "name": "A"}, {"repeat": 1}, {"repeat": 2, "reuses": "A", "ffn": {"kind": "dense", "d_ff": 8}}],
            "no attention, ffn",
        ),
    ],
)
def test_malformed_reuse_is_refused(groups, message):
    with pytest.raises(SpecError, match=message):
        from_data({**DATA, "layers": groups}, check=False)


# HRM: a low stack L and a high stack H of one layer each, two high cycles of two low runs and one high run
RUNS = ["L", "L", "H", "L", "L", "H"]
HRM = dict(
    vocab_size=V,
    d_model=D,
    n_layers=6,
    context_length=16,
    attention={**ATTN, "softplus_gate": "element", "gate_activation": "sigmoid"},
    ffn={"kind": "gated", "d_ff": F},
    norm={"affine": False, "final": False},
    layers=[{"repeat": 1, "name": s} if s not in RUNS[:i] else {"repeat": 1, "reuses": s} for i, s in enumerate(RUNS)],
    cycles={"stack": 1, "low": 2, "high": 2},
)


def test_cycles_by_hand():
    t = tally(from_data(HRM), seq_len=8)
    gated = LINEARS + D * H * HD  # and gate_proj
    assert t.params == 2 * V * D + 2 * gated + D  # two stored layers, z_L_init; no norm has weights
    assert t.flops_per_token == 6 * (2 * gated + CORE) + 2 * V * D
    rows = {r.name: r for r in t.rows if r.part == "final"}
    assert rows["cycles.init"].params == D
    assert rows["cycles.add"].elementwise == 6 * D  # each run's z_L + z_H
    assert rows["cycles.norms"].elementwise == 6 * 3 * D  # a weight-free RMSNorm: square, add, scale


@pytest.mark.parametrize(
    "change, message", [({"n_layers": 5, "layers": HRM["layers"][:5]}, "6 layers"), ({"norm": {"affine": False}}, "norm.final false")]
)
def test_malformed_cycles_are_refused(change, message):
    with pytest.raises(SpecError, match=message):
        from_data({**HRM, **change}, check=False)


@pytest.mark.torch
@pytest.mark.parametrize("convention", ["exact", "causal"])
@pytest.mark.parametrize("every_layer", [False, True])
def test_against_reference_modules(convention, every_layer):
    from ffncalc.analysis.verify import verify

    for data in (DATA, HRM):
        report = verify(from_data(data), seq_len=8, convention=convention, every_layer=every_layer)
        assert report.ok, report.failures


SMALL = {
    "model_type": "hrm_text",
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "head_dim": 8,
    "vocab_size": 50,
    "H_cycles": 2,
    "L_cycles": 2,
    "max_position_embeddings": 64,
    "embedding_scale": 1.0,
}
NAMES = {
    "self_attn.q_proj": "attn.q",
    "self_attn.k_proj": "attn.k",
    "self_attn.v_proj": "attn.v",
    "self_attn.gate_proj": "attn.g",
    "self_attn.o_proj": "attn.o",
    "mlp.gate_proj": "ffn.gate",
    "mlp.up_proj": "ffn.up",
    "mlp.down_proj": "ffn.down",
}


@pytest.mark.torch
def test_small_hrm_text_against_transformers():
    """Parameters per component and run; the FLOPs of one forward per component (transformers names a rerun's work
    by the stored layer's parameters, so the runs of a stack are summed); and the reference model's logits with
    transformers' weights (the high stack's stored layers are ours from L_cycles · stack on)."""
    pytest.importorskip("transformers")
    import torch

    from ffncalc.analysis import hfcheck
    from ffncalc.model import reference
    from ffncalc.sources import hf
    from ffncalc.sources.hf.config import Config

    c = Config(SMALL, json.dumps(SMALL), "small-hrm-text")
    spec = hf.to_spec(c)
    measured = hfcheck.measure(c, flops=True)
    report = hfcheck.check(c, measured=measured)
    assert report.ok, report.failures
    assert tally(spec).params == sum(n for _, n in measured.params)
    ours, theirs = {}, {}
    for ch in hfcheck.check_flops(c, measured):
        ours[(ch.seq_len, ch.component)] = ours.get((ch.seq_len, ch.component), 0) + ch.ours
        theirs[(ch.seq_len, ch.component)] = theirs.get((ch.seq_len, ch.component), 0) + ch.transformers
    assert ours == theirs

    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    net = AutoModelForCausalLM.from_config(AutoConfig.for_model(**SMALL), attn_implementation="eager").eval()
    net.model.z_L_init.data.normal_()
    state = {"embed.weight": net.model.embed_tokens.weight, "lm_head.weight": net.lm_head.weight, "cycles.init": net.model.z_L_init}
    for path, p in net.model.named_parameters():
        if ".layers." in path:
            stack, _, i, module = path.split(".", 3)
            start = 0 if stack == "L_module" else SMALL["L_cycles"] * SMALL["num_hidden_layers"]
            state[f"layers.{start + int(i)}.{NAMES[module.removesuffix('.weight')]}.weight"] = p
    model = reference.build(spec, device="cpu", causal=True).eval()
    model.load_state_dict({k: v.detach() for k, v in state.items()}, strict=False)
    tokens = torch.randint(0, SMALL["vocab_size"], (2, 7))
    with torch.no_grad():
        assert torch.allclose(model(tokens), net(input_ids=tokens, use_cache=False).logits, atol=1e-6)


@pytest.mark.parametrize("data", [DATA, {**HRM, "norm": {"affine": False, "final": False}}])
def test_block_residuals_refuse_reused_layers_and_cycles(data):
    with pytest.raises(SpecError, match="cycles or reused layers"):
        from_data({**data, "block_residuals": {"block_layers": 2}}, check=False)
