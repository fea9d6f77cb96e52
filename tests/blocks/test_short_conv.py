"""LFM2's gated short convolution (kind short_conv): parameters and FLOPs by hand, proven against the torch reference,
its decoding state and training memory by hand, and the reference shown to be the same map as transformers' own
Lfm2ShortConv on real tensors.

Shapes from transformers 5.23.0 Lfm2ShortConv: in_proj d -> 3·d, a depthwise Conv1d over d channels with kernel
conv_L_cache, out_proj d -> d, all three with a bias when conv_bias; out = out_proj(C ⊙ conv(B ⊙ x)).
"""

import pytest
import torch

from ffncalc.analysis.count import tally
from ffncalc.analysis.verify import verify
from ffncalc.model import from_data
from ffncalc.model.reference import build

pytestmark = pytest.mark.torch  # reference modules, real tensors or FlopCounterMode

V, D, K = 40, 16, 3
CONV = {"kind": "short_conv", "conv_kernel": K, "bias": True}
ATTN = {"kind": "mha", "n_heads": 4, "n_kv_heads": 2, "qk_norm": "head"}
FFN = {"kind": "gated", "d_ff": 24}
# two conv layers, one attention layer, each with a SwiGLU MLP and two RMSNorms, as LFM2 stacks them
DATA = dict(
    vocab_size=V,
    d_model=D,
    n_layers=3,
    context_length=32,
    attention=CONV,
    ffn=FFN,
    tie_embeddings=True,
    layers=[{"repeat": 2}, {"repeat": 1, "attention": ATTN}],
)


@pytest.fixture(scope="module")
def model():
    return from_data(DATA)


def conv_params() -> int:
    return (D * 3 * D + 3 * D) + (D * K + D) + (D * D + D)  # in_proj, conv (D, 1, K) and bias, out_proj


def test_parameters_by_hand(model):
    attn = D * D + 2 * (D * 8) + D * D + 2 * 4  # q, k and v (2 KV heads of 4), o; q_norm and k_norm over head_dim
    mlp = 3 * D * 24
    per_layer_norms = 2 * D
    total = V * D + 2 * (conv_params() + mlp + per_layer_norms) + (attn + mlp + per_layer_norms) + D
    assert conv_params() == 768 + 48 + 48 + 16 + 256 + 16 == 1152
    assert tally(model).params == total


@pytest.mark.parametrize("seq_len", [1, 6, 16])
def test_matmul_flops_by_hand(model, seq_len):
    """2 FLOPs per multiply-add: in_proj 3·d², the convolution K per channel, out_proj d² per token, at any length."""
    conv = 2 * (3 * D * D + D * K + D * D)
    attn = 2 * (D * D + 2 * D * 8 + D * D) + 2 * 4 * seq_len * 4 * 2  # projections; scores and values, 4 heads of 4
    mlp = 2 * 3 * D * 24
    for convention in ("exact", "causal"):
        t = tally(model, convention=convention, seq_len=seq_len)
        core = attn if convention == "exact" else attn - 2 * 4 * 4 * 2 * seq_len + 2 * 4 * 4 * (seq_len + 1)
        assert t.flops_per_token == 2 * conv + core + 3 * mlp + 2 * D * V


@pytest.mark.parametrize("convention", ["exact", "causal"])
@pytest.mark.parametrize("seq_len", [1, 5, 9])
def test_verify_against_torch(model, convention, seq_len):
    report = verify(model, seq_len=seq_len, convention=convention, every_layer=True)
    assert report.ok, report.failures
    names = {c.component for c in report.checks}
    assert {
        "conv.in_proj.weight",
        "conv.in_proj.bias",
        "conv.conv.weight",
        "conv.conv.bias",
        "conv.out_proj.weight",
        "conv.out_proj.bias",
    } <= names
    conv = next(c for c in report.checks if c.component == "conv.conv.weight")
    assert conv.torch_flops == 2 * 2 * D * K * seq_len  # two layers; FlopCounterMode's count of the convolution


def test_state_cache_and_kept_elements_by_hand(model):
    conv = model.layers[0].attention
    assert conv.state_elements(model) == D * (K - 1)  # the last K-1 inputs B ⊙ x of every channel
    assert conv.cache_elements(model) == 0
    assert conv.kept_elements(model) == 7 * D  # input, B/C/x, B ⊙ x, conv output, C ⊙ y


def test_same_map_as_transformers_short_conv():
    """The reference module and transformers' Lfm2ShortConv (its torch path, no cache) give the same output."""
    from transformers import Lfm2Config
    from transformers.models.lfm2.modeling_lfm2 import Lfm2ShortConv

    config = Lfm2Config(
        hidden_size=D,
        conv_L_cache=K,
        conv_bias=True,
        num_hidden_layers=1,
        layer_types=["conv"],
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=V,
    )
    theirs = Lfm2ShortConv(config, 0).double()
    ours = from_data(DATA).layers[0].attention.torch_module(from_data(DATA), causal=False).double()
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in ours.named_parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64))
        for name, p in theirs.named_parameters():
            p.copy_(dict(ours.named_parameters())[name].view(p.shape))
    x = torch.randn(2, 7, D, generator=gen, dtype=torch.float64)
    torch.testing.assert_close(ours(x), theirs(x))


def test_reference_builds_with_every_module(model):
    net = build(model)
    assert {"in_proj", "conv", "out_proj"} <= {n for n, _ in net.layers[0].conv.named_children()}
