"""What a block's training forward keeps for backward (``kept_elements``, the figure training memory sums) held
against what autograd actually saves when its reference module runs on small real tensors: the distinct storages
``torch.autograd.graph.saved_tensors_hooks`` packs, parameters left out, in fp32 and bf16. The FFN kinds are held
exactly here."""

import pytest

from ffncalc.model import from_data

pytestmark = pytest.mark.torch  # torch's autograd runs the blocks (the torch set's environment)

D, FF, TOKENS = 64, 128, 16


def model(ffn):
    return from_data(
        {
            "name": "small",
            "vocab_size": 256,
            "d_model": D,
            "n_layers": 1,
            "context_length": 64,
            "positions": "rotary",
            "attention": {"n_heads": 4, "n_kv_heads": 2},
            "ffn": ffn,
            "norm": {"kind": "rmsnorm", "per_layer": 2, "final": True},
        }
    )


def saved_elements(module, dtype):
    """Elements of every distinct storage autograd saves in a forward of TOKENS tokens, parameters aside."""
    import torch

    module = module.to(dtype)
    params = {p.untyped_storage().data_ptr() for p in module.parameters()}
    seen = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            seen[storage.data_ptr()] = storage.nbytes() // t.element_size()
        return t

    x = torch.randn(1, TOKENS, D, dtype=dtype, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        module(x)
    return sum(seen.values())


@pytest.mark.parametrize(
    "ffn",
    [
        {"kind": "gated", "activation": "silu", "d_ff": FF},
        {"kind": "gated", "activation": "gelu", "d_ff": FF},
        {"kind": "dense", "activation": "gelu", "d_ff": FF},
        {"kind": "dense", "activation": "relu", "d_ff": FF},
        {"kind": "dense", "activation": "relu2", "d_ff": FF},
        {"kind": "dense", "activation": "tanh", "d_ff": FF},
        {"kind": "gated", "activation": "sigmoid", "d_ff": FF},
    ],
    ids=lambda f: f"{f['kind']}-{f['activation']}",
)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_ffn_kept_elements_equal_autograd_saved(ffn, dtype):
    """Gated: x, the gate and up outputs, the activated gate and the product, d + 4·d_ff a token; dense: x, the
    pre-activation and the activation, d + 2·d_ff. ReLU, tanh and sigmoid compute their gradient from their
    output, so the pre-activation is not kept: d_ff fewer. ReLU² keeps the ReLU's output (its square's input) in
    place of the pre-activation."""
    import torch

    spec = model(ffn)
    block = dict(spec.layers[0].blocks())["ffn"]
    pre = 0 if ffn["activation"] in ("relu", "tanh", "sigmoid") else 1
    expected = D + ((3 if ffn["kind"] == "gated" else 1) + pre) * FF
    assert block.kept_elements(spec) == expected
    assert saved_elements(block.torch_module(spec, True), getattr(torch, dtype)) == TOKENS * expected
