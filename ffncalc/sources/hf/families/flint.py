"""Flint (Recursive 2026): Qwen3-MoE's attention with a learned sink logit per head, rotary positions on the
sliding-window layers only, and a mixture beside one ungated shared expert after two dense layers."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, layer_types, rms, stack, window


@family("flint", layer_modules=((r"self_attn$", "attn.sinks"),) + MOE_MODULES)
def flint(c: Config) -> dict:
    """FlintConfig / FlintDecoderLayer (Qwen3-MoE's): norms before each sublayer. FlintAttention: attention_bias
    (default false) on q, k, v and o; an RMSNorm over head_dim shared by every query head and one by every key
    head; head_dim defaults to 128, num_key_value_heads to 4; one learned sink logit per head (sinks) in every
    layer. layer_types default: global at layers 0 and 1, every layer i with i % 4 == 1 and the last, sliding
    over sliding_window keys (default 513) elsewhere; only the sliding layers take rotary positions. Layer i is a
    FlintSparseMoeBlock unless listed in mlp_only_layers (default [0, 1]), when num_experts > 0 and (i + 1) %
    decoder_sparse_step == 0; else a dense FlintMLP of intermediate_size (default 6144). The mixture: a
    bias-free sigmoid router (FlintTopKRouter.weight) over num_experts (default 256), num_experts_per_tok
    (default 6) per token, SwiGLU experts of moe_intermediate_size (default 512), and one SwiGLU shared_expert
    of shared_expert_intermediate_size (default 1024) added without a gate."""
    n, step = c.int("num_hidden_layers"), c.int("decoder_sparse_step", 1)
    bias = c.bool("attention_bias", False)
    full = {**attention(c, head_dim=128, kv_heads=4, qkv_bias=bias, o_bias=bias, qk_norm="head"), "sinks": True}
    size = window(c, 513)
    types = layer_types(c, lambda i: "full_attention" if i < 2 or i % 4 == 1 or i == n - 1 else "sliding_attention")
    # absent or null: [0, 1] (FlintConfig.__post_init__)
    dense_only = set(c.int_list("mlp_only_layers")) if c.has("mlp_only_layers") else {0, 1}
    experts = c.int("num_experts", 256, positive=False)
    moe = {
        "kind": "moe",
        "n_experts": experts or 1,
        "top_k": c.int("num_experts_per_tok", 6),
        "expert": gated(c, width=c.int("moe_intermediate_size", 512)),
        "n_shared_experts": 1,
        "shared": gated(c, width=c.int("shared_expert_intermediate_size", 1024)),
    }
    dense = gated(c, width=c.int("intermediate_size", 6144))

    def attn(kind: str) -> dict:
        if kind == "sliding_attention":
            return {**full, "window": size} if size is not None else dict(full)
        return {**full, "rope": False}

    layers = [
        {"attention": attn(t), "ffn": moe if experts and i not in dense_only and (i + 1) % step == 0 else dense}
        for i, t in enumerate(types)
    ]
    return {**common(c, tie=False, context_default=262_144), **stack(layers), "norm": rms()}
