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
