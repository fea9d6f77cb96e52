"""Gated DeltaNet (kind gated_deltanet), gated attention (mha gate) and Qwen3-Next (qwen3_next): parameters and FLOPs
by hand, proven against the torch reference in both attention views; the decoding state by hand for Qwen3-Next
80B-A3B; and the reference's chunkwise form shown, on real tensors, to be the step-by-step recurrence and to be
transformers' own Qwen3NextGatedDeltaNet and Qwen3NextAttention.

Formulas: Yang, Kautz & Hatamizadeh 2024, "Gated Delta Networks" (arXiv:2412.06464): S_t = e^{g_t}·S_{t-1} +
β_t·k_t·(v_t − e^{g_t}·S_{t-1}ᵀk_t)ᵀ, o_t = S_tᵀq_t (eq. 10), chunkwise in §3.3 (the WY/UT form of Yang et al.
2024b, arXiv:2406.06484 §3); shapes from transformers 5.23.0 Qwen3NextGatedDeltaNet (in_proj_qkvz d -> 2·Hk·dk +
2·H·dv, in_proj_ba d -> 2·H, a bias-free depthwise conv1d over 2·Hk·dk + H·dv channels, dt_bias and A_log per value
head, Qwen3NextRMSNormGated over dv, out_proj H·dv -> d) and Qwen3NextAttention (q_proj d -> 2·heads·head_dim).

Qwen3-Next-80B-A3B-Thinking's config.json (tests/hf_configs/qwen3-next-80b-a3b-thinking.json) is a byte copy of
https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Thinking/blob/main/config.json as stored in ai-dynamo/aiconfigurator,
src/aiconfigurator/model_configs/Qwen--Qwen3-Next-80B-A3B-Thinking_config.json (commit 1b7cfb10a6fa), 1,238 bytes.
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
QWEN3_NEXT = HERE / "hf_configs" / "qwen3-next-80b-a3b-thinking.json"

# A small spec: d_model 16; 2 query/key heads of 4, 4 value heads of 3 (each key head serves 2), kernel 3, chunks of
# at most 4 tokens.
V, D, L = 40, 16, 2
HK, DK, H, DV, K, CHUNK = 2, 4, 4, 3, 3, 4
MIXER = {
    "kind": "gated_deltanet",
    "n_key_heads": HK,
    "key_head_dim": DK,
    "n_value_heads": H,
    "value_head_dim": DV,
    "conv_kernel": K,
    "chunk_size": CHUNK,
}
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

KEY_DIM, VALUE_DIM = HK * DK, H * DV  # 8, 12
CONV_DIM = 2 * KEY_DIM + VALUE_DIM  # q, k, v: 28
QKVZ, BA = 2 * KEY_DIM + 2 * VALUE_DIM, 2 * H  # 40, 8
# The chunk length: the largest divisor of seq_len that is at most 4, by hand.
CHUNK_OF = {1: 1, 2: 2, 6: 3, 8: 4, 11: 1, 12: 4, 16: 4}


def hand_params() -> int:
    """Embedding and untied head; per layer one RMSNorm (d) and the mixer; a final RMSNorm."""
    mixer = (
        D * QKVZ  # in_proj_qkvz, no bias: 640
        + D * BA  # in_proj_ba, no bias: 128
        + CONV_DIM * 1 * K  # depthwise conv1d (28, 1, 3), no bias: 84
        + H
        + H  # dt_bias, A_log: 8
        + DV  # the gated RMSNorm's weight, shared by the value heads: 3
        + VALUE_DIM * D
    )  # out_proj, no bias: 192
    return 2 * V * D + L * (D + mixer) + D


def hand_matmul_flops_per_token(seq_len: int, causal: bool) -> int:
    """2 FLOPs per multiply-add. Projections and the head per token; the depthwise conv K per channel; inside each
    chunk of c tokens, per value head, K_βKᵀ and QKᵀ over dk, the UT substitution over dk + dv and PV' over dv,
    against c keys (the square) or (c + 1)/2 on average (the triangle with its diagonal); and W·S, Q·S and Kᵀ·V'
    against the dk × dv state once per token."""
    c = CHUNK_OF[seq_len]
    keys_x2 = c + 1 if causal else 2 * c
    chunk = H * (DK + DK + (DK + DV) + DV) * keys_x2
    state = 3 * 2 * H * DK * DV
    mixer = 2 * D * (QKVZ + BA) + 2 * CONV_DIM * K + chunk + state + 2 * VALUE_DIM * D
    return L * mixer + 2 * D * V


@pytest.fixture(scope="module")
def model():
    return from_data(DATA)


def test_parameters_by_hand(model):
    assert tally(model).params == hand_params() == 2 * 40 * 16 + 2 * (16 + 1055) + 16


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
        "linear_attn.in_proj_qkvz.weight",
        "linear_attn.in_proj_ba.weight",
        "linear_attn.conv1d.weight",
        "linear_attn.dt_bias",
        "linear_attn.A_log",
        "linear_attn.norm",
        "linear_attn.out_proj.weight",
        "linear_attn.kkt",
        "linear_attn.qk",
        "linear_attn.solve",
        "linear_attn.values",
        "linear_attn.state_correct",
        "linear_attn.state_read",
        "linear_attn.state_write",
    } <= names
    conv = next(c for c in report.checks if c.component == "linear_attn.conv1d.weight")
    assert conv.torch_flops == L * 2 * CONV_DIM * K * seq_len  # FlopCounterMode's count of the convolution
    state = next(c for c in report.checks if c.component == "linear_attn.state_read")
    assert state.torch_flops == L * 2 * H * DK * DV * seq_len  # the same in both views: one state per token


GATED_ATTENTION = {"kind": "mha", "n_heads": 4, "n_kv_heads": 2, "head_dim": 8, "qk_norm": "head", "rotary_dim": 4, "gate": True}
HYBRID = dict(
    vocab_size=V,
    d_model=D,
    n_layers=4,
    context_length=32,
    positions="rotary",
    attention=MIXER,
    ffn={"kind": "gated", "d_ff": 24},
    layers=[{"repeat": 3}, {"repeat": 1, "attention": GATED_ATTENTION}],
)


@pytest.mark.parametrize("convention", ["exact", "causal"])
def test_hybrid_with_gated_attention_verifies(convention):
    """Three DeltaNet layers and one gated attention layer: q's projection holds 2 · heads · head_dim outputs."""
    spec = from_data(HYBRID)
    report = verify(spec, seq_len=12, convention=convention)
    assert report.ok, report.failures
    q = next(c for c in report.checks if c.component == "attn.q.weight")
    assert q.analytic_params == D * 2 * 4 * 8 == 1024
    gated = spec.layers[3].attention
    assert gated.describe() == "4 heads, 2 KV × 8, gated"
    assert gated.cache_elements(spec) == 2 * 2 * 8  # the gate caches nothing
    # + the gate and the ungated output; its q/k norms (over each head) keep their inputs, (4 + 2) heads × 8, and an
    # fp32 inverse RMS a head, 2 16-bit elements each
    assert gated.kept_elements(spec) == D + 2 * (4 + 2) * 8 + 2 * 4 * 8 + (4 + 2) * 8 + (4 + 2) * 2


def test_qwen3_next_80b_parameters_by_hand():
    """Every layer of Qwen3-Next-80B-A3B written out (the config: d 2048, 48 layers, every 4th full attention)."""
    d, vocab = 2048, 151936
    deltanet = (
        2048 * (2 * 16 * 128 + 2 * 32 * 128)  # in_proj_qkvz: 25,165,824
        + 2048 * 2 * 32  # in_proj_ba: 131,072
        + (2 * 16 * 128 + 32 * 128) * 4  # conv1d, 8,192 channels × kernel 4: 32,768
        + 32
        + 32  # dt_bias, A_log
        + 128  # the gated norm over value_head_dim
        + 32 * 128 * 2048
    )  # out_proj: 8,388,608
    assert deltanet == 33_718_464
    attention = (
        2048 * 2 * 16 * 256  # q_proj, query and gate: 16,777,216
        + 2 * 2048 * 2 * 256  # k_proj, v_proj: 2 × 1,048,576
        + 256
        + 256  # q_norm, k_norm over head_dim
        + 16 * 256 * 2048
    )  # o_proj: 8,388,608
    assert attention == 27_263_488
    moe = (
        512 * 2048  # the router
        + 512 * 3 * 2048 * 512  # 512 SwiGLU experts of 512
        + 3 * 2048 * 512  # the shared expert of 512
        + 2048
    )  # shared_expert_gate
    assert moe == 1_614_809_088
    total = 36 * deltanet + 12 * attention + 48 * (moe + 2 * d) + 2 * vocab * d + d
    assert total == 79_674_391_296
    label, spec = hf.load(QWEN3_NEXT)
    assert tally(spec).params == total
    # active: every layer skips 502 of its 512 experts, 3 · 2048 · 512 weights each
    assert tally(spec).active == total - 48 * (512 - 10) * 3 * 2048 * 512 == 3_874_929_408
    truth = json.loads((HERE / "hf_truth" / "qwen3-next-80b-a3b-thinking.json").read_text())
    assert sum(n for _, n in Measured.from_record(truth).params) == total  # what transformers 5.23.0 instantiates
    kinds = [layer.attention.kind for layer in spec.layers]
    assert kinds == ["gated_deltanet", "gated_deltanet", "gated_deltanet", "mha"] * 12  # full_attention_interval 4
    assert spec.layers[3].attention.rotary_dim == 64  # partial_rotary_factor 0.25 of head_dim 256


def test_qwen3_next_80b_state_and_kv_by_hand(cli):
    """Decoding Qwen3-Next-80B-A3B in bf16: the 12 full-attention layers cache K and V of 2 heads of 256 per token,
    which grows with the context; the 36 DeltaNet layers keep a 128 × 128 state in each of 32 value heads and the
    conv's last 3 inputs of 8,192 channels, which does not."""
    kv_per_token = 12 * 2 * 2 * 256 * 2  # layers × (K, V) × heads × head_dim × 2 bytes
    state = 36 * (32 * 128 * 128 + (2 * 16 * 128 + 32 * 128) * (4 - 1)) * 2
    assert (kv_per_token, state) == (24_576, 39_518_208)
    for context, kv in ((32_768, 805_306_368), (262_144, 6_442_450_944)):
        code, out, err = cli("infer", str(QWEN3_NEXT), "--prompt", str(context - 1), "--generate", "1", "--format", "json")
        assert code == 0, err
        figures = {k: v["value"] for k, v in json.loads(out)["figures"].items()}
        assert figures["kv_bytes_per_token"] == kv_per_token
        assert figures["kv_bytes"] == kv_per_token * context == kv
        assert figures["state_bytes"] == state  # the same at 32k and at 256k


def test_state_cache_and_kept_elements_by_hand(model):
    mixer = model.layers[0].attention
    # S (dk × dv in every value head) and the conv's last K-1 inputs, per sequence and layer
    assert mixer.state_elements(model) == H * DK * DV + CONV_DIM * (K - 1) == 48 + 56
    assert mixer.cache_elements(model) == 0
    # the input; the conv's input (causal-conv1d keeps it alone); q and k after the kernel's l2norm and their fp32
    # rstd; v made contiguous; the gate's raw a and β; the decay's fp32 running sum; A (one row of chunk_size per
    # value head); the kernel's output, z copied to rows and the gated norm's fp32 rstd; out_proj's input
    kept = D + CONV_DIM + 2 * KEY_DIM + 2 * 2 * HK + VALUE_DIM + (H + H + 2 * H) + H * CHUNK + 2 * VALUE_DIM + 2 * H + VALUE_DIM
    assert mixer.kept_elements(model) == kept == 16 + 28 + 16 + 8 + 12 + 16 + 16 + 24 + 8 + 12


def _randomize(mixer, seed: int):
    """Weights away from their initial values; decays −exp(A_log)·softplus(·) of moderate size."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in mixer.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=gen))
        mixer.A_log.copy_(torch.rand(H, generator=gen) - 0.5)


def recurrent_mixer(mixer, x: torch.Tensor) -> torch.Tensor:
    """The mixer with the gated delta rule one token at a time, in float64 (transformers'
    torch_recurrent_gated_delta_rule, the paper's eq. 10), from the module's parameters only."""
    w = {k: v.detach().double() for k, v in mixer.named_parameters()}
    x = x.double()
    b, s, _ = x.shape
    r = H // HK
    # Qwen3NextGatedDeltaNet.fix_query_key_value_ordering: per key head [q, k, v of its r value heads, z of them]
    qkvz = (x @ w["in_proj_qkvz.weight"].T).view(b, s, HK, 2 * DK + 2 * r * DV)
    q, k, v, z = qkvz.split([DK, DK, r * DV, r * DV], dim=-1)
    bb, a = (x @ w["in_proj_ba.weight"].T).view(b, s, HK, 2 * r).split([r, r], dim=-1)
    mixed = torch.cat([q.reshape(b, s, -1), k.reshape(b, s, -1), v.reshape(b, s, -1)], dim=-1)
    # causal depthwise conv: out_t[c] = Σ_j weight[c, 0, j] · in_{t-(K-1)+j}[c], then silu
    conv = torch.zeros(b, s, CONV_DIM, dtype=torch.float64)
    for t in range(s):
        for j in range(K):
            if t - (K - 1) + j >= 0:
                conv[:, t] += w["conv1d.weight"][:, 0, j] * mixed[:, t - (K - 1) + j]
    q, k, v = F.silu(conv).split([KEY_DIM, KEY_DIM, VALUE_DIM], dim=-1)
    q = F.normalize(q.view(b, s, HK, DK), dim=-1).repeat_interleave(r, dim=2) / DK**0.5
    k = F.normalize(k.view(b, s, HK, DK), dim=-1).repeat_interleave(r, dim=2)
    v = v.view(b, s, H, DV)
    beta = torch.sigmoid(bb.reshape(b, s, H))
    g = -torch.exp(w["A_log"]) * F.softplus(a.reshape(b, s, H) + w["dt_bias"])
    state = torch.zeros(b, H, DK, DV, dtype=torch.float64)
    out = []
    for t in range(s):
        state = state * torch.exp(g[:, t])[..., None, None]
        remembered = (state * k[:, t, :, :, None]).sum(-2)  # Sᵀk: (B, H, dv)
        delta = (v[:, t] - remembered) * beta[:, t, :, None]
        state = state + k[:, t, :, :, None] * delta[:, :, None, :]
        out.append((state * q[:, t, :, :, None]).sum(-2))  # Sᵀq
    o = torch.stack(out, dim=1)  # (B, s, H, dv)
    o = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + 1e-6) * w["norm.weight"] * F.silu(z.reshape(b, s, H, DV))
    return o.reshape(b, s, VALUE_DIM) @ w["out_proj.weight"].T


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seq_len", [6, 11, 12])  # chunks of 3, of 1 and of 4 tokens
def test_chunkwise_form_is_the_recurrence(model, causal, seq_len):
    """The reference's chunkwise form (full squares, or triangles with their blocked products) computes the same
    outputs as the step-by-step recurrence, for a tiny random input."""
    net = build(model, device="cpu", causal=causal)
    mixer = net.layers[0].linear_attn
    _randomize(mixer, seed=1)
    x = torch.randn(2, seq_len, D, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        chunked = mixer(x)
    recurrent = recurrent_mixer(mixer, x)
    assert torch.allclose(chunked.double(), recurrent, atol=1e-4, rtol=1e-4), (chunked.double() - recurrent).abs().max()
    with torch.no_grad():  # and the whole model runs on real tensors
        assert net(torch.randint(0, V, (1, 7))).shape == (1, 7, V)


def test_reference_is_transformers_gated_deltanet(model):
    """transformers' own Qwen3NextGatedDeltaNet (its torch chunked fallback: chunks of 64, solve_triangular) loads
    the reference's state dict as it is and computes the same outputs."""
    from transformers import Qwen3NextConfig
    from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextGatedDeltaNet

    net = build(model, device="cpu")
    mixer = net.layers[0].linear_attn
    _randomize(mixer, seed=3)
    config = Qwen3NextConfig(
        vocab_size=V,
        hidden_size=D,
        num_hidden_layers=1,
        linear_num_key_heads=HK,
        linear_key_head_dim=DK,
        linear_num_value_heads=H,
        linear_value_head_dim=DV,
        linear_conv_kernel_dim=K,
        layer_types=["linear_attention"],
    )
    theirs = Qwen3NextGatedDeltaNet(config, layer_idx=0)
    theirs.load_state_dict(mixer.state_dict())  # strict: the same names and shapes
    x = torch.randn(2, 12, D, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        assert torch.allclose(mixer(x), theirs(x), atol=1e-4, rtol=1e-4)


def test_gated_attention_is_transformers_qwen3_next_attention():
    """The mha block with gate: each head's query and gate interleaved in q's output as Qwen3NextAttention splits
    them, sigmoid(gate) on the heads' output; the same outputs as transformers' module on its weights."""
    from transformers import Qwen3NextConfig
    from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextAttention, Qwen3NextRotaryEmbedding

    spec = from_data(HYBRID)
    ours = build(spec, device="cpu").layers[3].attn  # the full view: every query meets every key, as with no mask
    config = Qwen3NextConfig(
        vocab_size=V,
        hidden_size=D,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        partial_rotary_factor=0.5,
        rope_theta=10000.0,
        layer_types=["full_attention"],
    )
    config._attn_implementation = "eager"
    theirs = Qwen3NextAttention(config, layer_idx=0)
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for name in ("q", "k", "v", "o"):
            weight = torch.randn(getattr(theirs, f"{name}_proj").weight.shape, generator=gen) * 0.3
            getattr(theirs, f"{name}_proj").weight.copy_(weight)
            getattr(ours, name).weight.copy_(weight)
        for name in ("q_norm", "k_norm"):  # Qwen3NextRMSNorm scales by 1 + w; nn.RMSNorm by w
            weight = torch.randn(8, generator=gen) * 0.1
            getattr(theirs, name).weight.copy_(weight)
            getattr(ours, name).weight.copy_(1 + weight)
            getattr(ours, name).eps = 1e-6
    x = torch.randn(2, 7, D, generator=gen)
    positions = torch.arange(7)[None]
    with torch.no_grad():
        expected, _ = theirs(x, Qwen3NextRotaryEmbedding(config)(x, positions), attention_mask=None)
        assert torch.allclose(ours(x), expected, atol=1e-5, rtol=1e-4), (ours(x) - expected).abs().max()


def test_spec_errors_and_defaults():
    mixer = from_data(dict(DATA, attention={"kind": "gated_deltanet", "n_key_heads": 2, "key_head_dim": 4})).layers[0].attention
    assert (mixer.n_value_heads, mixer.value_head_dim, mixer.conv_kernel, mixer.chunk_size) == (2, 4, 4, 64)
    assert mixer.describe() == "Gated DeltaNet 2 QK heads × 4, 2 V heads × 4"
    with pytest.raises(Exception, match="do not divide"):
        from_data(dict(DATA, attention={**MIXER, "n_value_heads": 3}))
