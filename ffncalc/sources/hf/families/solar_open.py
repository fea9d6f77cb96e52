"""Solar Open (Upstage 2025): grouped-query attention and a DeepSeekMoE-style mixture in every layer."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, rms


@family("solar_open", layer_modules=MOE_MODULES)
def solar_open(c: Config) -> dict:
    """SolarOpenConfig / SolarOpenDecoderLayer: SolarOpenAttention puts attention_bias (default false) on q, k
    and v but never on o; head_dim 128 unless stated; 8 KV heads by default. Every layer's MLP is a
    SolarOpenMoE (first_k_dense_replace is not read): a bias-free router (SolarOpenTopkRouter.weight; its
    e_score_correction_bias is a buffer) over n_routed_experts (default 128), num_experts_per_tok (default 8)
    per token, fused experts of moe_intermediate_size (default 1280), and one shared SolarOpenMLP of
    n_shared_experts (default 1) × moe_intermediate_size, stated as that many shared experts; untied by
    default."""
    c = c.with_defaults(
        {
            "hidden_size": 4096,
            "num_hidden_layers": 48,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "vocab_size": 196608,
        }
    )
    bias = c.bool("attention_bias", False)
    width = c.int("moe_intermediate_size", 1280)
    moe = {
        "kind": "moe",
        "n_experts": c.int("n_routed_experts", 128),
        "top_k": c.int("num_experts_per_tok", 8),
        "expert": gated(c, width=width),
    }
    shared = c.int("n_shared_experts", 1, positive=False)
    if shared:
        moe.update(n_shared_experts=shared, shared=gated(c, width=width))
    return {
        **common(c, tie=False, context_default=131_072),
        "attention": attention(c, qkv_bias=bias, o_bias=False, rotary=c.rope_fraction(1.0)),
        "ffn": moe,
        "norm": rms(),
    }
