"""dots.llm1 (rednote-hilab 2025): Qwen3-style attention and DeepSeekMoE-style mixtures, as dots1."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, layer_groups, rms


@family("dots1", layer_modules=MOE_MODULES)
def dots1(c: Config) -> dict:
    """Dots1Config / Dots1DecoderLayer: Dots1Attention puts attention_bias (default false) on q, k, v and o
    and always holds an RMSNorm over head_dim shared by every query head and one by every key head
    (q_norm, k_norm); num_key_value_heads defaults to 32 (null: the heads). Layer i is a Dots1MoE from
    first_k_dense_replace (default 0) on, else a dense Dots1MLP of intermediate_size; sliding-window layers
    hold the same parameters. The mixture: a bias-free router (Dots1TopkRouter.weight; its
    e_score_correction_bias is a buffer) over n_routed_experts, num_experts_per_tok per token, experts of
    moe_intermediate_size (default 1408), and one shared Dots1MLP of n_shared_experts ×
    moe_intermediate_size, stated as that many shared experts. Dots1Config gives n_routed_experts,
    num_experts_per_tok and n_shared_experts no usable default (None), so they are required."""
    bias = c.bool("attention_bias", False)
    attn = attention(c, qkv_bias=bias, o_bias=bias, qk_norm="head", kv_heads=32)
    n, first = c.int("num_hidden_layers"), c.int("first_k_dense_replace", 0, positive=False)
    width = c.int("moe_intermediate_size", 1408)
    moe = {
        "kind": "moe",
        "n_experts": c.int("n_routed_experts"),
        "top_k": c.int("num_experts_per_tok"),
        "expert": gated(c, width=width),
    }
    shared = c.int("n_shared_experts", positive=False)
    if shared:
        moe.update(n_shared_experts=shared, shared=gated(c, width=width))
    kinds = ["moe" if i >= first else "dense" for i in range(n)]
    ffn, layers = layer_groups(kinds, {"moe": moe, "dense": gated(c) if "dense" in kinds else None})
    return {**common(c, tie=False), "attention": attn, "ffn": ffn, **({"layers": layers} if layers else {}), "norm": rms()}
