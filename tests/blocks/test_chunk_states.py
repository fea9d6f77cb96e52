"""References that take a shorter road on the meta device, where no value exists: the chunked linear-attention
blocks carry their state from chunk to chunk in a loop, and on meta run the loop's products batched over the
chunks; the FFNs skip their elementwise work, and a mixture runs its first expert's matmuls over every
token-slot (the experts are alike: the routed experts' work in all, without the gathering of tokens). verify of a
512-expert model at a 262k context is then seconds, not minutes. Both forms must do the same matmul work, per
module (per expert module: all of a layer's routed experts together): here each reference runs on real tensors
and on meta tensors under FlopCounterMode, and the two are compared.
"""

import pytest

from ffncalc.model import from_data
from ffncalc.model.reference import build

pytestmark = pytest.mark.torch

MIXERS = {
    "gated_deltanet": {
        "kind": "gated_deltanet",
        "n_key_heads": 2,
        "key_head_dim": 4,
        "n_value_heads": 4,
        "value_head_dim": 3,
        "conv_kernel": 3,
        "chunk_size": 4,
    },
    "kda": {"kind": "kda", "n_heads": 2, "head_dim": 4, "conv_kernel": 3, "chunk_size": 4},
    "lightning": {"kind": "lightning", "n_heads": 2, "head_dim": 8, "chunk_size": 4},
    "mlstm": {"kind": "mlstm", "n_heads": 2, "qk_dim": 8, "v_dim": 16, "chunk_size": 4},
}


def _flops(net, device, seq_len):
    """FLOPs by module and op, a mixture's routed experts as one ("experts.*"), as verify's components hold them."""
    import re

    import torch
    from torch.utils.flop_counter import FlopCounterMode

    tokens = torch.zeros((1, seq_len), dtype=torch.long, device=device)
    with FlopCounterMode(display=False) as counter:
        net(tokens)
    out: dict[str, dict] = {}
    for module, ops in counter.get_flop_counts().items():
        merged = out.setdefault(re.sub(r"\.experts\.\d+", ".experts.*", module), {})
        for op, n in ops.items():
            merged[op] = merged.get(op, 0) + n
    return out


@pytest.mark.parametrize("seq_len", [4, 12, 6])  # one chunk; three; chunks of 3 (the largest divisor up to 4)
@pytest.mark.parametrize("kind", sorted(MIXERS))
@pytest.mark.parametrize("causal", [False, True])
def test_meta_form_does_the_loops_work(kind, seq_len, causal):
    import torch

    spec = from_data(
        dict(
            vocab_size=40,
            d_model=16,
            n_layers=1,
            context_length=32,
            positions="none",
            attention=MIXERS[kind],
            ffn={"kind": "none"},
            norm={"per_layer": 1},
        )
    )
    torch.manual_seed(0)
    real = build(spec, device="cpu", causal=causal)
    meta = build(spec, device="meta", causal=causal)
    looped, batched = _flops(real, "cpu", seq_len), _flops(meta, "meta", seq_len)
    assert looped == batched
    assert any("state" in module or "attn" in module for module in looped)  # the mixer's products are in it


FFNS = {
    "gated": {"kind": "gated", "d_ff": 24},
    "dense": {"kind": "dense", "d_ff": 24, "activation": "gelu", "bias": True},
    "moe": {
        "kind": "moe",
        "n_experts": 5,
        "top_k": 2,
        "expert": {"kind": "gated", "d_ff": 8},
        "n_shared_experts": 1,
        "shared": {"kind": "gated", "d_ff": 8},
    },
}


@pytest.mark.parametrize("seq_len", [1, 2, 7])  # fewer token-slots than experts, and shares of 2 and 3
@pytest.mark.parametrize("kind", sorted(FFNS))
def test_meta_ffns_do_the_real_matmuls(kind, seq_len):
    import torch

    spec = from_data(dict(vocab_size=40, d_model=16, n_layers=1, context_length=32, attention={"n_heads": 2}, ffn=FFNS[kind]))
    torch.manual_seed(0)
    real, meta = build(spec, device="cpu"), build(spec, device="meta")
    for net in (real, meta):
        net.set_balanced_routing(True)  # verify's routing: slot j to expert j mod n_experts
    assert _flops(real, "cpu", seq_len) == _flops(meta, "meta", seq_len)
