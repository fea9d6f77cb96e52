"""Zamba's multi-head Mamba mixer (kind mamba with n_heads) and the zamba family: parameters and FLOPs by hand,
the reference module against the torch verification and against transformers' ZambaMambaMixer on real tensors, and a
small Zamba config against what transformers builds.

Shapes from transformers 5.23.0 ZambaMambaMixer: in_proj d -> 2·d_inner (x and z interleaved), a depthwise conv over
d_inner, per head x_proj_weight (H, R + 2N, d_inner / H) and dt_proj_weight (H, d_inner / H, R) with dt_proj_bias
(H, d_inner / H), A_log (H, d_inner / H, N), D (H, d_inner / H), out_proj d_inner -> d.
"""

import json

import pytest

from ffncalc.analysis.count import tally
from ffncalc.model import SpecError, from_data

V, D, L, DI, H, N, R, K = 40, 16, 2, 32, 4, 6, 3, 3
HD = DI // H
MIXER = {"kind": "mamba", "n_heads": H, "d_inner": DI, "state_size": N, "time_step_rank": R, "conv_kernel": K, "use_bias": True}
DATA = dict(
    vocab_size=V,
    d_model=D,
    n_layers=L,
    context_length=32,
    positions="none",
    attention=MIXER,
    ffn={"kind": "none"},
    norm={"per_layer": 1},
)


def hand_params() -> int:
    """Per head x_proj (R + 2N)·HD and dt_proj R·HD + HD: over H heads, one x_proj and one dt_proj of d_inner."""
    in_proj = D * 2 * DI + 2 * DI
    conv1d = DI * K + DI
    x_proj = H * (R + 2 * N) * HD
    dt_proj = H * (HD * R + HD)
    a_log, d_skip = H * HD * N, H * HD
    out_proj = DI * D + D
    return 2 * V * D + L * (D + in_proj + conv1d + x_proj + dt_proj + a_log + d_skip + out_proj) + D


def hand_matmul_flops_per_token() -> int:
    """in_proj, the conv (K per channel), each head's x_proj and dt_proj, each head's readout h·C (HD × N), out_proj,
    and the head."""
    mixer = 2 * (D * 2 * DI + DI * K + H * HD * (R + 2 * N) + H * R * HD + H * HD * N + DI * D)
    return L * mixer + 2 * D * V


def test_parameters_and_flops_by_hand():
    model = from_data(DATA)
    assert tally(model).params == hand_params()
    for seq_len in (1, 9):
        assert tally(model, seq_len=seq_len).flops_per_token == hand_matmul_flops_per_token()
    # the same counts as one x_proj and one dt_proj over d_inner (MambaMixer): the heads only split them
    single = from_data(dict(DATA, attention={k: v for k, v in MIXER.items() if k != "n_heads"}))
    assert tally(single).params == tally(model).params
    assert tally(single, seq_len=9).flops_per_token == tally(model, seq_len=9).flops_per_token


def test_state_and_kept_elements_by_hand():
    model = from_data(DATA)
    mixer = model.layers[0].attention
    assert mixer.state_elements(model) == DI * N + DI * (K - 1)
    # in_proj's input and its output xz (the scans' z are views of it), the conv's input copy and output, x_proj's
    # output (H·(R + 2N): the scans' B and C are views of it), delta, the scans' output before the gate and
    # out_proj's input; the scans' fp32 chunk states a sequence (2N a channel, 4 bytes each)
    assert mixer.kept_elements(model) == D + 2 * DI + DI + DI + H * (R + 2 * N) + DI + DI + DI
    assert mixer.score_bytes(model, 16, True) == DI * 2 * N * 4


def test_heads_must_divide_d_inner_and_take_no_bcdt_norms():
    with pytest.raises(SpecError, match="heads do not divide"):
        from_data(dict(DATA, attention={**MIXER, "n_heads": 3}), check=False)
    with pytest.raises(SpecError, match="not defined with heads"):
        from_data(dict(DATA, attention={**MIXER, "bcdt_norm": True}), check=False)


@pytest.mark.torch
@pytest.mark.parametrize("convention", ["exact", "causal"])
@pytest.mark.parametrize("seq_len", [1, 7])
def test_verify_against_torch(convention, seq_len):
    from ffncalc.analysis.verify import verify

    report = verify(from_data(DATA), seq_len=seq_len, convention=convention, every_layer=True)
    assert report.ok, report.failures
    x_proj = next(c for c in report.checks if c.component == "mixer.x_proj.weight")
    assert x_proj.torch_flops == L * 2 * H * HD * (R + 2 * N) * seq_len


@pytest.mark.torch
def test_reference_is_transformers_mixer():
    """transformers' ZambaMambaMixer loads the reference's parameters (per-head x_proj and dt_proj renamed to its
    x_proj_weight, dt_proj_weight and dt_proj_bias) and computes the same outputs with its torch scan."""
    import torch
    from transformers import ZambaConfig
    from transformers.models.zamba.modeling_zamba import ZambaMambaMixer

    from ffncalc.model.reference import build

    mixer = build(from_data(DATA), device="cpu").layers[0].mixer
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for p in mixer.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=gen))
        mixer.A_log.copy_(torch.rand(mixer.A_log.shape, generator=gen) - 0.5)
    config = ZambaConfig(
        vocab_size=V,
        hidden_size=D,
        num_hidden_layers=3,
        mamba_expand=DI // D,
        n_mamba_heads=H,
        mamba_d_state=N,
        mamba_dt_rank=R,
        mamba_d_conv=K,
        mamba_proj_bias=True,
        use_associative_scan=False,
        num_attention_heads=2,
        num_key_value_heads=2,
    )
    theirs = ZambaMambaMixer(config, layer_idx=0)
    names = {"x_proj.weight": "x_proj_weight", "dt_proj.weight": "dt_proj_weight", "dt_proj.bias": "dt_proj_bias"}
    theirs.load_state_dict({names.get(k, k): v for k, v in mixer.state_dict().items()})  # strict: names and shapes
    u = torch.randn(2, 11, D, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        assert torch.allclose(mixer(u), theirs(u), atol=1e-4, rtol=1e-4)


SMALL = {
    "model_type": "zamba",
    "hidden_size": 32,
    "num_hidden_layers": 8,
    "vocab_size": 100,
    "n_mamba_heads": 4,
    "mamba_d_state": 8,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 48,
    "attn_layer_period": 3,
    "attn_layer_offset": 1,
    "mamba_proj_bias": True,
}


@pytest.mark.torch
@pytest.mark.parametrize("legacy", [False, True])
def test_small_zamba_against_transformers(legacy):
    """Parameters per component and run (the shared block stored once, at its first use), and the FLOPs of one
    forward except the mixers' own scan products and convolutions."""
    pytest.importorskip("transformers")
    from ffncalc.analysis import hfcheck
    from ffncalc.sources import hf
    from ffncalc.sources.hf.config import Config

    data = dict(SMALL)
    if legacy:  # layer types stated, in the legacy names a released config.json uses
        data["layers_block_type"] = ["mamba", "hybrid", "mamba", "hybrid", "hybrid", "mamba"]
        data["num_hidden_layers"] = 6
    c = Config(data, json.dumps(data), "small-zamba")
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


def test_attention_width_must_be_the_concatenation():
    from ffncalc.errors import InputError
    from ffncalc.sources import hf
    from ffncalc.sources.hf.config import Config

    data = {**SMALL, "attention_hidden_size": 48}
    with pytest.raises(InputError, match="attention_hidden_size"):
        hf.to_spec(Config(data, json.dumps(data), "wide"))
    # transformers refuses stated layer types of another count than num_hidden_layers, and fewer than 3 layers
    data = {**SMALL, "layers_block_type": ["mamba", "hybrid"]}
    with pytest.raises(InputError, match="num_hidden_layers"):
        hf.to_spec(Config(data, json.dumps(data), "short"))
    data = {**SMALL, "num_hidden_layers": 2}
    with pytest.raises(InputError, match="num_hidden_layers"):
        hf.to_spec(Config(data, json.dumps(data), "two"))
