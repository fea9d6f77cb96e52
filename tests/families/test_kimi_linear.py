"""Kimi Delta Attention (kind kda) and Kimi Linear (kimi_linear): parameters and FLOPs by hand, proven against the
torch reference in both attention views; the decoding state by hand; and the reference's chunkwise form shown, on
real tensors, to be the step-by-step recurrence and to be transformers' own KimiLinearDeltaAttention.

Formulas: Kimi Team 2025, "Kimi Linear" (arXiv:2510.26692) §3: S_t = (I − β_t k_t k_tᵀ)·Diag(α_t)·S_{t-1} +
β_t·k_t·v_tᵀ, o_t = S_tᵀ q_t, α_t one decay per key channel, chunkwise in §3.2 (the WY/UT form of Yang et al. 2024b,
arXiv:2406.06484 §3); shapes from transformers 5.23.0 KimiLinearDeltaAttention (q_proj, k_proj, v_proj d -> H·dk, a
bias-free depthwise conv1d over 3·H·dk channels, b_proj d -> H, the forget gate's f_a_proj d -> dk, f_b_proj dk ->
H·dk, dt_bias H·dk and A_log H, g_a_proj d -> dk, g_b_proj dk -> H·dk, KimiLinearRMSNormGated over dk, o_proj H·dk
-> d).

Kimi-Linear-48B-A3B's layout comes from tests/hf_configs/kimi-linear-48b-a3b-instruct-nvfp4.json (see
hf_configs.sources.json).
"""

import json
from pathlib import Path

import pytest
import torch
from torch.nn import functional as F

from ffncalc.analysis.count import tally
from ffncalc.analysis.hfcheck import Measured
from ffncalc.analysis.verify import verify
from ffncalc.model import from_data
from ffncalc.model.reference import build
from ffncalc.sources import hf

pytestmark = pytest.mark.torch  # reference modules, real tensors or FlopCounterMode

HERE = Path(__file__).resolve().parents[1]
KIMI_LINEAR = HERE / "hf_configs" / "kimi-linear-48b-a3b-instruct-nvfp4.json"

# A small spec: d_model 16; 2 heads of 4, kernel 3, chunks of at most 4 tokens.
V, D, L = 40, 16, 2
H, DK, K, CHUNK = 2, 4, 3, 4
MIXER = {"kind": "kda", "n_heads": H, "head_dim": DK, "conv_kernel": K, "chunk_size": CHUNK}
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

WIDTH = H * DK  # 8: q, k, v, the decay and the output each
CONV_DIM = 3 * WIDTH  # 24
# The chunk length: the largest divisor of seq_len that is at most 4, by hand.
CHUNK_OF = {1: 1, 2: 2, 6: 3, 8: 4, 11: 1, 12: 4, 16: 4}


def hand_params() -> int:
    """Embedding and untied head; per layer one RMSNorm (d) and the mixer; a final RMSNorm."""
    mixer = (
        3 * D * WIDTH  # q, k, v, no bias: 384
        + CONV_DIM * 1 * K  # depthwise conv1d (24, 1, 3), no bias: 72
        + D * H  # b_proj: 32
        + D * DK
        + DK * WIDTH  # the forget gate's f_a, f_b: 64 + 32
        + WIDTH
        + H  # dt_bias (a channel each), A_log (a head each): 10
        + D * DK
        + DK * WIDTH  # the output gate's g_a, g_b: 64 + 32
        + DK  # the gated RMSNorm's weight, shared by the heads: 4
        + WIDTH * D
    )  # o_proj: 128
    return 2 * V * D + L * (D + mixer) + D


def hand_matmul_flops_per_token(seq_len: int, causal: bool) -> int:
    """2 FLOPs per multiply-add. Projections and the head per token; the depthwise conv K per channel; inside each
    chunk of c tokens, per head, K_βKᵀ and QKᵀ over dk, the UT substitution over 2·dk and PV' over dk, against c keys
    (the square) or (c + 1)/2 on average (the triangle with its diagonal); and W·S, Q·S and Kᵀ·V' against the dk × dk
    state once per token."""
    c = CHUNK_OF[seq_len]
    keys_x2 = c + 1 if causal else 2 * c
    chunk = H * (DK + DK + 2 * DK + DK) * keys_x2
    state = 3 * 2 * H * DK * DK
    projections = 3 * D * WIDTH + D * H + 2 * (D * DK + DK * WIDTH) + WIDTH * D
    mixer = 2 * projections + 2 * CONV_DIM * K + chunk + state
    return L * mixer + 2 * D * V


@pytest.fixture(scope="module")
def model():
    return from_data(DATA)


def test_parameters_by_hand(model):
    assert tally(model).params == hand_params() == 2 * 40 * 16 + 2 * (16 + 822) + 16


@pytest.mark.parametrize("convention", ["exact", "causal"])
@pytest.mark.parametrize("seq_len", [1, 6, 11, 12])
def test_flops_by_hand(model, convention, seq_len):
    assert tally(model, convention=convention, seq_len=seq_len).flops_per_token == hand_matmul_flops_per_token(
        seq_len, convention == "causal"
    )


@pytest.mark.parametrize("convention", ["exact", "causal"])
@pytest.mark.parametrize("seq_len", [1, 2, 6, 8, 11, 16])
def test_verify_against_torch(model, convention, seq_len):
    report = verify(model, seq_len=seq_len, convention=convention, every_layer=True)
    assert report.ok, report.failures
    names = {c.component for c in report.checks}
    assert {
        "attn.q.weight",
        "attn.k.weight",
        "attn.v.weight",
        "attn.conv1d.weight",
        "attn.b.weight",
        "attn.f_a.weight",
        "attn.f_b.weight",
        "attn.dt_bias",
        "attn.A_log",
        "attn.g_a.weight",
        "attn.g_b.weight",
        "attn.o_norm",
        "attn.o.weight",
        "attn.kkt",
        "attn.qk",
        "attn.solve",
        "attn.values",
        "attn.state_correct",
        "attn.state_read",
        "attn.state_write",
    } <= names
    conv = next(c for c in report.checks if c.component == "attn.conv1d.weight")
    assert conv.torch_flops == L * 2 * CONV_DIM * K * seq_len  # FlopCounterMode's count of the convolution
    state = next(c for c in report.checks if c.component == "attn.state_read")
    assert state.torch_flops == L * 2 * H * DK * DK * seq_len  # the same in both views: one state per token


def test_state_cache_and_kept_elements_by_hand(model):
    mixer = model.layers[0].attention
    # S (dk × dk in every head) and the conv's last K-1 inputs, per sequence and layer
    assert mixer.state_elements(model) == H * DK * DK + CONV_DIM * (K - 1) == 32 + 48
    assert mixer.cache_elements(model) == 0
    # the input; the conv's input (causal-conv1d keeps it alone); q and k after the kernel's l2norm and their fp32
    # rstd; v made contiguous; the decay's fp32 running sum and f's raw output (the gate in the kernel); β; Aqk and
    # Akk (a row of chunk_size each per head); f_a's and g_a's outputs; the kernel's output, the gate z and the norm's
    # fp32 rstd; o_proj's input
    kept = D + CONV_DIM + 2 * WIDTH + 2 * 2 * H + WIDTH + 2 * WIDTH + WIDTH + H + 2 * H * CHUNK + 2 * DK + 2 * WIDTH + 2 * H + WIDTH
    assert mixer.kept_elements(model) == kept == 16 + 24 + 16 + 8 + 8 + 16 + 8 + 2 + 16 + 8 + 16 + 4 + 8
    assert mixer.describe() == "KDA 2 heads × 4"


def _randomize(mixer, seed: int):
    """Weights away from their initial values; decays −exp(A_log)·softplus(·) of moderate size."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in mixer.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=gen))
        mixer.A_log.copy_(torch.rand(H, generator=gen) - 0.5)


def recurrent_mixer(mixer, x: torch.Tensor) -> torch.Tensor:
    """The mixer with the delta rule one token at a time, in float64 (the paper's recurrence; transformers'
    recurrent_kimi_delta_attention), from the module's parameters only."""
    w = {k: v.detach().double() for k, v in mixer.named_parameters()}
    x = x.double()
    b, s, _ = x.shape
    mixed = torch.cat([x @ w["q.weight"].T, x @ w["k.weight"].T, x @ w["v.weight"].T], dim=-1)
    # causal depthwise conv: out_t[c] = Σ_j weight[c, 0, j] · in_{t-(K-1)+j}[c], then silu
    conv = torch.zeros(b, s, CONV_DIM, dtype=torch.float64)
    for t in range(s):
        for j in range(K):
            if t - (K - 1) + j >= 0:
                conv[:, t] += w["conv1d.weight"][:, 0, j] * mixed[:, t - (K - 1) + j]
    q, k, v = (t.view(b, s, H, DK) for t in F.silu(conv).split([WIDTH] * 3, dim=-1))
    q = F.normalize(q, dim=-1) / DK**0.5
    k = F.normalize(k, dim=-1)
    beta = torch.sigmoid(x @ w["b.weight"].T)  # (B, s, H)
    a = ((x @ w["f_a.weight"].T) @ w["f_b.weight"].T + w["dt_bias"]).view(b, s, H, DK)
    g = -torch.exp(w["A_log"])[:, None] * F.softplus(a)  # (B, s, H, dk): a decay per key channel
    state = torch.zeros(b, H, DK, DK, dtype=torch.float64)
    out = []
    for t in range(s):
        state = state * torch.exp(g[:, t])[..., None]  # Diag(α_t)·S: row c scaled by channel c's decay
        remembered = (state * k[:, t, :, :, None]).sum(-2)  # Sᵀk: (B, H, dv)
        delta = (v[:, t] - remembered) * beta[:, t, :, None]
        state = state + k[:, t, :, :, None] * delta[:, :, None, :]
        out.append((state * q[:, t, :, :, None]).sum(-2))  # Sᵀq
    o = torch.stack(out, dim=1)  # (B, s, H, dv)
    gate = ((x @ w["g_a.weight"].T) @ w["g_b.weight"].T).view(b, s, H, DK)
    o = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + 1e-6) * w["o_norm.weight"] * torch.sigmoid(gate)
    return o.reshape(b, s, WIDTH) @ w["o.weight"].T


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seq_len", [6, 11, 12])  # chunks of 3, of 1 and of 4 tokens
def test_chunkwise_form_is_the_recurrence(model, causal, seq_len):
    """The reference's chunkwise form (full squares, or triangles with their blocked products) computes the same
    outputs as the step-by-step recurrence, for a tiny random input."""
    net = build(model, device="cpu", causal=causal)
    mixer = net.layers[0].attn
    _randomize(mixer, seed=1)
    x = torch.randn(2, seq_len, D, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        chunked = mixer(x)
    recurrent = recurrent_mixer(mixer, x)
    assert torch.allclose(chunked.double(), recurrent, atol=1e-4, rtol=1e-4), (chunked.double() - recurrent).abs().max()
    with torch.no_grad():  # and the whole model runs on real tensors
        assert net(torch.randint(0, V, (1, 7))).shape == (1, 7, V)


# our parameter names -> KimiLinearDeltaAttention's
RENAME = {
    "q.weight": "q_proj.weight",
    "k.weight": "k_proj.weight",
    "v.weight": "v_proj.weight",
    "conv1d.weight": "conv1d.weight",
    "b.weight": "b_proj.weight",
    "f_a.weight": "forget_gate.f_a_proj.weight",
    "f_b.weight": "forget_gate.f_b_proj.weight",
    "dt_bias": "forget_gate.dt_bias",
    "A_log": "forget_gate.A_log",
    "g_a.weight": "g_a_proj.weight",
    "g_b.weight": "g_b_proj.weight",
    "o_norm.weight": "o_norm.weight",
    "o.weight": "o_proj.weight",
}


@pytest.mark.parametrize("seq_len", [6, 12])
def test_reference_is_transformers_kimi_delta_attention(model, seq_len):
    """transformers' own KimiLinearDeltaAttention (its torch fallback: chunks of 64, the UT inverse by rows) loads
    the reference's state dict, renamed, and computes the same outputs; its A_log is the same H values as
    (1, 1, H, 1)."""
    from transformers import KimiLinearConfig
    from transformers.models.kimi_linear.modeling_kimi_linear import KimiLinearDeltaAttention

    mixer = build(model, device="cpu").layers[0].attn
    _randomize(mixer, seed=3)
    config = KimiLinearConfig(
        vocab_size=V,
        hidden_size=D,
        num_hidden_layers=1,
        rms_norm_eps=1e-6,
        pad_token_id=None,
        bos_token_id=None,
        eos_token_id=None,
        linear_attn_config={"num_heads": H, "head_dim": DK, "short_conv_kernel_size": K, "kda_layers": [1], "full_attn_layers": []},
    )
    theirs = KimiLinearDeltaAttention(config, layer_idx=0)
    state = {RENAME[name]: tensor for name, tensor in mixer.state_dict().items()}
    state["forget_gate.A_log"] = state["forget_gate.A_log"].view(1, 1, H, 1)
    theirs.load_state_dict(state)  # strict: every name and shape accounted for
    x = torch.randn(2, seq_len, D, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        assert torch.allclose(mixer(x), theirs(x), atol=1e-5, rtol=1e-4), (mixer(x) - theirs(x)).abs().max()


def test_kimi_linear_48b_parameters_by_hand():
    """Every layer of Kimi-Linear-48B-A3B written out (d 2304, 27 layers: 20 KDA layers of 32 heads × 128 and 7 MLA
    layers by linear_attn_config; the first layer's MLP dense, the rest mixtures of 256 experts)."""
    d, vocab = 2304, 163840
    kda = (
        3 * d * 32 * 128  # q_proj, k_proj, v_proj: 28,311,552
        + 3 * 32 * 128 * 4  # conv1d, 12,288 channels × kernel 4: 49,152
        + d * 32  # b_proj
        + d * 128
        + 128 * 32 * 128  # f_a_proj, f_b_proj
        + 32 * 128
        + 32  # dt_bias (a channel each), A_log (a head each)
        + d * 128
        + 128 * 32 * 128  # g_a_proj, g_b_proj
        + 128  # o_norm over head_dim
        + 32 * 128 * d
    )  # o_proj: 9,437,184
    assert kda == 39_514_272
    mla = (
        d * 32 * (128 + 64)  # q_proj (q_lora_rank null): 14,155,776
        + d * (512 + 64)
        + 512  # kv_a_proj_with_mqa and kv_a_layernorm
        + 512 * 32 * (128 + 128)  # kv_b_proj: 4,194,304
        + 32 * 128 * d
    )  # o_proj
    assert mla == 29_114_880
    moe = 256 * d + 256 * 3 * d * 1024 + 3 * d * 1024  # the router, 256 SwiGLU experts of 1024, one shared
    assert moe == 1_819_607_040
    dense = 3 * d * 9216
    total = 20 * kda + 7 * mla + 26 * moe + dense + 27 * 2 * d + 2 * vocab * d + d
    assert total == 49_122_675_072
    label, spec = hf.load(KIMI_LINEAR)
    assert tally(spec).params == total
    truth = json.loads((HERE / "hf_truth" / "kimi-linear-48b-a3b-instruct-nvfp4.json").read_text())
    assert sum(n for _, n in Measured.from_record(truth).params) == total  # what transformers 5.23.0 instantiates
    kinds = [layer.attention.kind for layer in spec.layers]
    assert kinds == (["kda"] * 3 + ["mla"]) * 6 + ["kda"] * 2 + ["mla"]  # full_attn_layers 4, 8, ..., 24 and 27
    assert spec.positions == "none"  # NoPE: the MLA layers take no rotary
    assert [layer.ffn.kind for layer in spec.layers] == ["gated"] + ["moe"] * 26


def test_kimi_linear_48b_state_and_cache_by_hand():
    """Decoding: the 7 MLA layers cache the latent and the rotary key part (512 + 64) per token; the 20 KDA layers
    keep a 128 × 128 state in each of 32 heads and the conv's last 3 inputs of 12,288 channels."""
    _, spec = hf.load(KIMI_LINEAR)
    assert sum(layer.attention.cache_elements(spec) for layer in spec.layers) == 7 * (512 + 64)
    assert (
        sum(layer.attention.state_elements(spec) for layer in spec.layers)
        == 20 * (32 * 128 * 128 + 3 * 32 * 128 * (4 - 1))
        == 11_223_040
    )


def test_layer_types_by_default_and_stated():
    """Without linear_attn_config's lists, layer i > 0 with i % 4 == 0 is full attention (KimiLinearConfig); a
    stated layer_types wins, and any type but full_attention is a KDA layer."""
    base = json.loads(KIMI_LINEAR.read_text())
    del base["linear_attn_config"]["full_attn_layers"]
    spec = hf.to_spec(hf.Config({**base, "num_hidden_layers": 9}, "", "test"))
    assert [layer.attention.kind for layer in spec.layers] == ["kda"] * 4 + ["mla"] + ["kda"] * 3 + ["mla"]
    stated = {**base, "num_hidden_layers": 3, "layer_types": ["full_attention", "linear_attention", "other"]}
    spec = hf.to_spec(hf.Config(stated, "", "test"))
    assert [layer.attention.kind for layer in spec.layers] == ["mla", "kda", "kda"]
