"""DeepSeek-V2 and DeepSeek-V3: multi-head latent attention and DeepSeekMoE."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, alias, common, family, gated, layer_groups, rms

# DeepseekV2Attention's projections.
MLA_MODULES = (
    (r"q_a_proj$", "attn.q_a"),
    (r"q_a_layernorm$", "attn.q_a_norm"),
    (r"q_b_proj$", "attn.q_b"),
    (r"kv_a_proj_with_mqa$", "attn.kv_a"),
    (r"kv_a_layernorm$", "attn.kv_a_norm"),
    (r"kv_b_proj$", "attn.kv_b"),
)


def _deepseek(c: Config, *, mlp_bias: bool, defaults: dict) -> dict:
    """DeepseekV2/V3 DecoderLayer: MLA; layer i is MoE from first_k_dense_replace on (transformers reads no
    moe_layer_freq: DeepSeek's own code also asks i % moe_layer_freq == 0, and every published config has 1). The
    shared experts are one MLP of n_shared_experts × moe_intermediate_size in transformers: without biases the same
    parameters and FLOPs as n_shared_experts experts, which is how the spec states them; with mlp_bias (DeepseekV2MLP)
    that one MLP has one down_proj bias, so it is stated as one shared expert of that width, and where
    n_shared_experts is 0 the MLP of width 0 is that bias alone, added to the mixture's output. The router is a
    bias-free weight; DeepSeek-V3's e_score_correction_bias is a buffer, not a parameter (DeepseekV3TopkRouter)."""
    q_rank = c.data.get("q_lora_rank", defaults["q_lora_rank"])  # an explicit null means a full-rank query
    if q_rank is not None:
        q_rank = c.int("q_lora_rank", defaults["q_lora_rank"])
    attention = {
        "kind": "mla",
        "n_heads": c.int("num_attention_heads"),
        "q_lora_rank": q_rank,
        "kv_lora_rank": c.int("kv_lora_rank", 512),
        "qk_nope_head_dim": c.int("qk_nope_head_dim", 128),
        "qk_rope_head_dim": c.int("qk_rope_head_dim", 64, positive=False),  # 0: no rotary features (GLM-5 Next)
        "v_head_dim": c.int("v_head_dim", 128),
        "bias": c.bool("attention_bias", False),
    }
    n = c.int("num_hidden_layers")
    first = c.int("first_k_dense_replace", defaults["first_k_dense_replace"], positive=False)
    kinds = ["moe" if i >= first else "dense" for i in range(n)]  # DeepseekV2/V3DecoderLayer
    moe = None
    if "moe" in kinds:
        routed = c.int("n_routed_experts", defaults["n_routed_experts"], positive=False)
        if not routed:  # DeepseekV2/V3TopkRouter picks num_experts_per_tok of no experts: the forward fails
            raise c.fail(
                "n_routed_experts",
                f"0, yet layers {first} on are mixtures (first_k_dense_replace "
                f"{first}): transformers' router cannot pick experts from none",
            )
        width = c.int("moe_intermediate_size", defaults["moe_intermediate_size"])
        moe = {
            "kind": "moe",
            "n_experts": routed,
            "top_k": top_k(c, defaults["num_experts_per_tok"]),
            "expert": gated(c, width=width),
        }
        shared = c.int("n_shared_experts", defaults["n_shared_experts"], positive=False)
        if shared and mlp_bias:  # DeepseekV2Moe.shared_experts: one DeepseekV2MLP of shared × width, one down bias
            moe.update(n_shared_experts=1, shared=gated(c, width=shared * width, bias=True))
        elif shared:
            moe.update(n_shared_experts=shared, shared=gated(c, width=width, bias=False))
        elif mlp_bias:  # DeepseekV2MLP of intermediate_size 0: no weights, its down_proj bias of d_model alone
            moe.update(output_bias=True)
    ffn, layers = layer_groups(kinds, {"moe": moe, "dense": gated(c, bias=mlp_bias) if "dense" in kinds else None})
    return {**common(c, tie=False), "attention": attention, "ffn": ffn, **({"layers": layers} if layers else {}), "norm": rms()}


def top_k(c: Config, default) -> int:
    """num_experts_per_tok, or its class default. DeepseekV2Config has none (None): transformers builds the model
    without one, as the parameters do not depend on it, and only its router's torch.topk needs it; so the parameters
    are counted, one expert a token stands in, and the model is marked as needing the top-k (Config.unstated)."""
    if default is ... and c.data.get("num_experts_per_tok") is None:
        return c.unstated("num_experts_per_tok", 1, "a top-k", '"num_experts_per_tok": 6 in config.json, as DeepSeek-V2 ships it')
    return c.int("num_experts_per_tok", default)


@family("deepseek_v2", layer_modules=MLA_MODULES + MOE_MODULES)
def deepseek_v2(c: Config) -> dict:
    """DeepseekV2Config defaults: q_lora_rank 1536, 64 routed experts, 2 shared, moe_intermediate_size 1407,
    first_k_dense_replace 0; the dense MLPs take mlp_bias (DeepseekV2MLP)."""
    return _deepseek(
        c,
        mlp_bias=c.bool("mlp_bias", False),
        defaults={
            "q_lora_rank": 1536,
            "n_routed_experts": 64,
            "n_shared_experts": 2,
            "moe_intermediate_size": 1407,
            "first_k_dense_replace": 0,
            "num_experts_per_tok": ...,  # none: the parameters are counted without one (top_k)
        },
    )


@family("deepseek_v3", "mistral4", layer_modules=MLA_MODULES + MOE_MODULES)
def deepseek_v3(c: Config) -> dict:
    """DeepseekV3Config defaults: q_lora_rank 1536, 256 routed experts (8 per token), 1 shared,
    moe_intermediate_size 2048, first_k_dense_replace 3. The multi-token-prediction layers
    (num_nextn_predict_layers) ship in the checkpoint but are not part of DeepseekV3ForCausalLM: counted
    apart, never in the model's total. Mistral 4 (Mistral4ForCausalLM, Mistral Small 4): DeepSeek-V3's layers (its
    attention, mixture and decoder layer subclassed: a softmax router and a query scaled by position, neither with
    weights); Mistral4Config's defaults q_lora_rank 1024, 128 routed experts (4 per token), 1 shared,
    moe_intermediate_size 2048, first_k_dense_replace 0, and no multi-token-prediction layers."""
    mistral4 = c.model_type == "mistral4"
    data = _deepseek(
        c,
        mlp_bias=False,
        defaults={
            "q_lora_rank": 1024 if mistral4 else 1536,
            "n_routed_experts": 128 if mistral4 else 256,
            "n_shared_experts": 1,
            "moe_intermediate_size": 2048,
            "first_k_dense_replace": 0 if mistral4 else 3,
            "num_experts_per_tok": 4 if mistral4 else 8,
        },
    )
    if mistral4:
        return data
    # counted apart, as their own part (num_nextn_predict_layers; DeepseekV3Config's num_mtp_layers, default 1)
    return {**data, "mtp_layers": c.int("num_nextn_predict_layers", 1, positive=False)}


# Kimi K2 (moonshotai/Kimi-K2-Instruct): its config.json names DeepseekV3ForCausalLM, and its auto_map DeepSeek's
# own configuration_deepseek.DeepseekV3Config; transformers ships no kimi_k2 type, so it is built as deepseek_v3.
alias("kimi_k2", of="deepseek_v3")
