"""The Mamba-2 mixer (kind mamba2): parameters and FLOPs by hand, proven against the torch reference in both
attention views, its decoding state and training memory by hand, and its quadratic (dual) form shown to be
the same map as the recurrent scan of the SSM and as transformers' own Mamba2Mixer on real tensors.

Formulas: Dao & Gu 2024, "Transformers are SSMs" (arXiv:2405.21060): the recurrence h_t = exp(dt_t·A)·h_{t-1}
+ dt_t·x_t·B_tᵀ, y_t = h_t·C_t + D·x_t (the selective SSM it builds on); shapes from transformers 5.23.0
Mamba2Mixer (in_proj d -> 2·d_inner + 2·G·N + H, depthwise conv1d over d_inner + 2·G·N channels, dt_bias,
A_log and D per head, MambaRMSNormGated over d_inner, out_proj d_inner -> d).
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

# A small spec: d_model 16, 4 heads of 8 (d_inner 32 = 2·16), state 6, 2 groups, kernel 3, biases on.
V, D, L, H, P, N, G, K = 40, 16, 2, 4, 8, 6, 2, 3
MIXER = {"kind": "mamba2", "n_heads": H, "head_dim": P, "state_size": N, "n_groups": G, "conv_kernel": K, "use_bias": True}
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

D_INNER = H * P  # 32
CONV_DIM = D_INNER + 2 * G * N  # x, B and C: 32 + 24 = 56
PROJ = D_INNER + CONV_DIM + H  # z, xBC and dt: 32 + 56 + 4 = 92


def hand_params() -> int:
    """Embedding and untied head; per layer one RMSNorm (d) and the mixer; a final RMSNorm."""
    in_proj = D * PROJ + PROJ  # weight and bias (use_bias)
    conv1d = CONV_DIM * 1 * K + CONV_DIM  # depthwise: (conv_dim, 1, K) and a bias (use_conv_bias default true)
    per_head = 3 * H  # dt_bias, A_log, D
    norm = D_INNER  # the gated RMSNorm's weight
    out_proj = D_INNER * D + D
    mixer = in_proj + conv1d + per_head + norm + out_proj
    return 2 * V * D + L * (D + mixer) + D


def hand_matmul_flops_per_token(seq_len: int, causal: bool) -> int:
    """2 FLOPs per multiply-add. Projections and the head per token; the depthwise conv K per channel; the
    dual form's scores C·Bᵀ (G groups × N) and values M·x (H heads × P) against seq_len keys (full square),
    or (s + 1)/2 keys on average (the causal triangle, s(s+1)/2 pairs)."""
    keys_x2 = seq_len + 1 if causal else 2 * seq_len
    mixer = 2 * D * PROJ + 2 * CONV_DIM * K + G * N * keys_x2 + H * P * keys_x2 + 2 * D_INNER * D
    return L * mixer + 2 * D * V


@pytest.fixture(scope="module")
def model():
    return from_data(DATA)


def test_parameters_by_hand(model):
    assert tally(model).params == hand_params() == 2 * 40 * 16 + 2 * (16 + 2360) + 16


@pytest.mark.parametrize("convention", ["exact", "causal"])
@pytest.mark.parametrize("seq_len", [1, 7, 16])
def test_flops_by_hand(model, convention, seq_len):
    t = tally(model, convention=convention, seq_len=seq_len)
    assert t.flops_per_token == hand_matmul_flops_per_token(seq_len, convention == "causal")


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
        "mixer.dt_bias",
        "mixer.A_log",
        "mixer.D",
        "mixer.norm",
        "mixer.scores",
        "mixer.values",
        "mixer.out_proj.weight",
        "mixer.out_proj.bias",
    } <= names
    conv = next(c for c in report.checks if c.component == "mixer.conv1d.weight")
    assert conv.torch_flops == L * 2 * CONV_DIM * K * seq_len  # FlopCounterMode's count of the convolution


def test_state_cache_and_kept_elements_by_hand(model, cli, tmp_path):
    mixer = model.layers[0].attention
    # the SSM state (heads × head_dim × state) and the conv's last K-1 inputs, per sequence and layer
    assert mixer.state_elements(model) == H * P * N + CONV_DIM * (K - 1) == 192 + 112
    assert mixer.cache_elements(model) == 0
    # in_proj's input, in_proj's output, the scan's output, the norm's fp32 rstd per group (2 × 16-bit)
    kept = D + PROJ + D_INNER + 2 * G
    assert mixer.kept_elements(model) == kept == 144

    import yaml

    path = tmp_path / "mamba2.yaml"
    path.write_text(yaml.safe_dump({"name": "toy-mamba2", **DATA}))
    code, out, err = cli("infer", str(path), "--prompt", "10", "--generate", "5", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["figures"]["kv_bytes_per_token"]["value"] == 0  # nothing grows with the context
    code, out, err = cli("train", str(path), "--tokens", "1M", "--seq-len", "16", "--recompute", "selective", "--format", "json")
    assert code == 0, err
    # Korthikanti et al. 2022 §4.1 as training.py states it: 2 bytes per kept element of each block (the FFN
    # slot's kind none keeps nothing), a 1-byte mask per sublayer output, 2 bytes per norm input
    per_token = 2 * kept + D + (2 * 0 + D) + 2 * 1 * D
    assert json.loads(out)["figures"]["activation_bytes_per_device"]["value"] == L * 16 * per_token


def _randomize(mixer, seed: int):
    """Weights away from their initial values, decays A = -exp(A_log) between -1.6 and -0.6."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in mixer.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=gen))
        mixer.A_log.copy_(torch.rand(H, generator=gen) - 0.5)


def recurrent_mixer(mixer, u: torch.Tensor) -> torch.Tensor:
    """The mixer with the SSM as a sequential scan, one token at a time, in float64 (Dao & Gu 2024; transformers'
    single-step path, mamba2_selective_state_update): from the module's parameters only."""
    w = {k: v.detach().double() for k, v in mixer.named_parameters()}
    u = u.double()
    b, s, _ = u.shape
    zxbcdt = u @ w["in_proj.weight"].T + w["in_proj.bias"]
    z, xbc, dt = zxbcdt.split([D_INNER, CONV_DIM, H], dim=-1)
    # causal depthwise conv: out_t[c] = bias[c] + Σ_j weight[c, 0, j] · in_{t-(K-1)+j}[c] (cross-correlation)
    conv = w["conv1d.bias"].expand(b, s, CONV_DIM).clone()
    for t in range(s):
        for j in range(K):
            src = t - (K - 1) + j
            if src >= 0:
                conv[:, t] += w["conv1d.weight"][:, 0, j] * xbc[:, src]
    x, bm, cm = F.silu(conv).split([D_INNER, G * N, G * N], dim=-1)
    dt = F.softplus(dt + w["dt_bias"])  # (B, s, H)
    a = -torch.exp(w["A_log"])
    state = torch.zeros(b, H, P, N, dtype=torch.float64)
    ys = []
    for t in range(s):
        xt = x[:, t].view(b, H, P)
        bt = bm[:, t].view(b, G, N).repeat_interleave(H // G, dim=1)  # head i reads group i // (H/G)
        ct = cm[:, t].view(b, G, N).repeat_interleave(H // G, dim=1)
        decay = torch.exp(dt[:, t] * a)[:, :, None, None]  # (B, H, 1, 1)
        state = decay * state + dt[:, t][:, :, None, None] * xt[..., None] * bt[:, :, None, :]
        yt = (state @ ct[..., None]).squeeze(-1) + w["D"][:, None] * xt  # (B, H, P)
        ys.append(yt.reshape(b, D_INNER))
    y = torch.stack(ys, dim=1) * F.silu(z)  # MambaRMSNormGated: gate, then RMS over groups of d_inner / G
    grouped = y.view(b, s, G, -1)
    y = (grouped * torch.rsqrt(grouped.pow(2).mean(-1, keepdim=True) + 1e-5)).view(b, s, D_INNER) * w["norm.weight"]
    return y @ w["out_proj.weight"].T + w["out_proj.bias"]


@pytest.mark.parametrize("causal", [False, True])
def test_quadratic_form_is_the_recurrence(model, causal):
    """The reference's dual form (full square, or the triangle with its blocked products) computes the same
    outputs as the recurrent scan, for a tiny random input."""
    net = build(model, device="cpu", causal=causal)
    mixer = net.layers[0].mixer
    _randomize(mixer, seed=1)
    u = torch.randn(2, 11, D, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        quadratic = mixer(u)
    recurrent = recurrent_mixer(mixer, u)
    assert torch.allclose(quadratic.double(), recurrent, atol=1e-4, rtol=1e-4), (quadratic.double() - recurrent).abs().max()
    with torch.no_grad():  # and the whole model runs on real tensors
        assert net(torch.randint(0, V, (1, 7))).shape == (1, 7, V)


def test_reference_is_transformers_mamba2_mixer(model):
    """transformers' own Mamba2Mixer (its chunked scan, chunk 4 over 11 tokens) loads the reference's
    state dict as it is and computes the same outputs."""
    from transformers import Mamba2Config
    from transformers.models.mamba2.modeling_mamba2 import Mamba2Mixer

    net = build(model, device="cpu")
    mixer = net.layers[0].mixer
    _randomize(mixer, seed=3)
    config = Mamba2Config(
        vocab_size=V,
        hidden_size=D,
        num_hidden_layers=L,
        num_heads=H,
        head_dim=P,
        state_size=N,
        n_groups=G,
        conv_kernel=K,
        expand=2,
        use_bias=True,
        use_conv_bias=True,
        chunk_size=4,
    )
    theirs = Mamba2Mixer(config, layer_idx=0)
    theirs.load_state_dict(mixer.state_dict())  # strict: the same names and shapes
    u = torch.randn(2, 11, D, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        assert torch.allclose(mixer(u), theirs(u), atol=1e-4, rtol=1e-4)


def test_heads_from_expand_and_spec_errors():
    base = dict(DATA, attention={"kind": "mamba2", "head_dim": 8, "state_size": 4})
    mixer = from_data(base).layers[0].attention
    assert (mixer.n_heads, mixer.d_inner, mixer.conv_dim) == (4, 32, 32 + 2 * 4)  # expand 2, one group
    with pytest.raises(Exception, match="groups do not divide"):
        from_data(dict(DATA, attention={**MIXER, "n_groups": 3}))
    with pytest.raises(Exception, match="expand"):
        from_data(dict(DATA, attention={**MIXER, "expand": 3}))
