"""RWKV-4's time mix and channel mix (kinds rwkv_time_mix, rwkv_channel_mix): parameters and FLOPs by hand, proven
against the torch reference, decoding state and training memory by hand, and the reference shown to be the same map
as transformers' own RwkvSelfAttention and RwkvFeedForward (their CPU path) on real tensors.

Shapes from transformers 5.23.0: RwkvSelfAttention holds time_decay and time_first (A each), time_mix_key, _value and
_receptance ((1, 1, d) each), key, value and receptance (d -> A) and output (A -> d), none with a bias;
RwkvFeedForward holds time_mix_key and _receptance, key (d -> I), receptance (d -> d) and value (I -> d).
"""

import pytest
import torch

from ffncalc.analysis.count import tally
from ffncalc.analysis.verify import verify
from ffncalc.model import from_data

pytestmark = pytest.mark.torch  # reference modules, real tensors or FlopCounterMode

V, D, A, I, L = 40, 16, 24, 56, 2
DATA = dict(
    vocab_size=V,
    d_model=D,
    n_layers=L,
    context_length=32,
    positions="none",
    embedding_norm=True,
    attention={"kind": "rwkv_time_mix", "attention_dim": A},
    ffn={"kind": "rwkv_channel_mix", "d_ff": I},
    norm={"kind": "layernorm"},
)


@pytest.fixture(scope="module")
def model():
    return from_data(DATA)


def test_parameters_by_hand(model):
    time_mix = 2 * A + 3 * D + 3 * D * A + A * D
    channel_mix = 2 * D + D * I + D * D + I * D
    norms = 2 * 2 * D  # ln1 and ln2, a weight and a bias each
    assert time_mix == 48 + 48 + 1152 + 384 and channel_mix == 32 + 896 + 256 + 896
    assert tally(model).params == 2 * V * D + 2 * D + L * (time_mix + channel_mix + norms) + 2 * D


@pytest.mark.parametrize("seq_len", [1, 7, 16])
def test_matmul_flops_by_hand(model, seq_len):
    """Projections only: the WKV is elementwise, so the FLOPs per token are the same at any length."""
    per_layer = 2 * (3 * D * A + A * D) + 2 * (D * I + D * D + I * D)
    for convention in ("exact", "causal"):
        assert tally(model, convention=convention, seq_len=seq_len).flops_per_token == L * per_layer + 2 * D * V


@pytest.mark.parametrize("seq_len", [1, 5])
def test_verify_against_torch(model, seq_len):
    report = verify(model, seq_len=seq_len, every_layer=True)
    assert report.ok, report.failures
    names = {c.component for c in report.checks}
    assert {
        "attention.key.weight",
        "attention.output.weight",
        "attention.time_decay",
        "attention.time_first",
        "attention.time_mix_key",
        "feed_forward.key.weight",
        "feed_forward.value.weight",
        "feed_forward.time_mix_receptance",
    } <= names
    assert not any(c.component.startswith("(outside") for c in report.checks)


def test_state_and_kept_elements_by_hand(model):
    time_mix, channel_mix = model.layers[0].attention, model.layers[0].ffn
    assert time_mix.state_elements(model) == 3 * A + D  # numerator, denominator, maximum; the last input
    assert channel_mix.state_elements(model) == D
    assert time_mix.cache_elements(model) == channel_mix.cache_elements(model) == 0
    assert time_mix.kept_elements(model) == 4 * D + 5 * A
    assert channel_mix.kept_elements(model) == 5 * D + 2 * I


def test_same_map_as_transformers_rwkv():
    from transformers import RwkvConfig
    from transformers.models.rwkv.modeling_rwkv import RwkvFeedForward, RwkvSelfAttention

    config = RwkvConfig(
        hidden_size=D, attention_hidden_size=A, intermediate_size=I, num_hidden_layers=1, vocab_size=V, context_length=32
    )
    spec = from_data(DATA)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 6, D, generator=gen)
    for theirs, ours in (
        (RwkvSelfAttention(config, 0), spec.layers[0].attention.torch_module(spec, False)),
        (RwkvFeedForward(config, 0), spec.layers[0].ffn.torch_module(spec, False)),
    ):
        with torch.no_grad():
            for name, p in ours.named_parameters():
                p.copy_(0.3 * torch.randn(p.shape, generator=gen))
                if "time_mix" in name:
                    p.copy_(torch.rand(p.shape, generator=gen))
            for name, p in theirs.named_parameters():
                p.copy_(dict(ours.named_parameters())[name])
            torch.testing.assert_close(ours(x), theirs(x)[0], rtol=1e-5, atol=1e-5)
