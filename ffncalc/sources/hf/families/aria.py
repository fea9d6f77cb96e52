"""Aria (Rhymes AI 2024): the language model of the multimodal mixture, as aria_text."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, rms


@family("aria_text", layer_modules=((r"mlp\.router$", "ffn.router"),) + MOE_MODULES)
def aria_text(c: Config) -> dict:
    """AriaTextConfig / AriaTextDecoderLayer: Llama's pre-norm layer, attention_bias on q/k/v/o (default false),
    head_dim a stated head_dim or hidden_size / heads, one KV head per query head when num_key_value_heads is
    absent or null; untied by default. An AriaTextMoELayer in every layer: a bias-free router
    (AriaTextTopKRouter.weight) over moe_num_experts (default 8) bias-free SwiGLU experts of intermediate_size
    fused as 3-D tensors (AriaExperts), moe_topk (default 2) per token, and one AriaSharedExpertsMLP of
    moe_num_shared_experts (default 2) × intermediate_size with mlp_bias (default false), stated as one shared
    expert of that width. moe_intermediate_size and num_experts_per_tok, where a config states them, are not
    read by the class."""
    bias = c.bool("attention_bias", False)
    width = c.int("intermediate_size")
    moe = {"kind": "moe", "n_experts": c.int("moe_num_experts", 8), "top_k": c.int("moe_topk", 2), "expert": gated(c, width=width)}
    shared = c.int("moe_num_shared_experts", 2, positive=False)
    if shared:
        moe.update(n_shared_experts=1, shared=gated(c, width=shared * width, bias=c.bool("mlp_bias", False)))
    return {**common(c, tie=False), "attention": attention(c, qkv_bias=bias, o_bias=bias), "ffn": moe, "norm": rms()}
