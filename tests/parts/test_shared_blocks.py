"""Weight-shared blocks (model/shared.py) and Zamba's shared transformer block (blocks/zamba_shared.py): the block's
parameters counted once, at its first use, its work at every use; counted by hand, proven against the reference
torch modules and, for a small Zamba2 config, against transformers."""

import json

import pytest

from ffncalc.analysis.count import tally
from ffncalc.model import SpecError, from_data

D, V, F, R = 16, 50, 24, 4
MIXER = {"kind": "mamba2", "n_heads": 4, "head_dim": 8, "state_size": 4, "n_groups": 1, "conv_kernel": 4}
BLOCK = {"kind": "zamba_transformer", "n_heads": 4, "d_ff": F, "mlp_adapters": True, "attention_adapters": True, "adapter_rank": R}
# layers 0..5: mamba, use 0 of A, mamba, use 0 of B, use 1 of A, use 1 of B
DATA = dict(
    vocab_size=V,
    d_model=D,
    n_layers=6,
    context_length=16,
    attention=MIXER,
    ffn={"kind": "none"},
    norm={"kind": "rmsnorm", "per_layer": 1},
    positions="none",
    tie_embeddings=True,
    layers=[
        {"repeat": 1},
        {"repeat": 1, "shared": "A"},
        {"repeat": 1},
        {"repeat": 1, "shared": "B"},
        {"repeat": 1, "shared": "A"},
        {"repeat": 1, "shared": "B"},
    ],
    shared_blocks={"A": BLOCK, "B": BLOCK},
)

MAMBA = (D * (32 + 40 + 4) + 40 * 4 + 40 + 3 * 4 + 32 + 32 * D) + D  # the mixer (in_proj, conv, dt/A/D, norm, out) and its norm
SHARED = 2 * D + 3 * (2 * D) * (2 * D) + 2 * D * D + D + 3 * D * F  # input_norm, q/k/v (2d -> 4·8), o, pre_ff_norm, MLP
ADAPTER = 3 * (2 * D * R + R * 2 * D) + D * R + R * 2 * F  # one use's: q, k, v and the MLP's


def test_parameters_by_hand():
    shared = 2 * (SHARED + 2 * ADAPTER)  # two blocks, each with its two uses' adapters
    linears = 4 * D * D  # every use's own projection
    assert tally(from_data(DATA)).params == V * D + 6 * MAMBA + shared + linears + D


def test_stored_at_the_first_use_run_at_every_use():
    rows = {(r.name, r.layers): r for r in tally(from_data(DATA), seq_len=8).rows}
    q = [rows[("shared.attn.q.weight", (i, i + 1))] for i in (1, 3, 4, 5)]
    assert [r.params for r in q] == [(2 * D) ** 2, (2 * D) ** 2, 0, 0]
    assert [r.flops for r in q] == [2 * (2 * D) ** 2] * 4
    adapters = [rows[("shared.ffn.adapter.up.weight", (i, i + 1))] for i in (1, 3, 4, 5)]
    assert [r.params for r in adapters] == [2 * R * 2 * F, 2 * R * 2 * F, 0, 0]  # both uses' adapters, in the block
    assert [r.flops for r in adapters] == [2 * R * 2 * F] * 4  # one adapter a use
    linear = [rows[("shared.linear.weight", (i, i + 1))] for i in (1, 3, 4, 5)]
    assert [r.params for r in linear] == [D * D] * 4
    scores = [rows[("shared.attn.scores", (i, i + 1))].flops for i in (1, 3, 4, 5)]
    assert scores == [2 * 4 * 8 * 8] * 4  # QKᵀ at every use: 4 heads × 8 keys × head_dim 8


def test_two_flops_per_parameter_at_every_use():
    """2N: each block's weights (its norms included) run at both of its uses, but are stored once; its adapters
    and the layers' projections run once each."""
    t = tally(from_data(DATA), convention="6n")
    assert t.active == t.params  # nothing routed: every parameter is active, a shared one once
    assert t.flops_per_token == 2 * t.params + 2 * 2 * SHARED


def test_unknown_shared_block_is_refused():
    with pytest.raises(SpecError, match="no shared block named 'C'"):
        from_data({**DATA, "layers": [{"repeat": 5}, {"repeat": 1, "shared": "C"}]}, check=False)


@pytest.mark.torch
@pytest.mark.parametrize("convention", ["exact", "causal"])
@pytest.mark.parametrize("every_layer", [False, True])
def test_against_reference_modules(convention, every_layer):
    from ffncalc.analysis.verify import verify

    grouped = {**BLOCK, "n_kv_heads": 2, "attention_adapters": False}  # adapters add 2·d to q, k and v: no GQA
    rotary = {**DATA, "positions": "rotary", "shared_blocks": {"A": grouped, "B": BLOCK}}
    for data in (DATA, rotary):
        report = verify(from_data(data), seq_len=8, convention=convention, every_layer=every_layer)
        assert report.ok, report.failures


SMALL = {
    "model_type": "zamba2",
    "hidden_size": 64,
    "num_hidden_layers": 7,
    "vocab_size": 100,
    "layers_block_type": ["mamba", "hybrid", "mamba", "hybrid", "hybrid", "mamba", "hybrid"],
    "n_mamba_heads": 4,
    "mamba_d_state": 8,
    "num_attention_heads": 4,
    "num_mem_blocks": 2,
    "use_shared_attention_adapter": True,
    "use_mem_rope": True,
    "adapter_rank": 8,
    "intermediate_size": 96,
}


@pytest.mark.torch
def test_small_zamba2_against_transformers():
    """Parameters per component and run, and the FLOPs of one forward except the Mamba-2 mixers' own products
    (transformers' chunked scan) and convolutions (padded): the shared block at every use, where it runs."""
    pytest.importorskip("transformers")
    from ffncalc.analysis import hfcheck
    from ffncalc.sources import hf
    from ffncalc.sources.hf.config import Config

    c = Config(SMALL, json.dumps(SMALL), "small-zamba2")
    measured = hfcheck.measure(c, flops=True)
    report = hfcheck.check(c, measured=measured)
    assert report.ok, report.failures
    assert tally(hf.to_spec(c)).params == sum(n for _, n in measured.params)
    wrong = [
        ch
        for ch in hfcheck.check_flops(c, measured)
        if not ch.ok and not ch.component.endswith("conv1d") and ch.component != hfcheck.CORE
    ]
    assert not wrong, wrong
