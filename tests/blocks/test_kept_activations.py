"""What a block's training forward keeps for backward (``kept_elements``, the figure training memory sums) held
against what autograd actually saves when its reference module runs on small real tensors: the distinct storages
``torch.autograd.graph.saved_tensors_hooks`` packs, parameters left out, in fp32 and bf16. The FFN kinds are held
exactly here."""

import json
from pathlib import Path

import pytest

from ffncalc.model import from_data

pytestmark = pytest.mark.torch  # torch's autograd runs the blocks (the torch set's environment)

D, FF, TOKENS = 64, 128, 16
HF_DEFAULTS = Path(__file__).parents[1] / "hf_defaults"


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


def fused_saved_bytes(spec, slot):
    """Bytes autograd keeps when the block's reference module runs one bf16 forward of TOKENS tokens as fused
    kernels run it (``verify --memory``'s measurement)."""
    import torch

    from ffncalc.analysis.keptcheck import saved_bytes

    torch.manual_seed(0)
    block = dict(spec.layers[0].blocks())[slot]
    module = block.torch_module(spec, True).to(torch.bfloat16)
    return saved_bytes(module, torch.randn(1, TOKENS, D, dtype=torch.bfloat16, requires_grad=True))


GATED = {"kind": "gated", "activation": "silu", "d_ff": FF}
DENSE = {"kind": "dense", "activation": "gelu", "d_ff": FF}
E, K, R = 4, 2, 16  # experts, choices a token, an MLP router's width


@pytest.mark.parametrize(
    ("extra", "own"),
    [
        # own: what the variant keeps a token beyond the input, routing and routed experts, derived by hand
        ({}, 0),
        ({"router_bias": True}, 0),
        ({"correction_bias": True}, 0),  # the biased scores pick; the weights gathered by the same indices
        ({"expert": DENSE}, 0),
        ({"n_shared_experts": 1, "shared": GATED}, 4 * FF),  # gate, up, activated gate, product: not its input
        ({"n_shared_experts": 2, "shared": DENSE, "shared_average": True}, 2 * 2 * FF),  # pre-activation, activation
        ({"n_shared_experts": 1, "shared": GATED, "shared_gate": True}, 4 * FF + 1 + D),  # sigmoid out, shared out
        ({"output_norm": True, "output_bias": True}, D + 2),  # the norm's input and its fp32 inverse RMS
        ({"router_mlp": R}, 6 * R + 2),  # down out (norm in), rstd, norm out, fc1 and fc2 out and their GELUs
        ({"router_mlp": R, "router_state": True}, 7 * R + 2),  # the down output apart from the scaled sum
        # a skip class (ZAYA1): one more router class (fp32, 2), the 0/1 factor zeroing a skip's weight (fp32, 2 a choice)
        ({"router_mlp": R, "skip_expert": True}, 6 * R + 2 + 2 + 2 * K),
        # ZAYA1's top_k 1: one choice fewer than K, its 10 routing elements, its expert's D + 4·FF and output D
        ({"router_mlp": R, "router_state": True, "skip_expert": True, "top_k": 1}, 7 * R + 2 + 2 + 2 - 10 - (2 * D + 4 * FF)),
    ],
    ids=lambda v: "-".join(v) or "plain" if isinstance(v, dict) else None,
)
def test_moe_kept_elements_equal_fused_saved(extra, own):
    """A mixture as a grouped-GEMM stack runs it: the input (D), the router's fp32 probabilities (2 elements a
    class), the top-k's int64 indices and the sorting permutation (4 elements a choice each) and the fp32 weights
    (2 a choice); each chosen expert's elements (its input the dispatched copy) and its output (D, for the weight's
    gradient)."""
    ffn = {"kind": "moe", "n_experts": E, "top_k": K, "expert": GATED, **extra}
    spec = model(ffn)
    expert = ffn["expert"]
    expert_kept = D + (4 if expert["kind"] == "gated" else 2) * FF
    expected = D + 2 * E + (4 + 4 + 2) * K + K * (expert_kept + D) + own
    assert dict(spec.layers[0].blocks())["ffn"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "ffn") == TOKENS * 2 * expected


H, RQ, RANK, ROPE = 4, 32, 16, 8  # MLA: heads, query and KV latent ranks, the rotary key's width


@pytest.mark.parametrize(
    ("extra", "own"),
    [
        # own: what the variant keeps a token beyond the plain form's, derived by hand (v = v_head_dim)
        ({}, 0),
        ({"v_head_dim": 24}, 0),  # v as wide as q and k: torch's own flash kernel
        ({"q_lora_rank": None}, -(2 * RQ + 2)),  # no query latent, its norm's input and output and statistic
        ({"rope_key_norm": True}, 2),  # its statistic; its input lies in kv_a's output, the rotation keeps nothing
        ({"latent_scale": True}, 0),  # the scaled latents are q_b's and kv_b's inputs in place of the normed ones
        ({"head_gate": True}, H + H * 8),  # the sigmoid's output a head and the gated output (o's input)
        ({"feature_gate": True}, 2 * H * 8),  # the sigmoid's output a feature and the gated output
        ({"sinks": True}, 0),  # a logit a head joins the log-sum-exp: a parameter, nothing more kept
        ({"window": 4}, 0),  # a mask in the kernel: nothing more kept
        # Mistral Large 4's softmax scaling: the queries before it (H·24), its factor a head (H), the log-position (1)
        ({"softmax_scaling": True}, H * (16 + ROPE) + H + 1),
        # Mistral Large 4's no-rope layer without its indexer: no query latent, no rotary key in kv_a's output (ROPE
        # fewer), the scaling's (the indexed layers: test_sparse_mla_kept_bytes_equal_fused_saved)
        (
            {"q_lora_rank": None, "qk_nope_head_dim": 24, "qk_rope_head_dim": 0, "softmax_scaling": True},
            -(2 * RQ + 2) - ROPE + H * 24 + H + 1,
        ),
    ],
    ids=lambda v: "-".join(f"{k}={w}" for k, w in v.items()) or "plain" if isinstance(v, dict) else None,
)
def test_mla_kept_elements_equal_fused_saved(extra, own):
    """Multi-head latent attention as a flash kernel runs it: x (D); the query latent and its normed copy (2·RQ)
    and the norm's fp32 inverse RMS (2); kv_a's output (RANK + ROPE, the latent norm's input) and the normed latent
    (RANK) and its statistic (2); Q and K at the heads' qk width (2·H·(16 + ROPE)); V made contiguous and the output
    at v (2·H·v); and the log-sum-exp, 4 bytes a query and head. Q/K 24 wide against V 8 runs ``_fused._Flash``,
    which keeps what FlashAttention-2 keeps."""
    attention = {
        "kind": "mla",
        "n_heads": H,
        "q_lora_rank": RQ,
        "kv_lora_rank": RANK,
        "qk_nope_head_dim": 16,
        "qk_rope_head_dim": ROPE,
        "v_head_dim": 8,
        **extra,
    }
    spec = mla_model(attention)
    v = attention["v_head_dim"]
    expected = D + 2 * RQ + 2 + (RANK + ROPE) + RANK + 2 + 2 * H * (16 + ROPE) + 2 * H * v + own
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected + 4 * H * TOKENS


@pytest.mark.parametrize(
    ("extra", "own"),
    [
        # DeepSeek-V3.2's and GLM-5's layer (glm_moe_dsa builds DeepSeek's): the query latent feeds the indexer
        ({"index_n_heads": 2, "index_head_dim": 16, "index_topk": 4}, 0),
        ({"index_n_heads": 2, "index_head_dim": 16, "index_topk": 15}, 0),  # one fewer than the sequence
        ({"index_n_heads": 2, "index_head_dim": 16, "index_topk": 4, "sinks": True}, 0),
        # Mistral Large 4's no-rope layer: its indexer reads the input through its own LayerNorm, the softmax scaling's
        (
            {"q_lora_rank": None, "qk_nope_head_dim": 24, "qk_rope_head_dim": 0, "softmax_scaling": True}
            | {"index_n_heads": 2, "index_head_dim": 16, "index_topk": 4, "index_input_norm": True},
            -(2 * RQ + 2) + H * 24 + H + 1,  # no query latent; the scaling's queries, factor and log-position
        ),
    ],
    ids=lambda v: "-".join(f"{k}={w}" for k, w in v.items()) if isinstance(v, dict) else None,
)
def test_mla_indexer_selecting_fewer_keys_keeps_their_ids(extra, own):
    """Latent attention whose indexer keeps index_topk < the sequence's keys for each query, as FlashMLA's sparse kernel
    runs it, absorbed (MQA over the latent row): x (D), the query latent, its normed copy and statistic (2·RQ + 2),
    kv_a's output and the latent norm's statistic (RANK + rope + 2), q as W_UK's product reads it (H·qk), the kernel's
    absorbed query (H·(RANK + rope)), latent row (RANK + rope) and output (H·RANK, W_UV's input), o's input (H·8); a
    sequence: the log-sum-exp, 4 bytes a query and head, and the int32 ids of each query's top-k keys, 4 · index_topk
    bytes a query; never the gathered keys."""
    attention = {
        "kind": "mla",
        "n_heads": H,
        "q_lora_rank": RQ,
        "kv_lora_rank": RANK,
        "qk_nope_head_dim": 16,
        "qk_rope_head_dim": ROPE,
        "v_head_dim": 8,
        **extra,
    }
    spec = mla_model(attention)
    rope = attention["qk_rope_head_dim"]
    qk, row = attention["qk_nope_head_dim"] + rope, RANK + rope
    expected = D + 2 * RQ + 2 + row + 2 + H * qk + H * row + row + H * RANK + H * 8 + own
    block = dict(spec.layers[0].blocks())["attention"]
    assert block.kept_elements(spec) == expected
    planned = TOKENS * 2 * expected + block.score_bytes(spec, TOKENS, True)
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected + 4 * H * TOKENS + 4 * TOKENS * extra["index_topk"]
    assert planned == fused_saved_bytes(spec, "attention")


def mla_model(attention):
    return from_data(
        {
            "name": "small",
            "vocab_size": 256,
            "d_model": D,
            "n_layers": 1,
            "context_length": 64,
            "positions": "rotary",
            "attention": attention,
            "ffn": GATED,
            "norm": {"kind": "rmsnorm", "per_layer": 2, "final": True},
        }
    )


@pytest.mark.parametrize(
    "spec",
    [
        lambda: model({"kind": "moe", "n_experts": E, "top_k": K, "expert": GATED, "n_shared_experts": 1, "shared": GATED}),
        lambda: mla_model(
            {"kind": "mla", "n_heads": H, "q_lora_rank": RQ, "kv_lora_rank": RANK, "qk_nope_head_dim": 16}
            | {"qk_rope_head_dim": ROPE, "v_head_dim": 8, "sinks": True}
        ),
        lambda: mla_model({"n_heads": 4, "n_kv_heads": 2, "qk_norm": "head"}),
        lambda: mla_model({"kind": "diff_attention", "n_heads": 8, "n_kv_heads": 4}),
        lambda: mla_model({"kind": "short_conv", "conv_kernel": 3, "bias": True}),
        lambda: mla_model({"kind": "mamba", "state_size": 4, "time_step_rank": 4, "bcdt_norm": True, "use_bias": True}),
        lambda: mla_model({"kind": "mamba2", "n_heads": 8, "head_dim": 16, "state_size": 8, "n_groups": 2}),
    ],
    ids=["moe", "mla-sinks", "mha-qk-norm", "diff-gqa", "short-conv", "mamba", "mamba2"],
)
def test_fused_forms_compute_what_the_modules_do(spec):
    """The fused forms (the permuted mixture, ``_Flash`` attention, the flash kernel, rotary positions and norms
    recomputed) change what is kept, not what is computed: the output and every gradient as the module's own
    forward gives them, in fp32."""
    import torch

    from ffncalc.blocks import _fused

    spec = spec()
    block = next(
        b for slot, b in spec.layers[0].blocks() if b.kind in ("moe", "mla", "mha", "diff_attention", "short_conv", "mamba", "mamba2")
    )
    torch.manual_seed(0)
    module = block.torch_module(spec, True)
    x = torch.randn(1, TOKENS, D, requires_grad=True)
    results = []
    for fused in (False, True):
        module.zero_grad()
        x.grad = None
        if fused:
            with _fused.fused():
                out = module(x)
        else:
            out = module(x)
        out.square().sum().backward()
        results.append([out.detach(), x.grad.clone(), *(p.grad.clone() for p in module.parameters() if p.grad is not None)])
    assert len(results[0]) == len(results[1])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("heads", "kv", "head_dim"), [(4, 4, 16), (8, 4, 8), (8, 2, 16)])
def test_diff_attention_kept_elements_equal_fused_saved(heads, kv, head_dim):
    """DiffLlama's attention as one flash kernel with values twice as wide as the keys: x (D); Q (h·d_h) and K
    (kv·d_h); each KV head's values, its half beside its partner's (kv · 2·d_h); the kernel's output (h · 2·d_h);
    the pairs' difference, the RMSNorm's input (h/2 · 2·d_h), and its fp32 inverse RMS (h/2 rows of 2 elements);
    o's input (h·d_h); and the log-sum-exp, 4 bytes a query and head."""
    spec = mla_model({"kind": "diff_attention", "n_heads": heads, "n_kv_heads": kv, "head_dim": head_dim})
    expected = D + heads * head_dim + kv * head_dim + kv * 2 * head_dim + heads * 2 * head_dim
    expected += heads // 2 * 2 * head_dim + heads // 2 * 2 + heads * head_dim
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected + 4 * heads * TOKENS


@pytest.mark.parametrize("bias", [False, True])
def test_short_conv_kept_elements_equal_fused_saved(bias):
    """LFM2's short convolution with causal-conv1d's kernel (which keeps its input alone): in_proj's input (D), its
    output B, C and x in one (3·D, the two products' gradients read them), the convolution's input B ⊙ x (D), its
    output y (D, C ⊙ y's gradient) and out_proj's input C ⊙ y (D): 7·D; no padded copy, no score."""
    spec = mla_model({"kind": "short_conv", "conv_kernel": 3, "bias": bias})
    expected = D + 3 * D + D + D + D
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected


@pytest.mark.parametrize("extra", [{}, {"bcdt_norm": True}, {"use_bias": True, "use_conv_bias": False}], ids=str)
def test_mamba_kept_elements_equal_fused_saved(extra):
    """Mamba's mixer as mamba_ssm's MambaInnerFn keeps it (checkpoint_lvl 1): in_proj's input (D) and output xz
    (2·d_inner), x_dbl (R + 2N), contiguous copies of B and C (N each) and the scan's output before the gate
    (d_inner), a token; and a sequence the scan's fp32 chunk states, d_inner × 1 chunk × 2N × 4 bytes."""
    n, rank = 4, 4
    spec = mla_model({"kind": "mamba", "state_size": n, "time_step_rank": rank, **extra})
    inner = 2 * D
    expected = D + 2 * inner + (rank + 2 * n) + 2 * n + inner
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected + inner * 2 * n * 4


@pytest.mark.parametrize(("groups", "gated_norm"), [(1, True), (2, True), (2, False)])
def test_mamba2_kept_elements_equal_fused_saved(groups, gated_norm):
    """Mamba-2's mixer as mamba_ssm's MambaSplitConv1dScanCombinedFn keeps it: in_proj's input (D) and its output
    zxbcdt (z: 8 heads × 16, x B C: 128 + 2·groups·8, dt: 8), the scan's output before the gated norm (128) and the
    norm's fp32 inverse RMS a group (2 elements each); nothing a sequence."""
    spec = mla_model({"kind": "mamba2", "n_heads": 8, "head_dim": 16, "state_size": 8, "n_groups": groups, "gated_norm": gated_norm})
    inner = 8 * 16
    expected = D + (inner + inner + 2 * groups * 8 + 8) + inner + (2 * groups if gated_norm else 0)
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected


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


# Mixture variants, attention variants and the encoders' mixers, as their kernels keep them.


def ffn_model(ffn, norm: str = "rmsnorm"):
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
            "norm": {"kind": norm, "per_layer": 2, "final": True},
        }
    )


@pytest.mark.parametrize(
    ("dense", "expert", "norm"),
    [
        (GATED, {"kind": "gated", "activation": "gelu", "d_ff": 32}, "rmsnorm"),
        ({"kind": "dense", "activation": "relu", "d_ff": FF}, {"kind": "dense", "activation": "gelu", "d_ff": 32}, "layernorm"),
    ],
    ids=["gated-rms", "dense-layernorm"],
)
def test_dense_moe_kept_elements_equal_fused_saved(dense, expert, norm):
    """Gemma 4's dense FFN beside a mixture: the dense branch's elements (its input the layer's); its output norm's
    input and statistic (d + 2, a LayerNorm's mean too: + 4); the router's fused weightless-RMS-and-scale norm's
    statistic (2), the projection's input (d), the fp32 softmax (2·E), the int64 top-k indices (4·K), the fp32
    renormalising divide's operands (2·K + 2), the per-expert scale's operands (2·K fp32, K gathered); the mixture's
    input norm's statistic; each chosen expert's elements and output (K·(e + d)), the fp32 weights and the int64
    permutation (2·K + 4·K); the mixture's output norm's input and statistic."""
    spec = ffn_model({"kind": "dense_moe", "dense": dense, "n_experts": E, "top_k": K, "expert": expert}, norm)
    stat = 4 if norm == "layernorm" else 2
    dense_kept = D + (4 * FF if dense["kind"] == "gated" else FF)  # ReLU: its output alone
    expert_kept = D + 2 * 32 if expert["kind"] == "dense" else D + 4 * 32
    expected = dense_kept + (D + stat) + 2 + D + 2 * E + 4 * K + (2 * K + 2) + 3 * K + stat
    expected += K * (expert_kept + D) + 2 * K + 4 * K + (D + stat)
    assert dict(spec.layers[0].blocks())["ffn"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "ffn") == TOKENS * 2 * expected


SMALL = {"kind": "gated", "activation": "silu", "d_ff": 32}


@pytest.mark.parametrize(
    ("extra", "router"),
    [
        ({"n_shared_experts": 1, "shared": SMALL, "conv_kernel": 3}, 4 * K + 4 * (K + 1)),
        ({"n_shared_experts": 2, "shared": SMALL}, 4 * K + 4 * (K + 2)),
        ({"router": "sigmoid", "conv_kernel": 3, "conv_scale": True}, 4 * K + 2 * E + 2 * K + 2),
    ],
    ids=["sink-conv", "sink-two-shared", "sigmoid"],
)
def test_sink_moe_kept_elements_equal_fused_saved(extra, router):
    """Inkling's mixture with the routing in fp32: the input (D); the chosen logits' int64 flat index (4·K); the
    sink router's log-sigmoid input and softmax output over the K + S picked logits (2 fp32 each), or the sigmoid
    router's sigmoid over E (2·E), the gathered scores and their sum (2·K + 2); the 16-bit routed weights (K) and
    each chosen expert's elements and output, the int64 permutation (4·K); each shared expert's elements but its
    input, its output and its weight (4·32 + D + 1); the output convolution's input (D)."""
    spec = ffn_model({"kind": "sink_moe", "n_experts": E, "top_k": K, "expert": SMALL, **extra})
    shared = extra.get("n_shared_experts", 0)
    expected = D + router + K + K * (D + 4 * 32 + D) + 4 * K + shared * (4 * 32 + D + 1)
    expected += D if "conv_kernel" in extra else 0
    assert dict(spec.layers[0].blocks())["ffn"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "ffn") == TOKENS * 2 * expected


@pytest.mark.parametrize("activation", ["silu", "relu"])
def test_cdmoe_kept_elements_equal_fused_saved(activation):
    """Doge's CDMoE, 100 single-neuron experts (10 keys a half), 5 a token, their rows gathered inside embedding-bag
    kernels: the dense MLP (D + 4·FF, ReLU's output alone: D + 3·FF); each half's int64 top-10 key indices
    (2 × 4·10), the int64 positions of the top 5 pairs (4·5) and their softmax (5); the rows' int64 indices (4·5),
    the dot products (5; ReLU keeps its output instead), the activations (5) and the weighted activations (5)."""
    spec = ffn_model({"kind": "cdmoe", "d_ff": FF, "n_experts": 100, "top_k": 5, "activation": activation})
    relu = activation == "relu"
    expected = D + (3 if relu else 4) * FF + 2 * 4 * 10 + 4 * 5 + 5 + 4 * 5 + (0 if relu else 5) + 5 + 5
    assert dict(spec.layers[0].blocks())["ffn"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "ffn") == TOKENS * 2 * expected


@pytest.mark.parametrize(("experts", "k", "kv", "head_dim", "positions"), [(4, 2, 2, 16, "rotary"), (8, 3, 4, 8, "learned")])
def test_moa_kept_elements_equal_fused_saved(experts, k, kv, head_dim, positions):
    """JetMoE's mixture of attention heads with ScatterMoE's ParallelLinear and K/V repeated to every chosen
    expert's heads: the input (D); the top-k's int64 indices and the fp32 softmax over them (4·k + 2·k); the slots'
    sorted expert ids and permutation (4·k each); Q, K, V and the output at k·kv heads (4 · k·kv·d_h); the 16-bit
    gates and each slot's output before them (k + k·D); and the log-sum-exp, 4 bytes a query and head."""
    spec = attention_model({"kind": "moa", "n_experts": experts, "top_k": k, "n_kv_heads": kv, "head_dim": head_dim}, positions)
    expected = D + 4 * k + 2 * k + 8 * k + 4 * k * kv * head_dim + k + k * D
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected + 4 * k * kv * TOKENS


@pytest.mark.parametrize(
    ("heads", "kv", "extra", "positions", "norm"),
    [(4, 2, {}, "rotary", "rmsnorm"), (4, 1, {"keep_window": 8, "bias": True}, "learned", "layernorm")],
    ids=["gqa-rotary", "mqa-window-layernorm"],
)
def test_dynamic_mask_kept_elements_equal_fused_saved(heads, kv, extra, positions, norm):
    """Doge's dynamic mask attention as flash-dmattn keeps it (16-wide heads): the input (D); q's and k's
    projections, their norms' inputs (h·16 + kv·16), and a statistic a head (2, a LayerNorm's 4); v (kv·16);
    dt_proj's output, the softplus's output and δ (3·kv); the kernel's Q, K and output (h·16 + kv·16 + h·16); and
    the log-sum-exp, 4 bytes a query and head. δ is the kernel's bias, kv a token."""
    spec = attention_model({"kind": "dynamic_mask", "n_heads": heads, "n_kv_heads": kv, **extra}, positions, norm)
    stat = 4 if norm == "layernorm" else 2
    expected = D + (heads + kv) * 16 + stat * (heads + kv) + kv * 16 + 3 * kv + (heads + kv + heads) * 16
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected + 4 * heads * TOKENS


@pytest.mark.parametrize("window", [2048, 8])
def test_dynamic_mask_fused_form_computes_doges_attention(window):
    """The fused form adds δ = exp(A ⊙ softplus(dt_proj(v))) of each key and KV head to every query's scores, as
    DogeAttention's prepare_dynamic_mask does (the eager module stands in with a scaling of v): its output and
    every gradient equal softmax(q·kᵀ/√d + δ)·v written out here, in fp32, over the causal window."""
    import torch
    from torch.nn import functional as F

    from ffncalc.blocks import _fused
    from ffncalc.blocks._torch import rotate

    spec = attention_model({"kind": "dynamic_mask", "n_heads": 4, "n_kv_heads": 2, "keep_window": window})
    torch.manual_seed(0)
    m = dict(spec.layers[0].blocks())["attention"].torch_module(spec, True)
    torch.nn.init.normal_(m.A)
    x = torch.randn(1, TOKENS, D, requires_grad=True)

    def doge():
        q = rotate(m.q_norm(m.q(x).view(1, TOKENS, 4, 16)).transpose(1, 2))
        k = rotate(m.k_norm(m.k(x).view(1, TOKENS, 2, 16)).transpose(1, 2)).repeat_interleave(2, dim=1)
        v = m.v(x)
        delta = torch.exp(m.A * F.softplus(m.dt_proj(v))).transpose(1, 2).repeat_interleave(2, dim=1)  # (1, 4, s)
        v = v.view(1, TOKENS, 2, 16).transpose(1, 2).repeat_interleave(2, dim=1)
        i = torch.arange(TOKENS)
        outside = (i[None, :] > i[:, None]) | (i[None, :] <= i[:, None] - window)
        scores = (q @ k.transpose(-2, -1)) / 4.0 + delta[:, :, None, :]
        out = scores.masked_fill(outside, float("-inf")).softmax(-1) @ v
        return m.o(out.transpose(1, 2).reshape(1, TOKENS, 64))

    results = []
    for fused in (False, True):
        m.zero_grad()
        x.grad = None
        if fused:
            with _fused.fused():
                out = m(x)
        else:
            out = doge()
        out.square().sum().backward()
        results.append([out.detach(), x.grad.clone(), *(p.grad.clone() for p in m.parameters() if p.grad is not None)])
    assert len(results[0]) == len(results[1]) == 2 + 8  # q, k, v, o, dt_proj (weights), A, the two norms
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("attention", "positions"),
    [
        ({"n_heads": 4, "n_kv_heads": 2}, "rotary"),
        ({"n_heads": 4, "n_kv_heads": 1, "time0": 3, "bias": True, "rotary_dim": 8, "window": 6}, "rotary"),
        ({"n_heads": 8, "n_kv_heads": 8, "head_dim": 8}, "learned"),
    ],
    ids=["gqa", "mqa-window-partial-rotary", "mha-no-rotary"],
)
def test_cca_kept_elements_equal_fused_saved(attention, positions):
    """ZAYA1's compressed convolutional attention with its convolutions as kernels that keep their input (no
    padded copy) and flash attention over the KV heads: the input (D); [q; k] and the depthwise output (C each,
    C = (h + g)·w); q' and k' (the L2 norms' inputs), three per-head values each (the norm, its reciprocal, the
    scaled reciprocal), the normed k' (the key scale's operand); Q, K, V and the output at their heads; and the
    log-sum-exp, 4 bytes a query and head."""
    spec = attention_model({"kind": "cca", **attention}, positions)
    h, g = attention["n_heads"], attention["n_kv_heads"]
    w = attention.get("head_dim", D // h)
    c = (h + g) * w
    expected = D + 2 * c + (h * w + 3 * h) + (g * w + 3 * g) + g * w + (h * w + g * w + g * w + h * w)
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected + 4 * h * TOKENS


@pytest.mark.parametrize(("heads", "head_dim", "kernel"), [(4, 16, 9), (2, 16, 5)])
def test_span_conv_kept_elements_equal_fused_saved(heads, head_dim, kernel):
    """ConvBERT's mixed attention, its attention a flash kernel and its dynamic convolution fairseq's dynamicconv
    kernel (input and taps kept, not the unfolded windows), A = heads × head_dim: the input (D); Q, K, V and the
    attention's output (4·A); the depthwise convolution's output (D), k_s and k_s ⊙ q (2·A); the taps' softmax
    (heads × kernel) and conv_out's output (A); o's concatenated input (2·A); the log-sum-exp, 4 bytes a query and
    head."""
    spec = attention_model({"kind": "span_conv", "n_heads": heads, "head_dim": head_dim, "kernel": kernel}, "learned", "layernorm")
    a = heads * head_dim
    expected = D + 4 * a + D + 2 * a + heads * kernel + a + 2 * a
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected + 4 * heads * TOKENS


def test_fourier_keeps_nothing_in_bf16():
    """FNet's mixer, the FFT in fp32 between two casts (FFT kernels take no bf16): nothing kept, as planned."""
    spec = attention_model({"kind": "fourier"}, "learned", "layernorm")
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == 0
    assert fused_saved_bytes(spec, "attention") == 0


QSA = {
    "kind": "qsa",
    "n_heads": 4,
    "n_kv_heads": 2,
    "index_n_heads": 2,
    "index_head_dim": 16,
    "index_budget": 8,
    "index_block_size": 4,
}
SPARSE = {"kind": "block_sparse", "n_heads": 4, "n_kv_heads": 2, "index_n_heads": 2, "index_head_dim": 16}
SPARSE |= {"index_block_size": 4, "index_topk_blocks": 2}


@pytest.mark.parametrize(
    ("attention", "ids"),
    [
        (QSA, 8 // 4),  # the budget's blocks, one id list a query
        (QSA | {"n_kv_heads": 1, "qk_norm": "head", "index_budget": 12, "index_block_size": 3}, 12 // 3),
        (SPARSE, 2 * 2),  # each index head's two blocks
        (SPARSE | {"index_n_heads": 4, "index_head_dim": 8, "index_block_size": 3, "index_topk_blocks": 3}, 4 * 3),
    ],
    ids=["qsa", "qsa-mqa-head-norm", "block-sparse", "block-sparse-4-index-heads"],
)
def test_selected_attention_kept_elements_equal_fused_saved(attention, ids):
    """Qwen4-Exp's QSA and MiniMax-M3's block-sparse attention as a block-sparse flash kernel keeps them: what
    grouped-query attention keeps (the input, Q and the output at 4 heads of 16, K and V at their KV heads; a
    head norm its inputs and a statistic a head) and the chosen block ids, int64 (4 16-bit elements each); the
    indexer, whose choice takes no gradient, nothing; the log-sum-exp, 4 bytes a query and head."""
    spec = attention_model(attention)
    kv = attention["n_kv_heads"]
    expected = D + 64 + 64 + 2 * kv * 16 + 4 * ids
    if attention.get("qk_norm") == "head":
        expected += (4 + kv) * 16 + 2 * (4 + kv)
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected + 4 * 4 * TOKENS


def test_grouped_projections_keep_what_dense_ones_keep():
    """SqueezeBERT's grouped convolutions keep their inputs as linear layers do: attention the input, Q, K, V and
    the output (D + 4·64) and the log-sum-exp; the FFN the input, GELU's input and output (D + 2·FF)."""
    spec = attention_model(
        {"kind": "grouped_mha", "n_heads": 4, "q_groups": 2, "k_groups": 4, "v_groups": 2, "o_groups": 4}, "learned", "layernorm"
    )
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == D + 4 * 64
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * (D + 4 * 64) + 4 * 4 * TOKENS
    spec = ffn_model({"kind": "grouped_dense", "d_ff": FF, "activation": "gelu", "up_groups": 4, "down_groups": 2, "bias": True})
    assert dict(spec.layers[0].blocks())["ffn"].kept_elements(spec) == D + 2 * FF
    assert fused_saved_bytes(spec, "ffn") == TOKENS * 2 * (D + 2 * FF)


@pytest.mark.parametrize(
    ("extra", "rows", "used"),
    [
        ({"span": 8}, 16, 2),
        ({"span": 4, "p2c": False, "share_key": False}, 8, 1),
        ({"span": 32, "span_to_length": True, "c2p": False, "share_key": False}, 2 * TOKENS, 1),  # 2·min(s, span)
        ({"span": 8, "c2p": False, "p2c": False}, 16, 0),
    ],
    ids=["c2p-p2c-shared", "c2p-own", "p2c-span-to-length", "no-position-scores"],
)
def test_disentangled_kept_bytes_equal_fused_saved(extra, rows, used):
    """DeBERTa's attention as FlashDeBERTa keeps it: a token the input, Q, K, V and the output (D + 4·64); a
    sequence the log-sum-exp (4 bytes a query and head), the content-to-position and position-to-content scores
    the kernel keeps (2 bytes × 4 heads × 2P a token each), and once the relative embeddings (2P × D) and their
    projections (2P × 64 each) the scores' products read."""
    spec = attention_model({"kind": "disentangled", "n_heads": 4, **extra}, "learned", "layernorm")
    block = dict(spec.layers[0].blocks())["attention"]
    assert block.kept_elements(spec) == D + 4 * 64
    sequence = 4 * 4 * TOKENS + used * 2 * TOKENS * 4 * rows + 2 * (rows * D * (used > 0) + used * rows * 64)
    assert block.score_bytes(spec, TOKENS, True) == sequence
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * (D + 4 * 64) + sequence


@pytest.mark.parametrize(
    ("extra", "norm", "padded", "globals_"),
    [
        ({"radius": 3}, "rmsnorm", 16, 0),  # blocks of 4: no padding
        ({"radius": 4, "global_block": 4}, "rmsnorm", 20, 4),  # blocks of 5: 4 padded queries; 16 // 4 globals
        ({"n_kv_heads": 2, "radius": 2, "global_block": 3}, "layernorm", 18, 5),
    ],
    ids=["local", "transient-global", "gqa-transient-global-layernorm"],
)
def test_block_local_kept_bytes_equal_fused_saved(extra, norm, padded, globals_):
    """LongT5's block-local attention as a block-local flash kernel keeps it: a token the input, Q and the output
    (D + 2·64), K and V at their KV heads, and with global tokens its int64 global id (4); a sequence the fp32
    log-sum-exp of every padded query and head, and the global tokens' sums and normed sums (G × D each), the
    norm's statistic (4 bytes a row, a LayerNorm's 8) and their keys and values (G × kv·16 each)."""
    spec = attention_model({"kind": "block_local", "n_heads": 4, **extra}, "learned", norm)
    block = dict(spec.layers[0].blocks())["attention"]
    kv = extra.get("n_kv_heads", 4)
    kept = D + 2 * 64 + 2 * kv * 16 + (4 if globals_ else 0)
    assert block.kept_elements(spec) == kept
    sequence = 4 * 4 * padded + 2 * (2 * globals_ * D + 2 * globals_ * kv * 16) + (8 if norm == "layernorm" else 4) * globals_
    assert block.score_bytes(spec, TOKENS, True) == sequence
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * kept + sequence


@pytest.mark.parametrize(
    ("attention", "rounds", "near"),
    [
        ({"kind": "lsh", "chunk_length": 4, "num_hashes": 2, "num_buckets": 4}, 2, 2),
        ({"kind": "local", "chunk_length": 4, "chunks_after": 1}, 1, 3),
        ({"kind": "local", "chunk_length": 32}, 1, 0),  # one chunk: the whole square
        ({"kind": "lsh", "chunk_length": 32}, 1, 0),
    ],
    ids=["lsh-two-rounds", "local-both-sides", "local-one-chunk", "lsh-one-chunk"],
)
def test_reformer_kept_bytes_equal_what_its_module_saves(attention, rounds, near):
    """Reformer's attention has no fused kernel: what its module saves is the truth. A token: the input, the query,
    the scaled key, the value and o's input (D + 4·64), LSH the key norm's inverse RMS a head (4). A sequence: one
    chunk, the softmax (2 bytes × 4 heads × 16²); in chunks, a token the sort order (int64 a round and head; local
    attention's one position), the gathered queries (rounds × 64), the neighbouring chunks' keys and values
    (rounds × near × 64 each) and the softmax over their near × 4 keys (rounds × 4 heads)."""
    spec = attention_model({"n_heads": 4, "head_dim": 16, **attention}, "learned", "layernorm")
    block = dict(spec.layers[0].blocks())["attention"]
    lsh = attention["kind"] == "lsh"
    kept = D + 4 * 64 + (4 if lsh else 0)
    assert block.kept_elements(spec) == kept
    if near == 0:
        sequence = 2 * 4 * TOKENS * TOKENS
    else:
        order = 4 * 4 * rounds if lsh else 4
        sequence = 2 * TOKENS * (order + rounds * 64 + 2 * rounds * near * 64 + rounds * 4 * near * 4)
    assert block.score_bytes(spec, TOKENS, True) == sequence
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * kept + sequence


REL = {"kind": "rel_attention", "n_heads": 4, "n_kv_heads": 2, "rel_extent": 8}  # 16-wide heads, d_rel 16, K 4
INKLING2 = {"qk_norm": False, "output_gate": True, "token_sinks": True, "l2_clip": True, "v_norm": True, "conv_scale": True}


@pytest.mark.parametrize(
    ("extra", "norm", "own"),
    [
        # own: beyond the input, the relative states (4 × 16), the kernel's Q, K, V, biases and output
        # (64 + 32 + 32 + 4 × 8 + 64) and the output convolution's input (64), derived by hand
        ({}, "rmsnorm", 2 * 32 + (64 + 8) + (32 + 4)),  # the convolutions' inputs; q_norm's and k_norm's
        ({}, "layernorm", 2 * 32 + (64 + 16) + (32 + 8)),  # a LayerNorm's mean beside its inverse RMS
        # the clips (q: 2·64 + 16, k: 32 + 8, the states: 2·64 + 16), v's norm (32 + 2), the gate (2·64)
        (INKLING2 | {"window": 6}, "rmsnorm", 2 * 32 + 144 + 40 + 144 + 34 + 128),
        # the keys' and values' own norms (2·(64 + 2)); each dynamic convolution's windows and taps (2·32·4)
        ({"qk_norm": False, "dynamic_conv": True, "kv_inputs": True}, "rmsnorm", 132 + 2 * 2 * 32 * 4),
    ],
    ids=["inkling", "inkling-layernorm", "inkling2-sliding", "inkling2-full-dynamic-conv"],
)
def test_rel_attention_kept_elements_equal_fused_saved(extra, norm, own):
    """Inkling's attention with its bias looked up by distance inside a flash kernel (as FlashDeBERTa looks up its
    position scores): what it keeps a token, derived by hand per variant, and the log-sum-exp, 4 bytes a query and
    head."""
    spec = attention_model(REL | extra, "rotary", norm)
    expected = D + own + 64 + (64 + 32 + 32 + 4 * 8 + 64) + 64
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected + 4 * 4 * TOKENS


CSA = {"kind": "csa", "n_heads": 4, "head_dim": 16, "q_lora_rank": 32, "o_groups": 2, "o_lora_rank": 16, "window": 8}
CSA |= {"rotary_dim": 8}
INDEXER = {"index_n_heads": 2, "index_head_dim": 8}


@pytest.mark.parametrize(
    ("extra", "positions", "norm"),
    [
        ({}, "rotary", "rmsnorm"),
        ({"compress_rate": 4}, "rotary", "rmsnorm"),
        ({"compress_rate": 4, "overlap": True, "index_topk": 2} | INDEXER, "rotary", "rmsnorm"),
        ({"compress_rate": 3, "sinks": False}, "rotary", "layernorm"),
        ({"compress_rate": 2, "overlap": True, "index_topk": 3} | INDEXER, "learned", "layernorm"),
    ],
    ids=["window", "hca", "csa-indexed", "hca-3-layernorm", "csa-no-rotary"],
)
def test_csa_kept_bytes_equal_fused_saved(extra, positions, norm):
    """DeepSeek-V4's attention as one sparse flash kernel keeps it, 4 heads of 16, q latent 32: a token the input
    (D), q_a's output and its norm's statistic (32 + 2, a LayerNorm's 4), the latent (32), q_b's output and its
    weightless norm's inverse RMS a head (64 + 4), the kernel's Q and output (2·64) and o_a's input, the output
    turned back (64; without rotary positions the kernel's output itself), the key-value head (16) and kv's output
    with its statistic (16 + 2), o_b's input (2 × 16), the indexer's chosen ids (int64, 4 each). A sequence: the
    log-sum-exp with the sink, and with w = ⌊16 / m⌋ entries, the kv the gated sum reads (16 × 16; overlapping,
    w × 2m × 16), the gates' softmax (w × m × series·16), the entries before their norm and after (w × 16 each)
    and the norm's statistic (4 bytes an entry, 8 a LayerNorm's)."""
    spec = attention_model(CSA | extra, positions, norm)
    block = dict(spec.layers[0].blocks())["attention"]
    stat = 4 if norm == "layernorm" else 2
    turned = 64 if positions == "rotary" else 0
    kept = D + (32 + stat) + 32 + (64 + 4) + 2 * 64 + turned + 16 + (16 + stat) + 2 * 16 + 4 * extra.get("index_topk", 0)
    assert block.kept_elements(spec) == kept
    sequence = 4 * 4 * TOKENS
    if "compress_rate" in extra:
        m, series = extra["compress_rate"], 2 if extra.get("overlap") else 1
        w = TOKENS // m
        kv = w * 2 * m * 16 if extra.get("overlap") else TOKENS * 16
        sequence += 2 * (kv + w * m * series * 16 + 2 * w * 16) + (8 if norm == "layernorm" else 4) * w
    assert block.score_bytes(spec, TOKENS, True) == sequence
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * kept + sequence


@pytest.mark.parametrize(
    ("extra", "norm", "value_norm"),
    [
        ({}, "rmsnorm", 32 + 2 * 2),  # V before the norm (2 KV heads × 16) and a statistic a KV head
        ({"k_eq_v": True}, "rmsnorm", 32 + 2 * 2),  # V is k's raw projection, not otherwise kept
        ({"k_eq_v": True, "qk_norm": "head"}, "rmsnorm", 2 * 2),  # k_norm keeps that projection already
        ({"k_eq_v": True, "qk_norm": "full"}, "layernorm", 2 * 2),  # the value norm is an RMS norm: 2 a row
    ],
    ids=["v-norm", "k-eq-v", "k-eq-v-head-norm", "k-eq-v-full-layernorm"],
)
def test_value_norm_kept_elements_equal_fused_saved(extra, norm, value_norm):
    """Gemma 4's weightless RMS norm on each value head as a fused norm keeps it: its input (V before it) and an fp32
    statistic a KV head, beside what grouped-query attention keeps (the input, Q and the output at 4 heads of 16, K
    and V at 2; q/k norms their inputs and statistics); and the log-sum-exp, 4 bytes a query and head."""
    spec = attention_model({"n_heads": 4, "n_kv_heads": 2, "v_norm": True, **extra}, "rotary", norm)
    stat = 4 if norm == "layernorm" else 2
    qk = {"head": 96 + 6 * stat, "full": 96 + 2 * stat}.get(extra.get("qk_norm"), 0)
    expected = D + 64 + 64 + 32 + 32 + qk + value_norm
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected + 4 * 4 * TOKENS


FUSED_FORMS = {
    "dense_moe": lambda: ffn_model({"kind": "dense_moe", "dense": GATED, "n_experts": E, "top_k": K, "expert": SMALL}),
    "sink_moe": lambda: ffn_model(
        {"kind": "sink_moe", "n_experts": E, "top_k": K, "expert": SMALL, "n_shared_experts": 1, "shared": SMALL, "conv_kernel": 3}
    ),
    "sink_moe-sigmoid": lambda: ffn_model({"kind": "sink_moe", "n_experts": E, "top_k": K, "expert": SMALL, "router": "sigmoid"}),
    "cdmoe": lambda: ffn_model({"kind": "cdmoe", "d_ff": FF, "n_experts": 100, "top_k": 5}),
    "cca": lambda: attention_model({"kind": "cca", "n_heads": 4, "n_kv_heads": 1, "time0": 3, "bias": True, "rotary_dim": 8}),
    "span_conv": lambda: attention_model({"kind": "span_conv", "n_heads": 4, "kernel": 5}, "learned", "layernorm"),
    "qsa": lambda: attention_model(QSA),
    "block_sparse": lambda: attention_model(SPARSE | {"index_local_blocks": 1}),
    "disentangled": lambda: attention_model({"kind": "disentangled", "n_heads": 4, "span": 4}, "learned", "layernorm"),
    "block_local": lambda: attention_model(
        {"kind": "block_local", "n_heads": 4, "n_kv_heads": 2, "radius": 4, "global_block": 3}, "learned"
    ),
    "rel_attention": lambda: attention_model(REL),
    "rel_attention-inkling2": lambda: attention_model(REL | INKLING2 | {"window": 6, "dynamic_conv": True, "kv_inputs": True}),
    "csa": lambda: attention_model(CSA | {"compress_rate": 4, "overlap": True, "index_topk": 2} | INDEXER),
    "csa-hca-no-rotary": lambda: attention_model(CSA | {"compress_rate": 3}, "learned"),
    "mha-v-norm-k-eq-v": lambda: attention_model({"n_heads": 4, "n_kv_heads": 2, "v_norm": True, "k_eq_v": True, "qk_norm": "head"}),
    "moa": lambda: attention_model({"kind": "moa", "n_experts": 4, "top_k": 2, "n_kv_heads": 2, "head_dim": 16}),
    "moe-skip": lambda: ffn_model({"kind": "moe", "n_experts": E, "top_k": K, "expert": GATED, "router_mlp": R, "skip_expert": True}),
}


@pytest.mark.parametrize("name", list(FUSED_FORMS))
def test_fused_forms_of_the_variants_compute_what_the_modules_do(name):
    """The variants' fused forms change what is kept, not what is computed: the output and every gradient as the
    module's own forward gives them, in fp32."""
    import torch

    from ffncalc.blocks import _fused

    spec = FUSED_FORMS[name]()
    slot = "ffn" if name.split("-")[0] in ("dense_moe", "sink_moe", "cdmoe", "moe") else "attention"
    block = dict(spec.layers[0].blocks())[slot]
    torch.manual_seed(0)
    module = block.torch_module(spec, True)
    for p in module.parameters():  # every matrix drawn afresh: tables held at zero show their gradients, and none
        if p.dim() >= 2:  # is left as uninitialised memory
            torch.nn.init.normal_(p, std=0.1)
    x = torch.randn(1, TOKENS, D, requires_grad=True)
    results = []
    for fused in (False, True):
        module.zero_grad()
        x.grad = None
        if fused:
            with _fused.fused():
                out = module(x)
        else:
            out = module(x)
        out.square().sum().backward()
        results.append([out.detach(), x.grad.clone(), *(p.grad.clone() for p in module.parameters() if p.grad is not None)])
    assert len(results[0]) == len(results[1])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


# --- recurrent mixers: the chunked linear-attention kernels, the RG-LRU, RWKV, mLSTM and the hybrids -------------------

RECURRENT_KINDS = ("gated_deltanet", "kda", "lightning", "rglru", "rwkv_time_mix", "rwkv_channel_mix", "mlstm", "parallel", "mamba")


@pytest.mark.parametrize(
    ("hk", "h", "dv", "extra"),
    [(2, 4, 8, {}), (1, 1, 16, {"neg_eigval": True, "chunk_size": 8}), (2, 4, 8, {"activation": "gelu", "conv_bias": True})],
    ids=["gva", "neg-eigval", "gelu"],
)
def test_gated_deltanet_kept_elements_equal_fused_saved(hk, h, dv, extra):
    """Gated DeltaNet as FLA runs it (GDNGateFunction, then ChunkGatedDeltaRuleFunction with the l2norm in the kernel,
    causal-conv1d with its SiLU, FusedRMSNormGated): x (D); the convolution's input q, k, v (conv = 2·hk·16 + h·dv);
    β (h; 2·sigmoid is a second copy, h more); the gate's raw a made contiguous (h); q and k normalised (2·hk·16)
    and their fp32 reciprocal norms (2 · 2·hk); v made contiguous (h·dv); the decay's fp32 running sum (2·h); A, one
    bf16 row of chunk_size a token and value head; the kernel's output, z copied to rows (h·dv each) and the norm's
    fp32 inverse RMS (2·h); out_proj's input (h·dv). GELU after the convolution keeps its input (conv) as well."""
    attention = {"kind": "gated_deltanet", "n_key_heads": hk, "key_head_dim": 16, "n_value_heads": h, "value_head_dim": dv}
    spec = mla_model(attention | extra)
    conv = 2 * hk * 16 + h * dv
    chunk = extra.get("chunk_size", 64)
    beta = 2 * h if extra.get("neg_eigval") else h
    expected = D + conv + beta + h + 2 * hk * 16 + 2 * 2 * hk + h * dv + 2 * h + h * chunk + 2 * h * dv + 2 * h + h * dv
    expected += conv if extra.get("activation") == "gelu" else 0
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected


@pytest.mark.parametrize("extra", [{}, {"full_gates": True, "safe_gate": True, "chunk_size": 8}], ids=["low-rank", "full-safe"])
def test_kda_kept_elements_equal_fused_saved(extra):
    """Kimi Delta Attention as FLA's KimiDeltaAttention runs it (chunk_kda with the l2norm and the gate in the kernel):
    x (D); the convolution's input (3·64); q and k normalised (2·64) and their fp32 reciprocal norms (2 · 2·4); v
    made contiguous (64); the decay's fp32 running sum (2·64) and f's raw output (64); β (4); Aqk and Akk, bf16 rows
    of chunk_size (2 · 4·chunk); f_a's and g_a's outputs (2·16, not with full gates); the kernel's output, the gate
    and the norm's fp32 inverse RMS (64 + 64 + 2·4); o's input (64)."""
    spec = mla_model({"kind": "kda", "n_heads": 4, "head_dim": 16, **extra})
    w, h, chunk = 64, 4, extra.get("chunk_size", 64)
    low_rank = 0 if extra.get("full_gates") else 2 * 16
    expected = D + 3 * w + 2 * w + 2 * 2 * h + w + 2 * w + w + h + 2 * h * chunk + low_rank + 2 * w + 2 * h + w
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected


@pytest.mark.parametrize(("activation", "act"), [("silu", 3 * 64), ("identity", 0), ("quick_gelu", 2 * 3 * 64)])
def test_lightning_kept_elements_equal_fused_saved(activation, act):
    """MiniMax's lightning attention with a kernel that keeps q, k and v (ChunkSimpleGLAFunction with a fixed decay,
    made contiguous by its input_guard): x (D); what the activation keeps of qkv's output (``act``: SiLU its input,
    3·64; the identity nothing; quick GELU its input and its sigmoid); q, k, v (3·64); the kernel's output (64) and
    the fused RMSNorm's fp32 statistic (2); the norm's output and the gate's sigmoid output (2·64); out's input (64)."""
    spec = mla_model({"kind": "lightning", "n_heads": 4, "activation": activation})
    expected = D + act + 3 * 64 + 64 + 2 + 2 * 64 + 64
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected


RECURRENT_FORMS = {
    "gated_deltanet": {"kind": "gated_deltanet", "n_key_heads": 2, "key_head_dim": 16, "n_value_heads": 4, "value_head_dim": 8},
    "gated_deltanet-neg": {"kind": "gated_deltanet", "n_key_heads": 1, "key_head_dim": 16, "neg_eigval": True, "chunk_size": 8},
    "kda": {"kind": "kda", "n_heads": 4, "head_dim": 16},
    "kda-full-safe": {"kind": "kda", "n_heads": 4, "head_dim": 16, "full_gates": True, "safe_gate": True, "chunk_size": 8},
    "lightning": {"kind": "lightning", "n_heads": 4, "chunk_size": 4},
    "rglru": {"kind": "rglru", "n_blocks": 2, "conv_kernel": 3},
    "mlstm": {"kind": "mlstm", "n_heads": 2, "qk_dim": 32, "v_dim": 128, "chunk_size": 4, "bias": True},
    "mamba-heads": {"kind": "mamba", "state_size": 8, "time_step_rank": 2, "n_heads": 2, "use_bias": True, "use_conv_bias": False},
    "parallel": {
        "kind": "parallel",
        "mixers": [
            {"kind": "mha", "n_heads": 4, "n_kv_heads": 2},
            {"kind": "gated_deltanet"}
            | {"n_key_heads": 2, "key_head_dim": 16, "n_value_heads": 4, "value_head_dim": 8, "chunk_size": 8},
        ],
    },
}


@pytest.mark.parametrize("attention", list(RECURRENT_FORMS.values()), ids=list(RECURRENT_FORMS))
def test_recurrent_fused_forms_compute_what_the_modules_do(attention):
    """The recurrent mixers' fused forms (their kernels keeping what the real kernels keep and recomputing the rest)
    give the module's own output and every gradient, in fp32."""
    import torch

    from ffncalc.blocks import _fused

    spec = mla_model(attention)
    block = next(b for slot, b in spec.layers[0].blocks() if b.kind in RECURRENT_KINDS)
    torch.manual_seed(0)
    module = block.torch_module(spec, True)
    x = torch.randn(1, TOKENS, D, requires_grad=True)
    results = []
    for fused in (False, True):
        module.zero_grad()
        x.grad = None
        if fused:
            with _fused.fused():
                out = module(x)
        else:
            out = module(x)
        out.square().sum().backward()
        results.append([out.detach(), x.grad.clone(), *(p.grad.clone() for p in module.parameters() if p.grad is not None)])
    assert len(results[0]) == len(results[1])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("extra", "y_branch"), [({}, 2 * D), ({"activation": "sigmoid", "width": 32}, 32), ({"activation": "identity"}, D)], ids=str
)
def test_rglru_kept_elements_equal_fused_saved(extra, y_branch):
    """Griffin's recurrent block with causal-conv1d's kernel and the gates and the scan as one kernel keeping its
    inputs and output (as FLA's HGRN keeps its gate and output): x (D); the y branch (``y_branch``: linear_y's output
    and y for tanh-GELU; y alone where the activation keeps its output or is the identity); the convolution's input
    and output u (2·w); the gates' pre-activations (2·w); h (w); h ⊙ y (w)."""
    spec = mla_model({"kind": "rglru", "n_blocks": 2, **extra})
    w = extra.get("width", D)
    expected = D + y_branch + 2 * w + 2 * w + w + w
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected


def rwkv_model(attention_dim: int | None = None):
    return from_data(
        {
            "name": "small",
            "vocab_size": 256,
            "d_model": D,
            "n_layers": 1,
            "context_length": 64,
            "positions": "none",
            "attention": {"kind": "rwkv_time_mix", **({} if attention_dim is None else {"attention_dim": attention_dim})},
            "ffn": {"kind": "rwkv_channel_mix", "d_ff": FF},
            "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
        }
    )


@pytest.mark.parametrize("attention_dim", [None, 32])
def test_rwkv_kept_elements_equal_fused_saved(attention_dim):
    """RWKV-4 with its CUDA WKV kernel (k, v and its output kept) and fused token-shift mixes (each keeps its input
    alone): the time mix keeps x, the three mixes (4·D), k, v, r, the WKV's output and r ⊙ wkv (5·A); the channel mix
    x and its two mixes (3·D), the ReLU's output and its square (2·FF), r and value's output (2·D)."""
    spec = rwkv_model(attention_dim)
    a = attention_dim or D
    blocks = dict(spec.layers[0].blocks())
    assert blocks["attention"].kept_elements(spec) == 4 * D + 5 * a
    assert blocks["ffn"].kept_elements(spec) == 3 * D + 2 * FF + 2 * D
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * (4 * D + 5 * a)
    assert fused_saved_bytes(spec, "ffn") == TOKENS * 2 * (5 * D + 2 * FF)


@pytest.mark.parametrize("slot", ["attention", "ffn"])
def test_rwkv_fused_forms_compute_what_the_modules_do(slot):
    """The fused WKV and token-shift mixes give the modules' own outputs and gradients, in fp32."""
    import torch

    from ffncalc.blocks import _fused

    spec = rwkv_model(32)
    torch.manual_seed(0)
    module = dict(spec.layers[0].blocks())[slot].torch_module(spec, True)
    x = torch.randn(1, TOKENS, D, requires_grad=True)
    results = []
    for fused in (False, True):
        module.zero_grad()
        x.grad = None
        if fused:
            with _fused.fused():
                out = module(x)
        else:
            out = module(x)
        out.square().sum().backward()
        results.append([out.detach(), x.grad.clone(), *(p.grad.clone() for p in module.parameters() if p.grad is not None)])
    assert len(results[0]) == len(results[1])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("h", "qk", "v", "extra"), [(4, 32, 64, {}), (2, 32, 128, {"chunk_size": 4, "bias": True})], ids=["plain", "bias"]
)
def test_mlstm_kept_elements_equal_fused_saved(h, qk, v, extra):
    """The mLSTM layer with the xLSTM chunkwise kernel (q, k, v, the gates, the normaliser and stabiliser kept): x (D);
    q, k, v at (B, h, s, d) made contiguous (2·qk + v); the gates' tanh outputs and the capped gates made contiguous
    (4·h); the fp32 normaliser and stabiliser (2 · 2·h); the kernel's output (v) and the fused per-head LayerNorm's
    fp32 mean and inverse std (2 · 2·h); the norm's output, the output gate's sigmoid and their product (3·v)."""
    spec = mla_model({"kind": "mlstm", "n_heads": h, "qk_dim": qk, "v_dim": v, **extra})
    expected = D + 2 * qk + v + 4 * h + 2 * 2 * h + v + 2 * 2 * h + 3 * v
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected


MHA = {"kind": "mha", "n_heads": 4, "n_kv_heads": 2}
MAMBA2 = {"kind": "mamba2", "n_heads": 8, "head_dim": 16, "state_size": 8, "n_groups": 1}
GDN = {"kind": "gated_deltanet", "n_key_heads": 2, "key_head_dim": 16, "n_value_heads": 4, "value_head_dim": 8}


@pytest.mark.parametrize(
    ("members", "own"),
    [
        # attention: Q, K, V, the output at the heads (64 + 32 + 32 + 64); Mamba-2: zxbcdt (128 + 128 + 16 + 8), the
        # scan's output (128) and the gated norm's statistic (2)
        ([MHA, MAMBA2], [64 + 32 + 32 + 64, 280 + 128 + 2]),
        # Gated DeltaNet: the conv's input (96), β and a (8), q, k and their statistics (64 + 8), v (32), the decay's
        # running sum (8), A (4 × 64), the kernel's output, z, the norm's statistic (32 + 32 + 8), out_proj's input (32)
        ([GDN, MHA], [96 + 8 + 72 + 32 + 8 + 256 + 72 + 32, 64 + 32 + 32 + 64]),
    ],
    ids=["falcon-h1", "gdn-beside-attention"],
)
def test_parallel_kept_elements_equal_fused_saved(members, own):
    """Falcon-H1's mixers side by side keep what each keeps beside their shared input, kept once (D); the attention's
    flash kernel its fp32 log-sum-exp, 4 bytes a query and head."""
    spec = mla_model({"kind": "parallel", "mixers": members})
    expected = D + sum(own)
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected + 4 * 4 * TOKENS


def zamba_model(block: dict):
    return from_data(
        {
            "name": "small",
            "vocab_size": 256,
            "d_model": D,
            "n_layers": 2,
            "context_length": 64,
            "positions": "rotary",
            "attention": {"kind": "mamba2", "n_heads": 8, "head_dim": 16, "state_size": 8, "n_groups": 1},
            "ffn": {"kind": "none"},
            "norm": {"kind": "rmsnorm", "per_layer": 1},
            "layers": [{"repeat": 1}, {"repeat": 1, "shared": "A"}],
            "shared_blocks": {"A": block},
        }
    )


@pytest.mark.parametrize(
    ("block", "kv", "adapters"),
    [
        ({"n_heads": 4, "n_kv_heads": 2, "d_ff": FF}, 2, 0),
        ({"n_heads": 4, "d_ff": FF, "attention_adapters": True, "mlp_adapters": True, "adapter_rank": 8}, 4, 3 * 8 + 8),
    ],
    ids=["gqa", "adapters"],
)
def test_zamba_shared_kept_elements_equal_fused_saved(block, kv, adapters):
    """Zamba's shared block, measured alone (the layer's input standing in for the embeddings): [x; e] and the input
    norm's fp32 statistic (2·D + 2); the normed input (2·D); Q and the heads' output (2 · 4 × 32), K and V at their kv
    heads (2 · kv × 32); the attention's output and the MLP norm's statistic (D + 2); the normed input (D), GELU's
    gated MLP (4·FF); linear's input (D); each adapter's rank (3·8 + 8 with both). The flash kernel's fp32
    log-sum-exp: 4 bytes a query and head."""
    from ffncalc.analysis.keptcheck import check

    spec = zamba_model({"kind": "zamba_transformer", **block})
    hd = 2 * D // 4
    expected = 2 * D + 2 + 2 * D + 2 * 4 * hd + 2 * kv * hd + D + 2 + D + 4 * FF + D + adapters
    shared = next(c for c in check(spec, TOKENS) if c.kind == "zamba_transformer")
    assert shared.planned == shared.saved == TOKENS * 2 * expected + 4 * 4 * TOKENS


def test_zamba_shared_fused_form_computes_what_the_module_does():
    """Inside ``fused()`` the shared block's attention reads K and V at their own heads: the same output and
    gradients, in fp32."""
    import torch

    from ffncalc.blocks import _fused

    spec = zamba_model({"kind": "zamba_transformer", "n_heads": 4, "n_kv_heads": 2, "d_ff": FF})
    block = next(b for slot, b in spec.layers[1].blocks() if b.kind == "zamba_transformer")
    torch.manual_seed(0)
    module = block.torch_module(spec, True)
    x, e = torch.randn(1, TOKENS, D, requires_grad=True), torch.randn(1, TOKENS, D)
    results = []
    for fused in (False, True):
        module.zero_grad()
        x.grad = None
        if fused:
            with _fused.fused():
                out = module(x, e, 0)
        else:
            out = module(x, e, 0)
        out.square().sum().backward()
        results.append([out.detach(), x.grad.clone(), *(p.grad.clone() for p in module.parameters() if p.grad is not None)])
    assert len(results[0]) == len(results[1])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("heads", "n", "rank", "extra"), [(4, 4, 4, {}), (2, 8, 2, {"use_bias": True, "use_conv_bias": False})])
def test_zamba_mamba_heads_kept_elements_equal_fused_saved(heads, n, rank, extra):
    """Zamba's multi-head Mamba as ZambaMambaMixer runs it on causal-conv1d and one selective_scan_fn a head: x (D);
    in_proj's output xz (2·d_inner, the scans' z views); the convolution's input copy and output (2·d_inner); x_proj's
    output (heads · (rank + 2N), dt_proj's input and the scans' B and C views); dt_proj's output (d_inner); the scans'
    output before the gate (d_inner) and the heads' gated outputs joined (d_inner, out_proj's input); a sequence the
    scans' fp32 chunk states, d_inner × 2N × 4 bytes."""
    spec = mla_model({"kind": "mamba", "state_size": n, "time_step_rank": rank, "n_heads": heads, **extra})
    inner = 2 * D
    expected = D + 2 * inner + 2 * inner + heads * (rank + 2 * n) + inner + 2 * inner
    assert dict(spec.layers[0].blocks())["attention"].kept_elements(spec) == expected
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected + inner * 2 * n * 4


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_bottleneck_layer_kept_elements_equal_autograd_saved(activation, dtype):
    """MobileBERT's layer (blocks/bottleneck.py), inner width t = 16, 4 heads, FFNs of 32, three FFNs: per token x (d)
    and the output norm's input (d); the two bottlenecks' outputs before their norms, the shared q/k input, q, k, v,
    the heads' output, the attention output's sum and its norm's output (9·t); each FFN its activation's output (and
    gelu its input), its sum and its output (2·t); beside them the softmax's 4 × s × s probabilities."""
    import torch

    t, f, ffns, heads = 16, 32, 3, 4
    layer = {"kind": "bottleneck", "n_heads": heads, "inner": t, "d_ff": f, "ffns": ffns, "activation": activation}
    spec = attention_model(layer, "learned", "layernorm")
    block = dict(spec.layers[0].blocks())["attention"]
    per_ffn = f * (1 if activation == "relu" else 2) + 2 * t
    expected = 2 * D + 9 * t + ffns * per_ffn
    assert block.kept_elements(spec) == expected
    scores = heads * TOKENS * TOKENS
    assert saved_elements(block.torch_module(spec, True), getattr(torch, dtype)) == TOKENS * expected + scores


@pytest.mark.parametrize(
    ("block_size", "random", "padded"),
    [
        (2, 1, 16),  # (5 + 2)·2 = 14 < 16 tokens: block-sparse, 8 blocks
        (3, 0, 18),  # (5 + 0)·3 = 15 < 16: padded to 18, 6 blocks
        (1, 2, 16),  # (5 + 4)·1 = 9 < 16: 16 one-token blocks, two random blocks a row
        (4, 1, 0),  # (5 + 2)·4 = 28 >= 16: full attention, as flash keeps it
    ],
    ids=["sparse", "sparse-padded", "sparse-two-random", "full"],
)
def test_bigbird_kept_bytes_equal_what_its_module_saves(block_size, random, padded):
    """BigBird's block-sparse attention has no fused kernel: what its module saves is the truth (up to the threshold
    it is flash attention: the input, Q, K, V and the output a token, D + 4·64, and the log-sum-exp). Past it, b-token
    blocks of queries, n = P / b of them, each against its rows of key blocks: the first and last against all n, the
    second and second-last against 4 + r, the n − 4 middle ones against 5 + r. A token: the input, K and V (padded to P:
    the padded copies are what the products read), the heads' output (o's input), D + 3·64, Q replaced by the scaled
    query blocks (P × 64 in all); a sequence, per head: the softmax of every block row (b × its keys), the gathered key
    and value blocks of every row but the first and last (which read K and V whole), b × 16 each per block read."""
    bigbird = {"kind": "bigbird", "n_heads": 4, "block_size": block_size, "random_blocks": random}
    spec = attention_model(bigbird, "learned", "layernorm")
    block = dict(spec.layers[0].blocks())["attention"]
    assert block.kept_elements(spec) == D + 4 * 64
    if not padded:
        sequence = 4 * 4 * TOKENS
    else:
        n, b = padded // block_size, block_size
        rows = [n, 4 + random] + [5 + random] * (n - 4) + [4 + random, n]  # key blocks each query block meets
        softmax = sum(b * keys * b for keys in rows)
        gathered = sum(keys * b * 16 for keys in rows[1:-1])
        per_head = padded * 16 + softmax + 2 * gathered + 2 * (padded - TOKENS) * 16 - TOKENS * 16
        sequence = 2 * 4 * per_head
    assert block.score_bytes(spec, TOKENS, True) == sequence
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * (D + 4 * 64) + sequence


@pytest.mark.parametrize(("global_tokens", "block_size"), [(4, 4), (2, 7), (8, 2), (0, 4)])
def test_global_local_kept_bytes_and_products_equal_what_its_module_saves_and_runs(global_tokens, block_size):
    """PEGASUS-X's global-local attention (an unstaggered layer) has no fused kernel: what its module saves is the
    truth. Of 16 rows, G global tokens and L = 16 − G local positions in n = L / b blocks, 4 heads of 16. A token: the
    input, K and V (the global queries' products read them whole), the global and local scaled queries and the heads'
    output, D + 4·64. A sequence, per head: the global queries' softmax (G × 16 scores), each block's keys and values
    gathered beside it (G + b rows of 16 each), the blocks' softmax (L × (G + b) scores). verify holds its parameters
    (the global tokens' LayerNorm, 2·64) and its products (QKᵀ: G·16 + L·(G + b) pairs of 16, 2 FLOPs each, 4 heads)
    against the module's."""
    from ffncalc.analysis.verify import verify

    g, b = global_tokens, block_size
    local = TOKENS - g
    attention = {"kind": "global_local", "n_heads": 4, "block_size": b, "global_tokens": g, "stagger": False}
    spec = attention_model(attention, "learned", "layernorm")
    block = dict(spec.layers[0].blocks())["attention"]
    assert block.kept_elements(spec) == D + 4 * 64
    sequence = 2 * 4 * (g * TOKENS + 2 * (local // b) * (g + b) * 16 + local * (g + b))
    assert block.score_bytes(spec, TOKENS, True) == sequence
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * (D + 4 * 64) + sequence
    report = verify(spec, seq_len=TOKENS)
    assert report.ok, report.failures
    checks = {c.component: c for c in report.checks}
    assert checks["attn.scores"].torch_flops == 2 * 4 * (g * TOKENS + local * (g + b)) * 16
    assert checks["attn.global_norm"].torch_params == 2 * D


@pytest.mark.parametrize(("ngram", "buckets"), [(1, 8), (3, 4)])
def test_ngram_kept_bytes_and_products_equal_what_its_module_saves_and_runs(ngram, buckets):
    """ProphetNet's n-stream attention has no fused kernel: what its module saves is the truth. Of 16 rows, the main
    stream's T = 16 / (1 + ngram) and each predicting stream's T, 4 heads of 16. A row: the input, the scaled Q, K, V
    and the heads' output (D + 4·64), and relative_pos_embeddings' output (buckets × 4 heads), which the bucket gathers
    save. A sequence, per head: the main stream's softmax (T × T), each predicting stream's (T × 2T) and its keys and
    values, the main stream's and its own together (2T rows of 16 each). verify holds the products (QKᵀ: T² + ngram·2T²
    pairs of 16, 2 FLOPs each, 4 heads) and relative_pos_embeddings (D × 4·buckets and a bias) against the module's."""
    from ffncalc.analysis.verify import verify

    t = TOKENS // (1 + ngram)
    spec = attention_model({"kind": "ngram", "n_heads": 4, "ngram": ngram, "buckets": buckets}, "learned", "layernorm")
    block = dict(spec.layers[0].blocks())["attention"]
    kept = D + 4 * 64 + 4 * buckets
    assert block.kept_elements(spec) == kept
    sequence = 2 * 4 * (t * t + ngram * t * 2 * t + ngram * 2 * (2 * t * 16))
    assert block.score_bytes(spec, TOKENS, True) == sequence
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * kept + sequence
    report = verify(spec, seq_len=TOKENS)
    assert report.ok, report.failures
    checks = {c.component: c for c in report.checks}
    assert checks["attn.scores"].torch_flops == 2 * 4 * (t * t + ngram * 2 * t * t) * 16
    assert checks["attn.rel.weight"].torch_params + checks["attn.rel.bias"].torch_params == (D + 1) * 4 * buckets


@pytest.mark.parametrize("pooled", [False, True])
def test_rel_shift_kept_bytes_and_products_equal_what_its_module_saves_and_runs(pooled):
    """The Funnel Transformer's relative-shift attention has no fused kernel: what its module saves is the truth. Of
    16 positions (keys), m queries (16, or pooled by 2: 8), 4 heads of 16 (a = 64), R relative positions (2·16, or 16 +
    2·8). A key position: the input, K and V, D + 2·64; pooled, the mean pool's input too (D). A query: the query plus
    r_w_bias, plus r_r_bias and plus r_s_bias (the three products' operands) and the heads' output, 4·64; pooled, its
    input too (q's, D). A sequence:
    the softmax's probabilities (4 heads × m × 16), the R relative embeddings (R × D) and their projection (R × 64),
    cls_mask (m × 16), 16-bit, and the segment comparison's m × 16 booleans. verify holds the products: QKᵀ and AV
    over m × 16 pairs, the position scores over m × R, r_kernel over the R positions once, seg_embed's two a query."""
    from ffncalc.analysis.verify import verify

    m, a = (8, 64) if pooled else (16, 64)
    rows = 16 + (2 * m if pooled else m)
    from dataclasses import replace

    spec = attention_model({"kind": "rel_shift", "n_heads": 4}, "learned", "layernorm")
    if pooled:  # the Funnel encoder's pooled layer (parts/funnel.py sets it; a spec cannot)
        layer = spec.layers[0]
        spec = replace(spec, layers=(replace(layer, attention=replace(layer.attention, pooled=True)),))
    block = dict(spec.layers[0].blocks())["attention"]
    per_key = D + 2 * a + (D if pooled else 0)
    assert TOKENS * block.kept_elements(spec) == TOKENS * per_key + m * (4 * a + (D if pooled else 0))
    sequence = 2 * (4 * m * TOKENS + rows * D + rows * a + m * TOKENS) + m * TOKENS
    assert block.score_bytes(spec, TOKENS, True) == sequence
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * block.kept_elements(spec) + sequence
    if pooled:
        return  # a layer whose queries are pooled runs inside the Funnel encoder (parts/funnel.py), verified there
    report = verify(spec, seq_len=TOKENS)
    assert report.ok, report.failures
    checks = {c.component: c for c in report.checks}
    assert checks["attn.scores"].torch_flops == checks["attn.values"].torch_flops == 2 * 4 * 16 * TOKENS * TOKENS
    assert checks["attn.positions"].torch_flops == 2 * 4 * 16 * TOKENS * rows
    assert checks["attn.rel.r_kernel.weight"].torch_flops == 2 * rows * D * a
    assert checks["attn.rel.seg_embed.weight"].torch_flops == 2 * TOKENS * 2 * a


@pytest.mark.parametrize(("heads", "distance"), [(4, 4), (2, 160)])
def test_rel_key_kept_bytes_equal_what_speecht5_attention_saves(heads, distance):
    """SpeechT5's relative-key attention has no fused kernel: what its eager module saves is the truth. A token: the
    input, the scaled queries, keys and values copied to (B·h, S, hd) and the heads' output copied back, D + 4·64; a
    sequence: the softmax's output, h × 16 × 16. The pairs' gathered rows are the encoder's (SpeechT5Encoder builds
    position_bias once for all its layers). transformers' SpeechT5Attention, given the same input and rows, saves the
    same bytes beside those rows; verify holds the relative product (16 queries × 16 keys × 64, 2 FLOPs each) against
    the module's."""
    import torch
    from transformers.models.speecht5.modeling_speecht5 import SpeechT5Attention

    from ffncalc.analysis.verify import verify

    attention = {"kind": "rel_key", "n_heads": heads, "qkv_bias": True, "o_bias": True, "max_distance": distance}
    spec = from_data(
        {
            "name": "small",
            "vocab_size": 256,
            "d_model": D,
            "n_layers": 1,
            "context_length": 64,
            "positions": "none",
            "mask": "bidirectional",
            "attention": attention,
            "ffn": {"kind": "dense", "activation": "gelu", "d_ff": FF},
            "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
        }
    )
    block = dict(spec.layers[0].blocks())["attention"]
    kept, sequence = D + 4 * 64, 2 * heads * TOKENS * TOKENS
    assert block.kept_elements(spec) == kept
    assert block.score_bytes(spec, TOKENS, True) == sequence
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * kept + sequence

    torch.manual_seed(0)
    theirs = SpeechT5Attention(D, heads, dropout=0.0).to(torch.bfloat16)
    rows = torch.randn(TOKENS, TOKENS, D // heads, dtype=torch.bfloat16)  # position_bias, the encoder's
    held = {t.untyped_storage().data_ptr() for t in (*theirs.parameters(), rows)}
    seen = {}

    def pack(t):
        if t.untyped_storage().data_ptr() not in held:
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    x = torch.randn(1, TOKENS, D, dtype=torch.bfloat16, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        theirs(x, position_bias=rows)
    assert sum(seen.values()) == TOKENS * 2 * kept + sequence

    report = verify(spec, seq_len=TOKENS)
    assert report.ok, report.failures
    checks = {c.component: c for c in report.checks}
    assert checks["attn.rel_scores"].torch_flops == 2 * heads * TOKENS * TOKENS * (D // heads)


def conformer_model(shaw: int):
    layer = {"kind": "conformer", "n_heads": 4, "qkv_bias": True, "o_bias": True, "d_ff": FF, "kernel": 5, "shaw": shaw}
    return from_data(
        {
            "name": "small",
            "vocab_size": 256,
            "d_model": D,
            "n_layers": 1,
            "context_length": 64,
            "positions": "none",
            "mask": "bidirectional",
            "attention": layer,
            "ffn": {"kind": "dense", "activation": "silu", "d_ff": FF, "bias": True},
            "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
        }
    )


@pytest.mark.parametrize("shaw", [0, 4], ids=["parakeet", "granite-speech"])
def test_conformer_kept_bytes_equal_what_its_module_saves(shaw):
    """A Conformer layer has no fused kernel for its relative positions: its eager modules' saved tensors are the truth,
    its norms as fused kernels keep them. d = 64, 4 heads of 16, d_ff 128, inner 64. A token: three LayerNorms' inputs
    and fp32 mean and inverse deviation (3 × (64 + 4)); ff1's input, linear1's and the SiLU's outputs (64 + 2·128); the
    attention's input, two query forms, K, V and the heads' output (64 + 5·64); the convolution module's input, the GLU's
    input (2·64), depthwise_conv's, BatchNorm's, the SiLU's and pointwise_conv2's inputs (64 + 6·64). A sequence of 16:
    Parakeet's relative_k_proj output over 31 positions (31 × 64) and its softmax in fp32 and cast (6 bytes a score);
    Granite Speech's softmax (2 bytes a score), its gathered table rows (16 × 16 × 16) and their int64 indices. verify
    holds both forms' parameters and products."""
    from ffncalc.analysis.verify import verify

    spec = conformer_model(shaw)
    block = dict(spec.layers[0].blocks())["attention"]
    kept = 3 * (D + 4) + (D + 2 * FF) + (D + 5 * 64) + (D + 6 * 64)
    assert block.kept_elements(spec) == kept
    scores = 4 * TOKENS * TOKENS
    sequence = 2 * scores + 2 * TOKENS * TOKENS * 16 + 8 * TOKENS * TOKENS if shaw else 2 * 31 * 64 + 6 * scores
    assert block.score_bytes(spec, TOKENS, True) == sequence
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * kept + sequence
    report = verify(spec, seq_len=TOKENS)
    assert report.ok, report.failures
    checks = {c.component: c for c in report.checks}
    rows = TOKENS if shaw else 31
    assert checks["attn.rel_scores"].torch_flops == 2 * 4 * TOKENS * rows * 16


def test_parakeet_block_saves_what_the_conformer_and_its_ffn_keep():
    """transformers' ParakeetEncoderBlock (eager, training, no dropout) saves the conformer kind's bytes and beside them
    what the layer's own parts keep: norm_self_att's and norm_feed_forward2's inputs and feed_forward2's (its input,
    linear1's and the SiLU's outputs), its BatchNorm's batch statistics (2 × 64, bf16), its LayerNorms' statistics in
    bf16 (2 bytes each a row: the CPU kernel's) where the fused norms keep fp32."""
    import torch
    from transformers.models.parakeet.configuration_parakeet import ParakeetEncoderConfig
    from transformers.models.parakeet.modeling_parakeet import ParakeetEncoderBlock, ParakeetEncoderRelPositionalEncoding

    config = ParakeetEncoderConfig(
        hidden_size=D, num_attention_heads=4, intermediate_size=FF, conv_kernel_size=5, attention_dropout=0.0,
        activation_dropout=0.0, num_hidden_layers=1,
    )  # fmt: skip
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    theirs = ParakeetEncoderBlock(config, 0).to(torch.bfloat16)
    x = torch.randn(1, TOKENS, D, dtype=torch.bfloat16, requires_grad=True)
    table = ParakeetEncoderRelPositionalEncoding(config)(x)  # the encoder's, once for all its layers
    held = {t.untyped_storage().data_ptr() for t in (*theirs.parameters(), *theirs.buffers(), table)}
    seen = {}

    def pack(t):
        if t.untyped_storage().data_ptr() not in held:
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        theirs(x, position_embeddings=table)
    spec = conformer_model(0)
    block = dict(spec.layers[0].blocks())["attention"]
    ours = TOKENS * 2 * block.kept_elements(spec) + block.score_bytes(spec, TOKENS, True)
    stats = TOKENS * 2 * 2  # a norm's two statistics a row: fp32 fused, bf16 here
    beside = 2 * TOKENS * 2 * (D + 2) + TOKENS * 2 * (D + 2 * FF) + 2 * 2 * 64 - 3 * stats
    assert sum(seen.values()) == ours + beside


def test_bottleneck_layer_kept_bytes_equal_fused_saved():
    """MobileBERT's layer as a flash kernel runs its attention (verify --memory): the same 16-bit elements a token as
    its eager module keeps (Q, K and V as given, the output o reads), and of the scores only the fp32 log-sum-exp of
    every query and head, 4 × 4 a token."""
    t, f, ffns, heads = 16, 32, 3, 4
    layer = {"kind": "bottleneck", "n_heads": heads, "inner": t, "d_ff": f, "ffns": ffns, "activation": "relu"}
    spec = attention_model(layer, "learned", "layernorm")
    expected = 2 * D + 9 * t + ffns * (f + 2 * t)
    assert fused_saved_bytes(spec, "attention") == TOKENS * 2 * expected + 4 * heads * TOKENS


@pytest.mark.parametrize("trigram", [True, False])
def test_trigram_embedding_keeps_its_projections_input(trigram):
    """MobileBERT's embedding_transformation keeps its input for its weight's gradient: the trigram rows, 3·E 16-bit
    elements a position (E = 16 here; E alone without the trigrams, the table narrower than d_model), once a sequence
    beside the layers: a training plan's activations hold 2 bytes each of them for every token of the micro-batch,
    and the embedding's module saves them (beside the lookup's int64 token ids)."""
    from dataclasses import replace

    import torch

    from ffncalc.analysis.memory import stack_bytes
    from ffncalc.analysis.plan import Step

    e, seq, batch = 16, 32, 2
    spec = from_data(
        {
            "name": "small",
            "vocab_size": 256,
            "d_model": D,
            "n_layers": 1,
            "context_length": 64,
            "positions": "learned",
            "mask": "bidirectional",
            "tie_embeddings": True,
            "trigram_embedding": {"width": e, "trigram": trigram},
            "attention": {"kind": "bottleneck", "n_heads": 4, "inner": 16, "d_ff": 32, "ffns": 2},
            "ffn": {"kind": "none"},
            "norm": {"kind": "layernorm", "per_layer": 0, "final": False},
        }
    )
    (part,) = spec.parts
    sized = replace(spec, parts=(part.sized(seq),))
    width = (3 if trigram else 1) * e
    assert stack_bytes(sized, Step(seq_len=seq, micro_batch=batch)) == 2 * seq * batch * width
    assert stack_bytes(spec, Step(seq_len=seq, micro_batch=batch)) == 0  # no sequence given

    module = part.embed_module(spec).to(torch.bfloat16)
    held = {p.untyped_storage().data_ptr() for p in module.parameters()}
    seen = {}

    def pack(t):
        if t.untyped_storage().data_ptr() not in held:
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        module(torch.randint(0, 256, (1, seq)))
    assert sum(seen.values()) == 2 * seq * width + 8 * seq


def test_qwen4_exp_gated_deltanet_kept_bytes_equal_fused_saved(tmp_path):
    """Qwen4-Exp's linear-attention layers read from a cut-down Qwen4ExpTextConfig (hidden 256; 2 key heads and 4
    value heads of 32, kernel 4, chunks of 64; hidden_act gelu with output_gate_type sigmoid, the gated norm's): as
    flash-linear-attention keeps it a token, the input (256), the convolution's input (conv_dim 2·64 + 128 = 256) and
    its GELU's input (256: causal-conv1d fuses SiLU alone), β and the gate's raw input (4 each), q and k after their
    l2norm (2·64) with fp32 reciprocal norms (4·2), v (128), the decay's fp32 running sum (2·4), the UT transform (4 ×
    64), the gated norm's input, z and fp32 statistic (2·128 + 2·4) and out_proj's input (128); verify --memory holds
    every block of the model."""
    from ffncalc.analysis.keptcheck import check
    from ffncalc.sources import hf

    config = json.loads((HF_DEFAULTS / "configs" / "qwen4_exp_text.json").read_text())
    narrow = {"hidden_size": 256, "num_hidden_layers": 4, "num_experts": 16, "vocab_size": 1024, "ple_embed_dim": 256}
    narrow |= {"hc_lowrank": 32, "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 32}
    narrow |= {"linear_value_head_dim": 32, "head_dim": 32, "num_attention_heads": 4, "indexer_head_dim": 16}
    narrow |= {"moe_intermediate_size": 64, "shared_expert_intermediate_size": 64, "hidden_act": "gelu"}
    narrow |= {"output_gate_type": "sigmoid", "layer_types": config["layer_types"][:4]}
    (tmp_path / "config.json").write_text(json.dumps(config | narrow))
    _, spec = hf.load(str(tmp_path / "config.json"), text=True)
    found = check(spec, TOKENS)
    assert all(c.ok for c in found), [c for c in found if not c.ok]
    (gdn,) = [c for c in found if c.kind == "gated_deltanet"]
    kept = 256 + 256 + 256 + 4 + 4 + (2 * 64 + 4 * 2 + 128 + 2 * 4 + 4 * 64) + (2 * 128 + 2 * 4) + 128
    assert gdn.planned == gdn.saved == TOKENS * 2 * kept


HF_WHOLE = Path(__file__).parents[1] / "hf_whole"


def narrow_cross_model(tmp_path, model_type: str, changes: dict):
    """Llama 3.2 Vision or IDEFICS cut down from its recorded config: a language model of 256 (4 heads of 64; Llama 3.2
    Vision 2 KV heads), 4 layers, 2 of them cross-attention layers; a tower of 28-pixel images of 14-pixel patches (4
    patches and a class token: 5 rows a tile; Llama 3.2 Vision's 4 tiles, 20 rows an image, at the language model's
    width after its projector; IDEFICS' one, at the tower's own 96)."""
    from ffncalc.sources import hf

    data = json.loads((HF_WHOLE / "configs" / f"{model_type}.json").read_text())
    if model_type == "mllama":
        data["text_config"] |= {"hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2}
        data["text_config"] |= {"intermediate_size": 512, "num_hidden_layers": 4, "cross_attention_layers": [1, 3]}
        data["text_config"] |= {"vocab_size": 1024, "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 2}
        data["vision_config"] |= {"hidden_size": 64, "attention_heads": 4, "intermediate_size": 128, "num_hidden_layers": 4}
        data["vision_config"] |= {"intermediate_layers_indices": [1, 2], "vision_output_dim": 192, "num_global_layers": 1}
        data["vision_config"] |= {"image_size": 28}
        data["image_token_index"] = 1020
    else:
        data |= {"hidden_size": 256, "num_attention_heads": 4, "intermediate_size": 512, "num_hidden_layers": 2}
        data |= {"vocab_size": 1024, "cross_layer_interval": 1}
        data["vision_config"] |= {"embed_dim": 96, "num_attention_heads": 4, "intermediate_size": 192}
        data["vision_config"] |= {"num_hidden_layers": 2, "image_size": 28}
    data |= changes
    (tmp_path / "config.json").write_text(json.dumps(data))
    return hf.load(str(tmp_path / "config.json"))[1]


@pytest.mark.parametrize(
    ("model_type", "changes", "kv", "rows", "width", "norms", "gate"),
    [
        ("mllama", {}, 2, 4 * 5, 256, True, 0),
        ("idefics", {}, 4, 5, 96, False, 0),
        ("idefics", {"qk_layer_norms": True, "alpha_type": "vector"}, 4, 5, 96, True, 256),
    ],
    ids=["mllama", "idefics", "idefics-qk-norms-vector-gates"],
)
def test_cross_attention_layers_keep_what_their_module_saves(tmp_path, model_type, changes, kv, rows, width, norms, gate):
    """A gated cross-attention layer (parts/cross_attention.py) as verify --memory measures it, one image a sequence (the
    config states none), 16 text tokens, d = 256, 4 query heads of 64, bf16. A text token: q's input (d), q's output and,
    with q and k norms, q_norm's fp32 inverse RMS a head (4·64 + 2·4) and Q after it (4·64), the flash kernel's output
    (4·64, o's input), o's output and the MLP's output, each kept by its product with a gate's tanh (2·d); 4 bytes of
    log-sum-exp a head. Each image row, in each layer: K and V (2 · kv·64) and, with k_norm, k's output before it (kv·64)
    and its fp32 statistic a head (2·kv); once a sequence, the rows themselves at the width k and v read. A vector gate's
    two tanh outputs (d each), once a forward. The language model's own blocks are held beside it."""
    from ffncalc.analysis.keptcheck import check

    spec = narrow_cross_model(tmp_path, model_type, changes)
    found = check(spec, TOKENS)
    assert all(c.ok for c in found), [c for c in found if not c.ok]
    crosses = [c for c in found if c.kind == "cross_attention"]
    assert [c.layers for c in crosses] == ([(1, 2), (3, 4)] if model_type == "mllama" else [(0, 1), (2, 3)])
    d, h = 256, 4
    token = 3 * d + (2 * h * 64 + 2 * h if norms else h * 64) + h * 64
    row = 2 * kv * 64 + (kv * 64 + 2 * kv if norms else 0)
    expected = TOKENS * (2 * token + 4 * h) + rows * 2 * row + rows * 2 * width + 2 * 2 * gate
    assert {c.planned for c in crosses} == {c.saved for c in crosses} == {expected}


@pytest.mark.parametrize("model_type", ["mllama", "idefics"])
def test_cross_attention_fused_form_computes_what_the_module_does(tmp_path, model_type):
    """Inside ``fused()`` a cross-attention layer's attention runs the flash kernel over K and V at their own heads: the
    same output and gradients as the module's products, in fp32."""
    import torch

    from ffncalc.blocks import _fused

    spec = narrow_cross_model(tmp_path, model_type, {"qk_layer_norms": True} if model_type == "idefics" else {})
    (part,) = [p for p in spec.parts if p.key == "cross_attention"]
    layer = next(layer for layer in spec.layers if layer.mark("cross_attention"))
    torch.manual_seed(0)
    module = part.kept_module(spec, layer)
    with torch.no_grad():
        module.cross.gates.fill_(0.5)  # tanh(0) = 0 would hide the attention's output
    x = torch.randn(1, TOKENS, 256, requires_grad=True)
    results = []
    for fused in (False, True):
        module.zero_grad()
        x.grad = None
        torch.manual_seed(1)  # the same image rows
        if fused:
            with _fused.fused():
                out = module(x)
        else:
            out = module(x)
        out.square().sum().backward()
        grads = [p.grad.clone() for p in module.parameters() if p.grad is not None]
        results.append([out.detach(), x.grad.clone(), *grads])
    assert len(results[0]) == len(results[1]) > 2
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


# --- sparse latent attention: DeepSeek Sparse Attention's selected keys as FlashMLA's sparse kernel runs them ----------

SPARSE_MLA = {  # a small layer of each family: d 64, 4 heads, latent 16 + rope 8, nope 16, v 8, 2 index heads of 16
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 96,
    "moe_intermediate_size": 32,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "n_shared_experts": 1,
    "n_group": 1,
    "topk_group": 1,
    "kv_lora_rank": 16,
    "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 16,
    "v_head_dim": 8,
    "index_n_heads": 2,
    "index_head_dim": 16,
    "first_k_dense_replace": 1,
    "max_position_embeddings": 64,
}
SPARSE_MLA_TYPES = {"deepseek_v32": 32, "glm_moe_dsa": 32, "mistral_large4_text": None}  # q_lora_rank


def sparse_mla_model(model_type: str, topk: int):
    from ffncalc.sources import hf

    data = {"model_type": model_type, **SPARSE_MLA, "q_lora_rank": SPARSE_MLA_TYPES[model_type], "index_topk": topk}
    return hf.to_spec(hf.Config(data, "", model_type))


@pytest.mark.parametrize("topk", [4, 16, 2048])  # fewer keys than the 16 tokens, as many, more
@pytest.mark.parametrize("model_type", list(SPARSE_MLA_TYPES))
def test_sparse_mla_kept_bytes_equal_fused_saved(model_type, topk):
    """DeepSeek-V3.2's, GLM-5's and Mistral Large 4's indexed layers as verify --memory measures them, 16 tokens, bf16:
    the attention over the selected keys absorbed, as FlashMLA's sparse kernel runs it (MQA over the latent row).
    A token: x (64); the query latent, its normed copy and its norm's fp32 inverse RMS (2·32 + 2; Mistral Large 4 has
    none); kv_a's output (16 + 8, the latent norm's input) and its norm's statistic (2); q as W_UK's product reads it
    (4·24); the kernel's absorbed query (4·(16 + 8)), latent row (16 + 8) and output (4·16, W_UV's input); o's input
    (4·8); Mistral Large 4's softmax scaling its queries before it (4·24), its factor a head (4) and the log-position
    (1), and in its no-rope layer (the last) the rope part gone, the nope part 24 wide: rows of 16. A sequence: the
    fp32 log-sum-exp (4 bytes a query and head) and the int32 ids, min(topk, 16) a query. The indexer keeps nothing."""
    from ffncalc.analysis.keptcheck import check

    spec = sparse_mla_model(model_type, topk)
    found = check(spec, TOKENS)
    assert all(c.ok for c in found), [c for c in found if not c.ok]
    mistral = model_type == "mistral_large4_text"
    sequence = 4 * 4 * TOKENS + 4 * TOKENS * min(topk, TOKENS)

    def token(row: int) -> int:
        query = 0 if mistral else 2 * 32 + 2
        scaling = 4 * 24 + 4 + 1 if mistral else 0
        return 64 + query + row + 2 + 4 * 24 + 4 * row + row + 4 * 16 + 4 * 8 + scaling

    rope_layer = TOKENS * 2 * token(16 + 8) + sequence
    attention = {c.layers: c.saved for c in found if c.slot == "attention"}
    if mistral:  # no_rope_layers: every fourth layer without the rotary part
        assert attention == {(0, 1): rope_layer, (1, 3): rope_layer, (3, 4): TOKENS * 2 * token(16) + sequence}
    else:
        assert set(attention.values()) == {rope_layer}


@pytest.mark.parametrize("model_type", list(SPARSE_MLA_TYPES))
def test_sparse_mla_fused_form_computes_what_the_module_does(model_type):
    """The absorbed sparse form (W_UK folded into the queries, the latent rows the indexer picked, W_UV after) computes
    what the module's expanded form with the top-k mask does: the output and every gradient, in fp32, 4 of 16 keys."""
    import torch

    from ffncalc.blocks import _fused

    spec = sparse_mla_model(model_type, 4)
    for layer in (spec.layers[0], spec.layers[-1]):  # Mistral Large 4's last layer: no rotary part
        block = dict(layer.blocks())["attention"]
        torch.manual_seed(0)
        module = block.torch_module(spec, True)
        for p in module.parameters():
            if p.dim() >= 2:
                torch.nn.init.normal_(p, std=0.1)
        x = torch.randn(1, TOKENS, 64, requires_grad=True)
        results = []
        for fused in (False, True):
            module.zero_grad()
            x.grad = None
            if fused:
                with _fused.fused():
                    out = module(x)
            else:
                out = module(x)
            out.square().sum().backward()
            results.append([out.detach(), x.grad.clone(), *(p.grad.clone() for p in module.parameters() if p.grad is not None)])
        assert len(results[0]) == len(results[1]) > 2
        for a, b in zip(*results):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_sparse_mla_verify_memory_from_the_command_line(cli, tmp_path):
    """verify --memory on a small Mistral Large 4 imported from its config.json, index_topk 4 of 16 tokens: every block
    planned as saved."""
    import json

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "mistral_large4_text", **SPARSE_MLA, "q_lora_rank": None, "index_topk": 4}))
    code, out, _ = cli("import", str(config))
    assert code == 0
    spec = tmp_path / "small.yaml"
    spec.write_text(out)
    code, out, _ = cli("verify", str(spec), "--memory")
    assert code == 0 and "✓ every block's kept activations equal what its module saves" in out


@pytest.mark.torch
def test_mla_sparse_kernel_computes_what_the_gathered_keys_compute():
    """The sparse kernel (``_fused.sparse_latent_attention``, absorbed) keeps less, computes the same: a DeepSeek-V3.2 layer whose
    indexer keeps 4 of 16 keys, in fp64, gives the same output and the same gradients of its input and every weight
    inside ``fused()`` as the reference's gathered keys and values outside it."""
    import torch

    from ffncalc.blocks import _fused

    attention = {"kind": "mla", "n_heads": H, "q_lora_rank": RQ, "kv_lora_rank": RANK, "qk_nope_head_dim": 16}
    spec = mla_model(
        attention | {"qk_rope_head_dim": ROPE, "v_head_dim": 8, "index_n_heads": 2, "index_head_dim": 16, "index_topk": 4}
    )
    block = dict(spec.layers[0].blocks())["attention"]
    torch.manual_seed(0)
    module = block.torch_module(spec, True).double()
    for p in module.parameters():
        torch.nn.init.normal_(p, std=0.2)
    x = torch.randn(1, TOKENS, D, dtype=torch.float64)

    def run(fused: bool):
        module.zero_grad()
        xi = x.clone().requires_grad_(True)
        with _fused.fused() if fused else torch.enable_grad():
            out = module(xi)
        out.square().sum().backward()
        return out.detach(), xi.grad, [p.grad.clone() for p in module.parameters() if p.grad is not None]

    out, dx, grads = run(False)
    fused_out, fused_dx, fused_grads = run(True)
    assert torch.allclose(out, fused_out, atol=1e-5) and torch.allclose(dx, fused_dx, atol=1e-5)  # the kernels: fp32 inside
    assert len(grads) == len(fused_grads) and all(torch.allclose(a, b, atol=1e-5) for a, b in zip(grads, fused_grads))
