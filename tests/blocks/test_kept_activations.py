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


def attention_model(attention: dict, positions: str = "rotary", norm: str = "rmsnorm"):
    return from_data(
        {
            "name": "small",
            "vocab_size": 256,
            "d_model": D,
            "n_layers": 1,
            "context_length": 64,
            "positions": positions,
            "attention": attention,
            "ffn": {"kind": "gated", "activation": "silu", "d_ff": FF},
            "norm": {"kind": norm, "per_layer": 2, "final": True},
        }
    )


# (attention, positions, norm kind, kept 16-bit elements a token by hand): d = 64, 4 heads of 16
ATTENTION = [
    # the input, Q and the heads' output (4 × 16 each), K and V at their 2 KV heads (2 × 16 each)
    ({"n_heads": 4, "n_kv_heads": 2}, "rotary", "rmsnorm", 64 + 64 + 64 + 32 + 32),
    ({"n_heads": 4, "n_kv_heads": 4}, "rotary", "rmsnorm", 64 + 64 + 64 + 64 + 64),
    ({"n_heads": 4, "n_kv_heads": 2, "window": 4}, "rotary", "rmsnorm", 64 + 64 + 64 + 32 + 32),
    ({"n_heads": 4, "n_kv_heads": 2, "chunk": 8}, "rotary", "rmsnorm", 64 + 64 + 64 + 32 + 32),
    ({"n_heads": 4, "n_kv_heads": 2}, "alibi", "rmsnorm", 64 + 64 + 64 + 32 + 32),
    ({"n_heads": 4, "n_kv_heads": 2, "qkv_bias": True, "o_bias": True}, "learned", "layernorm", 64 + 64 + 64 + 32 + 32),
    # a gate: its half of q's projection and the ungated output, 64 each
    ({"n_heads": 4, "n_kv_heads": 2, "gate": True}, "rotary", "rmsnorm", 256 + 64 + 64),
    # q/k norms over each head: their inputs (4 + 1 heads × 16) and an fp32 inverse RMS a head (2 elements each)
    ({"n_heads": 4, "n_kv_heads": 1, "qk_norm": "head"}, "rotary", "rmsnorm", 64 + 64 + 64 + 16 + 16 + 80 + 10),
    # over all heads: the inputs (64 + 32) and one statistic each for q and k; a LayerNorm's mean as well
    ({"n_heads": 4, "n_kv_heads": 2, "qk_norm": "full"}, "rotary", "rmsnorm", 256 + 96 + 4),
    ({"n_heads": 4, "n_kv_heads": 2, "qk_norm": "full"}, "rotary", "layernorm", 256 + 96 + 8),
    # a sub-norm before o: its output (o's input, 64) and its statistic
    ({"n_heads": 4, "n_kv_heads": 2, "sub_norm": True}, "rotary", "rmsnorm", 256 + 64 + 2),
]


@pytest.mark.parametrize(("attention", "positions", "norm", "kept"), ATTENTION, ids=lambda v: str(v))
def test_attention_kept_elements_equal_what_the_fused_kernels_save(attention, positions, norm, kept):
    """Multi-head attention as a training stack runs it (torch's CPU flash kernel, which keeps Q, K and V as given and
    an fp32 log-sum-exp a query and head; rotary positions recomputed): what autograd saves over 16 tokens equals the
    kept elements derived by hand, 2 bytes each, and the kernel's 4 bytes a query and head."""
    from ffncalc.analysis.keptcheck import check

    spec = attention_model(attention, positions, norm)
    block = dict(spec.layers[0].blocks())["attention"]
    assert block.kept_elements(spec) == kept
    (att, ffn) = check(spec, TOKENS)
    assert att.saved == TOKENS * 2 * kept + 4 * 4 * TOKENS == att.planned
    assert ffn.ok


@pytest.mark.parametrize("preset", ["llama3-8b", "gpt2", "qwen3-8b"])
def test_verify_memory_of_a_preset(cli, preset):
    code, out, _ = cli("verify", preset, "--memory")
    assert code == 0 and "✓ every block's kept activations equal what its module saves" in out


def test_verify_memory_refuses_a_layer_too_large_for_the_cpu(cli):
    code, _, err = cli("verify", "deepseek-v3", "--memory")
    assert code == 2 and "its largest takes 21.4 GiB in bf16 (at most 2 GiB)" in err and err.count("\n") == 1
