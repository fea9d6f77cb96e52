"""Phi-3.5-MoE (Microsoft 2024)."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, window


@family("phimoe", layer_modules=((r"mlp\.router$", "ffn.router"),) + MOE_MODULES)
def phimoe(c: Config) -> dict:
    """PhimoeConfig / PhimoeDecoderLayer, PhimoeAttention, PhimoeSparseMoeBlock: nn.LayerNorm with a weight and a
    bias before attention and before the MLP (input_layernorm, post_attention_layernorm) and a final one;
    attention_bias on q/k/v/o (default false); 8 KV heads by default (null: one per query head); head_dim a stated
    head_dim or hidden_size / heads; a bias-free router (PhimoeTopKRouter, sparsemixer top-2) over
    num_local_experts (default 16) SwiGLU experts of intermediate_size, num_experts_per_tok (default 2) per token;
    lm_head_bias (default false) on the LM head; untied by default; a context of 4096 × 32; no sliding window
    unless sliding_window says."""
    bias = c.bool("attention_bias", False)
    return {
        **common(c, tie=False, context_default=4096 * 32),
        "attention": {**attention(c, kv_heads=8, qkv_bias=bias, o_bias=bias), "window": window(c, None)},
        "ffn": {
            "kind": "moe",
            "n_experts": c.int("num_local_experts", 16),
            "top_k": c.int("num_experts_per_tok", 2),
            "expert": gated(c),
        },
        "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
        "lm_head_bias": c.bool("lm_head_bias", False),
    }
