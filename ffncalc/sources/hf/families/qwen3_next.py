"""Qwen3-Next (transformers 5.23.0, models/qwen3_next): Gated DeltaNet layers and gated full-attention layers,
every one with a mixture of experts and a sigmoid-gated shared expert."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, rms

# Qwen3NextGatedDeltaNet's modules. dt_bias and A_log are Parameters of the mixer itself, so transformers names
# them under the module "linear_attn": one fused component against our two.
QWEN3_NEXT_MODULES = (
    (r"^linear_attn\.in_proj_qkvz$", "linear_attn.in_proj_qkvz"),
    (r"^linear_attn\.in_proj_ba$", "linear_attn.in_proj_ba"),
    (r"^linear_attn\.conv1d$", "linear_attn.conv1d"),
    (r"^linear_attn$", "linear_attn.dt_bias+A_log"),
    (r"^linear_attn\.norm$", "linear_attn.norm"),
    (r"^linear_attn\.out_proj$", "linear_attn.out_proj"),
)
MIXERS = ("linear_attention", "full_attention")


def layer_types(c: Config) -> list[str]:
    """Qwen3NextConfig.__post_init__: layer_types as stated, or else layer i is full attention when
    (i + 1) % full_attention_interval == 0 (default 4) and linear attention otherwise."""
    n = c.int("num_hidden_layers")
    types = c.data.get("layer_types")
    if types is None:
        interval = c.int("full_attention_interval", 4)
        return ["linear_attention" if (i + 1) % interval else "full_attention" for i in range(n)]
    if not isinstance(types, list) or len(types) != n or any(t not in MIXERS for t in types):
        raise c.fail("layer_types", f"expected {n} entries, each one of {', '.join(MIXERS)}; got {types!r}")
    return types


def gated_deltanet(c: Config) -> dict:
    """Qwen3NextGatedDeltaNet with Qwen3NextConfig's defaults: 16 query/key heads and 32 value heads of 128,
    kernel 4; its Conv1d has no bias; the convolution's activation is hidden_act."""
    return {
        "kind": "gated_deltanet",
        "n_key_heads": c.int("linear_num_key_heads", 16),
        "key_head_dim": c.int("linear_key_head_dim", 128),
        "n_value_heads": c.int("linear_num_value_heads", 32),
        "value_head_dim": c.int("linear_value_head_dim", 128),
        "conv_kernel": c.int("linear_conv_kernel_dim", 4),
        "conv_bias": False,
        "activation": c.activation("hidden_act", "silu"),
    }


def runs(kinds: list[tuple[str, str]], blocks: dict[str, dict]) -> tuple[str, str, list[dict] | None]:
    """Per-layer (mixer, FFN) kinds -> the model's own two kinds (the most common of each) and, where layers
    differ, runs of identical layers stating what differs from them."""
    out: list[list] = []
    for kind in kinds:
        if out and out[-1][0] == kind:
            out[-1][1] += 1
        else:
            out.append([kind, 1])
    mixers, ffns = [m for m, _ in kinds], [f for _, f in kinds]
    mixer, ffn = max(dict.fromkeys(mixers), key=mixers.count), max(dict.fromkeys(ffns), key=ffns.count)
    if len(out) == 1:
        return mixer, ffn, None
    layers = [
        {"repeat": n, **({"attention": blocks[m]} if m != mixer else {}), **({"ffn": blocks[f]} if f != ffn else {})}
        for (m, f), n in out
    ]
    return mixer, ffn, layers


@family("qwen3_next", layer_modules=QWEN3_NEXT_MODULES + MOE_MODULES)
def qwen3_next(c: Config) -> dict:
    """Qwen3NextConfig / Qwen3NextDecoderLayer: linear_attn (Qwen3NextGatedDeltaNet) or self_attn
    (Qwen3NextAttention) by layer_types. The attention's q_proj is doubled, each head's query and a gate whose
    sigmoid scales the head's output; head_dim 256 and 2 KV heads by default, attention_bias on q/k/v/o (default
    false), an RMSNorm over head_dim on each query and key head, rotary over partial_rotary_factor (default 0.25)
    of each head. The FFN is Qwen3NextSparseMoeBlock (a bias-free router, num_experts of moe_intermediate_size,
    one shared expert of shared_expert_intermediate_size scaled by sigmoid(shared_expert_gate(x))) unless the
    layer is in mlp_only_layers, num_experts is 0 or (i + 1) % decoder_sparse_step != 0, then a gated MLP of
    intermediate_size. Qwen3NextRMSNorm scales by 1 + w (a zero-initialised weight): the same parameters as an
    RMSNorm. The checkpoint's mtp.* tensors are not in the causal LM (_keys_to_ignore_on_load_unexpected)."""
    bias = c.bool("attention_bias", False)
    full = {
        "kind": "mha",
        **attention(c, head_dim=256, qkv_bias=bias, o_bias=bias, qk_norm="head", rotary=c.rope_fraction(0.25), kv_heads=2),
        "gate": True,
    }
    n, step = c.int("num_hidden_layers"), c.int("decoder_sparse_step", 1)
    experts, dense_only = c.int("num_experts", 512, positive=False), set(c.int_list("mlp_only_layers"))
    moe = {
        "kind": "moe",
        "n_experts": experts or 1,
        "top_k": c.int("num_experts_per_tok", 10),
        "expert": gated(c, "moe_intermediate_size", width=c.int("moe_intermediate_size", 512)),
        "n_shared_experts": 1,
        "shared_gate": True,
        "shared": gated(c, width=c.int("shared_expert_intermediate_size", 512)),
    }
    ffn_kinds = ["moe" if experts and i not in dense_only and (i + 1) % step == 0 else "dense" for i in range(n)]
    blocks = {
        "linear_attention": gated_deltanet(c),
        "full_attention": full,
        "moe": moe,
        "dense": gated(c, width=c.int("intermediate_size", 5632)),
    }
    mixer, ffn, layers = runs(list(zip(layer_types(c), ffn_kinds)), blocks)
    return {
        **common(c, tie=False, context_default=32768),
        "attention": blocks[mixer],
        "ffn": blocks[ffn],
        "norm": rms(),
        **({"layers": layers} if layers else {}),
    }
