"""GLM-4.7-Flash (Z.ai 2026): DeepSeek-V3's layout, multi-head latent attention and DeepSeekMoE, as
glm4_moe_lite."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, common, family, gated, layer_groups, rms
from .deepseek import MLA_MODULES


@family("glm4_moe_lite", layer_modules=MLA_MODULES + MOE_MODULES)
def glm4_moe_lite(c: Config) -> dict:
    """Glm4MoeLiteConfig / Glm4MoeLiteDecoderLayer: MLA as DeepSeek-V3's (Glm4MoeLiteAttention; q_lora_rank
    768, null for a full-rank query; kv_lora_rank 512; qk_nope_head_dim 192, qk_rope_head_dim 64,
    v_head_dim 256; attention_bias false). Layer i is a Glm4MoeLiteMoE where mlp_layer_types[i] is
    "sparse", else a dense MLP of intermediate_size; by default the first layer is dense and the rest
    sparse: transformers reads no first_k_dense_replace for this type. The mixture: a bias-free router
    (its e_score_correction_bias is a buffer) over n_routed_experts (default 64), num_experts_per_tok
    (default 4) per token, experts of moe_intermediate_size (default 1536), and one shared MLP of
    n_shared_experts (default 1) × moe_intermediate_size, stated as that many shared experts."""
    q_rank = c.data.get("q_lora_rank", 768)  # an explicit null means a full-rank query (q_proj)
    if q_rank is not None:
        q_rank = c.int("q_lora_rank", 768)
    attention = {
        "kind": "mla",
        "n_heads": c.int("num_attention_heads"),
        "q_lora_rank": q_rank,
        "kv_lora_rank": c.int("kv_lora_rank", 512),
        "qk_nope_head_dim": c.int("qk_nope_head_dim", 192),
        "qk_rope_head_dim": c.int("qk_rope_head_dim", 64),
        "v_head_dim": c.int("v_head_dim", 256),
        "bias": c.bool("attention_bias", False),
    }
    n = c.int("num_hidden_layers")
    kinds = c.data.get("mlp_layer_types") or ["dense"] + ["sparse"] * (n - 1)
    if not isinstance(kinds, list) or len(kinds) != n or not set(kinds) <= {"dense", "sparse"}:
        raise c.fail("mlp_layer_types", f'expected {n} entries, each "dense" or "sparse", got {kinds!r}')
    width = c.int("moe_intermediate_size", 1536)
    moe = {
        "kind": "moe",
        "n_experts": c.int("n_routed_experts", c.int("num_local_experts", 64)),
        "top_k": c.int("num_experts_per_tok", 4),
        "expert": gated(c, width=width),
    }
    shared = c.int("n_shared_experts", 1, positive=False)
    if shared:
        moe.update(n_shared_experts=shared, shared=gated(c, width=width))
    ffn, layers = layer_groups(kinds, {"sparse": moe, "dense": gated(c) if "dense" in kinds else None})
    return {
        **common(c, tie=False, context_default=202_752),
        "attention": attention,
        "ffn": ffn,
        **({"layers": layers} if layers else {}),
        "norm": rms(),
    }
