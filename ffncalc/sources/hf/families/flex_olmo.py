"""FlexOlmo (Shi et al. 2025): OLMo 2's layer whose MLP is a mixture of independently trained experts."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, rms

# FlexOlmoConfig's defaults (transformers 5.23.0), for the keys a config.json leaves out.
DEFAULTS = {
    "vocab_size": 100352,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "max_position_embeddings": 4096,
    "num_experts_per_tok": 5,
    "num_experts": 7,
}


@family("flex_olmo", layer_modules=MOE_MODULES)
def flex_olmo(c: Config) -> dict:
    """FlexOlmoConfig / FlexOlmoDecoderLayer: RMSNorms after attention and after the MLP, none before
    (post_attention_layernorm, post_feedforward_layernorm), and a final one; FlexOlmoAttention's q_norm and
    k_norm are RMSNorms over all query heads' and all KV heads' width; attention_bias on q/k/v/o (default
    false); head_dim a stated head_dim or hidden_size / heads; num_key_value_heads defaults to the heads.
    FlexOlmoSparseMoeBlock in every layer: a bias-free router (FlexOlmoTopKRouter.weight) over num_experts
    (default 7) SwiGLU experts of intermediate_size (default 11008), fused as 3-D gate_up_proj and down_proj
    tensors (FlexOlmoExperts); num_experts_per_tok (default 5) per token; no shared expert; untied."""
    c = c.with_defaults(DEFAULTS)
    bias = c.bool("attention_bias", False)
    return {
        **common(c, tie=False, context_default=4096),
        "attention": attention(c, qkv_bias=bias, o_bias=bias, qk_norm="full"),
        "norm": rms(placement="post"),
        "ffn": {"kind": "moe", "n_experts": c.int("num_experts"), "top_k": c.int("num_experts_per_tok"), "expert": gated(c)},
    }
