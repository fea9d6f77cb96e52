"""GLM-4.5, GLM-4.6 and GLM-4.7 (Z.ai 2025): grouped-query attention with partial rotary positions and
DeepSeekMoE-style mixtures after a few dense layers, as glm4_moe."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, layer_groups, rms


@family("glm4_moe", "glm4v_moe_text", layer_modules=MOE_MODULES)
def glm4_moe(c: Config) -> dict:
    """Glm4MoeConfig / Glm4MoeDecoderLayer: Glm4MoeAttention puts attention_bias (default false) on q, k and v
    but never on o; with use_qk_norm (default false) an RMSNorm over head_dim shared by every query head
    and one by every key head (q_norm, k_norm); head_dim as stated, else hidden_size / heads; rotary on
    partial_rotary_factor (default 0.5) of each head. Layer i is a Glm4MoeMoE from first_k_dense_replace
    (default 1) on, else a dense Glm4MoeMLP of intermediate_size. The mixture: a bias-free router
    (Glm4MoeTopkRouter.weight; its e_score_correction_bias is a buffer) over n_routed_experts (default 128),
    num_experts_per_tok (default 8) per token, experts of moe_intermediate_size (default 1408), and one
    shared Glm4MoeMLP of n_shared_experts (default 1) × moe_intermediate_size, stated as that many shared
    experts. The multi-token-prediction layer (num_nextn_predict_layers) is not part of Glm4MoeForCausalLM. GLM-4.5V's
    language model (Glm4vMoeTextConfig) is built the same."""
    bias = c.bool("attention_bias", False)
    attn = attention(
        c,
        qkv_bias=bias,
        o_bias=False,
        qk_norm="head" if c.bool("use_qk_norm", False) else "none",
        rotary=c.rope_fraction(0.5),
        kv_heads=8,
    )
    n, first = c.int("num_hidden_layers"), c.int("first_k_dense_replace", 1, positive=False)
    width = c.int("moe_intermediate_size", 1408)
    moe = {
        "kind": "moe",
        "n_experts": c.int("n_routed_experts", 128),
        "top_k": c.int("num_experts_per_tok", 8),
        "expert": gated(c, width=width),
    }
    shared = c.int("n_shared_experts", 1, positive=False)
    if shared:
        moe.update(n_shared_experts=shared, shared=gated(c, width=width))
    kinds = ["moe" if i >= first else "dense" for i in range(n)]
    ffn, layers = layer_groups(kinds, {"moe": moe, "dense": gated(c) if "dense" in kinds else None})
    return {
        **common(c, tie=False, context_default=131_072),
        "attention": attn,
        "ffn": ffn,
        **({"layers": layers} if layers else {}),
        "norm": rms(),
    }
