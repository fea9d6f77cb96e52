"""OLMoE (Muennighoff et al. 2024): OLMo's attention with a query and key norm over all heads, and
fine-grained experts in every layer."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, rms


@family("olmoe", layer_modules=MOE_MODULES)
def olmoe(c: Config) -> dict:
    """OlmoeConfig / OlmoeDecoderLayer: norms before each sublayer; OlmoeAttention's q_norm and k_norm are
    RMSNorms over all query heads' and all KV heads' width; attention_bias on q/k/v/o (default false).
    OlmoeSparseMoeBlock in every layer: a bias-free router (OlmoeTopKRouter.weight) over num_experts
    (default 64) SwiGLU experts of intermediate_size (default 2048), fused as 3-D gate_up_proj and
    down_proj tensors (OlmoeExperts); num_experts_per_tok (default 8) per token. No shared expert."""
    heads = c.int("num_attention_heads")
    # OlmoeAttention sizes q_norm by hidden_size and k_norm by (hidden_size // heads) · kv_heads, which is
    # all heads' width only when head_dim is hidden_size // heads
    if c.has("head_dim") and c.int("head_dim") * heads != c.int("hidden_size"):
        raise c.fail("head_dim", "OlmoeAttention's q_norm and k_norm assume head_dim = hidden_size / heads")
    bias = c.bool("attention_bias", False)
    expert = gated(c, width=c.int("intermediate_size", 2048))
    return {
        **common(c, tie=False, context_default=4096),
        "attention": attention(c, qkv_bias=bias, o_bias=bias, qk_norm="full"),
        "norm": rms(),
        "ffn": {"kind": "moe", "n_experts": c.int("num_experts", 64), "top_k": c.int("num_experts_per_tok", 8), "expert": expert},
    }
