"""The Mamba (v1) mixer (kind mamba): parameters and FLOPs by hand, proven against the torch reference in both
conventions, its decoding state and training memory by hand, and the reference shown to be the sequential
selective scan and transformers' own MambaMixer / FalconMambaMixer on real tensors.

Formulas: Gu & Dao 2023, "Mamba" (arXiv:2312.00752), Algorithm 2: h_t = exp(Δ_t A) ⊙ h_{t-1} + (Δ_t x_t) ⊗ B_t,
y_t = h_t C_t + D ⊙ x_t, per channel of d_inner with an N-wide state; shapes from transformers 5.23.0 MambaMixer
(in_proj d -> 2·d_inner, depthwise conv1d over d_inner, x_proj d_inner -> R + 2N without bias, dt_proj R -> d_inner
with bias, A_log (d_inner, N), D (d_inner), out_proj d_inner -> d).
"""

import json

import pytest
import torch
from torch.nn import functional as F

from ffncalc.analysis.count import tally
from ffncalc.analysis.verify import verify
from ffncalc.model import from_data
from ffncalc.model.reference import build

pytestmark = pytest.mark.torch  # reference modules, real tensors or FlopCounterMode

# A small spec: d_model 16, d_inner 40 (stated, not 2·16), state 6, dt rank 3, kernel 3, biases on.
V, D, L, DI, N, R, K = 40, 16, 2, 40, 6, 3, 3
MIXER = {"kind": "mamba", "d_inner": DI, "state_size": N, "time_step_rank": R, "conv_kernel": K, "use_bias": True}
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
    """Embedding and untied head (tie_embeddings default false in a spec); per layer one RMSNorm and the mixer;
    a final RMSNorm."""
    in_proj = D * 2 * DI + 2 * DI
    conv1d = DI * K + DI
    x_proj = DI * (R + 2 * N)
    dt_proj = R * DI + DI
    a_log, d_skip = DI * N, DI
    out_proj = DI * D + D
    mixer = in_proj + conv1d + x_proj + dt_proj + a_log + d_skip + out_proj
    return 2 * V * D + L * (D + mixer) + D


def hand_matmul_flops_per_token() -> int:
    """2 FLOPs per multiply-add: in_proj, the depthwise conv (K per channel), x_proj, dt_proj, the readout h·C
    (d_inner × N per token), out_proj, and the head. No term depends on the length or the convention."""
    mixer = 2 * (D * 2 * DI + DI * K + DI * (R + 2 * N) + R * DI + DI * N + DI * D)
    return L * mixer + 2 * D * V


@pytest.fixture(scope="module")
def model():
    return from_data(DATA)


def test_parameters_by_hand(model):
    # in_proj 1360, conv 160, x_proj 600, dt_proj 160, A_log 240, D 40, out_proj 656: 3216 per mixer
    assert tally(model).params == hand_params() == 2 * 40 * 16 + 2 * (16 + 3216) + 16


@pytest.mark.parametrize("convention", ["exact", "causal"])
@pytest.mark.parametrize("seq_len", [1, 7, 16])
def test_flops_by_hand(model, convention, seq_len):
    t = tally(model, convention=convention, seq_len=seq_len)
    assert t.flops_per_token == hand_matmul_flops_per_token() == 2 * 2 * (1280 + 120 + 600 + 120 + 240 + 640) + 2 * 16 * 40


@pytest.mark.parametrize("convention", ["exact", "causal"])
@pytest.mark.parametrize("seq_len", [1, 5, 9, 16])
def test_verify_against_torch(model, convention, seq_len):
    report = verify(model, seq_len=seq_len, convention=convention, every_layer=True)
    assert report.ok, report.failures
    names = {c.component for c in report.checks}
    assert {
        "mixer.in_proj.weight",
        "mixer.in_proj.bias",
        "mixer.conv1d.weight",
        "mixer.conv1d.bias",
        "mixer.x_proj.weight",
        "mixer.dt_proj.weight",
        "mixer.dt_proj.bias",
        "mixer.A_log",
        "mixer.D",
        "mixer.readout",
        "mixer.out_proj.weight",
        "mixer.out_proj.bias",
    } <= names
    conv = next(c for c in report.checks if c.component == "mixer.conv1d.weight")
    assert conv.torch_flops == L * 2 * DI * K * seq_len  # FlopCounterMode's count of the convolution
    readout = next(c for c in report.checks if c.component == "mixer.readout")
    assert readout.torch_flops == L * 2 * DI * N * seq_len


def test_falcon_norms_add_no_parameters_or_matmuls(model):
    falcon = from_data(dict(DATA, attention={**MIXER, "bcdt_norm": True}))
    assert tally(falcon).params == tally(model).params
    assert tally(falcon, seq_len=8).flops_per_token == tally(model, seq_len=8).flops_per_token
    report = verify(falcon, seq_len=6)
    assert report.ok, report.failures


def test_state_cache_and_kept_elements_by_hand(model, cli, tmp_path):
    mixer = model.layers[0].attention
    # the SSM state (d_inner × state) and the conv's last K-1 inputs over d_inner channels, per sequence and layer
    assert mixer.state_elements(model) == DI * N + DI * (K - 1) == 240 + 80
    assert mixer.cache_elements(model) == 0
    # MambaInnerFn: in_proj's input d, xz 2·d_inner, x_dbl R + 2N, copies of B and C, the scan's output d_inner
    kept = D + 2 * DI + (R + 2 * N) + 2 * N + DI
    assert mixer.kept_elements(model) == kept == 16 + 80 + 15 + 12 + 40

    import yaml

    path = tmp_path / "mamba.yaml"
    path.write_text(yaml.safe_dump({"name": "toy-mamba", **DATA}))
    code, out, err = cli("infer", str(path), "--prompt", "10", "--generate", "5", "--format", "json")
    assert code == 0, err
    figures = json.loads(out)["figures"]
    assert figures["kv_bytes_per_token"]["value"] == 0  # nothing grows with the context
    # decoding: every step costs the same matmul FLOPs as a token of the prefill (bf16 state: 2 bytes)
    assert figures["decode_flops"]["value"] == 5 * hand_matmul_flops_per_token()


def _randomize(mixer, seed: int):
    """Weights away from their initial values, decays A = -exp(A_log) between -1.6 and -0.6."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in mixer.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=gen))
        mixer.A_log.copy_(torch.rand(mixer.A_log.shape, generator=gen) - 0.5)


def sequential_mixer(mixer, u: torch.Tensor, bcdt_norm: bool = False) -> torch.Tensor:
    """The mixer as the selective scan of Algorithm 2, one token and one channel-state pair at a time in float64,
    from the module's parameters only."""
    w = {k: v.detach().double() for k, v in mixer.named_parameters()}
    u = u.double()
    b, s, _ = u.shape
    xz = u @ w["in_proj.weight"].T + w["in_proj.bias"]
    x, z = xz[..., :DI], xz[..., DI:]
    conv = w["conv1d.bias"].expand(b, s, DI).clone()
    for t in range(s):
        for j in range(K):
            src = t - (K - 1) + j
            if src >= 0:
                conv[:, t] += w["conv1d.weight"][:, 0, j] * x[:, src]
    x = F.silu(conv)
    dbc = x @ w["x_proj.weight"].T
    dt, bm, cm = dbc[..., :R], dbc[..., R : R + N], dbc[..., R + N :]
    if bcdt_norm:
        rms = lambda v: v / torch.sqrt(v.pow(2).mean(-1, keepdim=True) + 1e-6)  # noqa: E731
        dt, bm, cm = rms(dt), rms(bm), rms(cm)
    delta = F.softplus(dt @ w["dt_proj.weight"].T + w["dt_proj.bias"])  # (b, s, DI)
    a = -torch.exp(w["A_log"])  # (DI, N)
    y = torch.zeros(b, s, DI, dtype=torch.float64)
    for bi in range(b):
        h = torch.zeros(DI, N, dtype=torch.float64)
        for t in range(s):
            for c in range(DI):
                for n in range(N):
                    h[c, n] = torch.exp(delta[bi, t, c] * a[c, n]) * h[c, n] + delta[bi, t, c] * x[bi, t, c] * bm[bi, t, n]
            y[bi, t] = (h * cm[bi, t][None, :]).sum(-1) + w["D"] * x[bi, t]
    y = y * F.silu(z)
    return y @ w["out_proj.weight"].T + w["out_proj.bias"]


@pytest.mark.parametrize("bcdt_norm", [False, True])
def test_reference_is_the_sequential_scan(bcdt_norm):
    spec = from_data(dict(DATA, attention={**MIXER, "bcdt_norm": bcdt_norm}))
    net = build(spec, device="cpu")
    mixer = net.layers[0].mixer
    _randomize(mixer, seed=1)
    u = torch.randn(2, 9, D, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ours = mixer(u)
    ref = sequential_mixer(mixer, u, bcdt_norm)
    assert torch.allclose(ours.double(), ref, atol=1e-4, rtol=1e-4), (ours.double() - ref).abs().max()
    with torch.no_grad():  # and the whole model runs on real tensors
        assert net(torch.randint(0, V, (1, 7))).shape == (1, 7, V)


@pytest.mark.parametrize("falcon", [False, True])
def test_reference_is_transformers_mixer(falcon):
    """transformers' own MambaMixer (FalconMambaMixer) loads the reference's state dict as it is and computes the
    same outputs with its torch scan."""
    from transformers import FalconMambaConfig, MambaConfig
    from transformers.models.falcon_mamba.modeling_falcon_mamba import FalconMambaMixer
    from transformers.models.mamba.modeling_mamba import MambaMixer

    spec = from_data(dict(DATA, attention={**MIXER, "bcdt_norm": falcon}))
    mixer = build(spec, device="cpu").layers[0].mixer
    _randomize(mixer, seed=3)
    cfg_cls, mixer_cls = (FalconMambaConfig, FalconMambaMixer) if falcon else (MambaConfig, MambaMixer)
    config = cfg_cls(
        vocab_size=V,
        hidden_size=D,
        num_hidden_layers=L,
        intermediate_size=DI,
        state_size=N,
        time_step_rank=R,
        conv_kernel=K,
        use_bias=True,
        use_conv_bias=True,
        use_associative_scan=False,
    )
    # initialize_mixer_weights=False: FalconMambaMixer's own init reads dt_layernorm before creating it
    theirs = mixer_cls(config, layer_idx=0, initialize_mixer_weights=False)
    theirs.load_state_dict(mixer.state_dict())  # strict: the same names and shapes
    u = torch.randn(2, 11, D, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        assert torch.allclose(mixer(u), theirs(u), atol=1e-4, rtol=1e-4)


def test_defaults_from_d_model():
    mixer = from_data(dict(DATA, attention={"kind": "mamba"})).layers[0].attention
    assert (mixer.d_inner, mixer.time_step_rank, mixer.state_size, mixer.conv_kernel) == (32, 1, 16, 4)
