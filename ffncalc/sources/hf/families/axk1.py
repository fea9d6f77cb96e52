"""A.X-K1 (SK Telecom 2026): DeepSeek-V3's multi-head latent attention and mixture, with a norm over the
mixture's output."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, common, family, gated, layer_groups, rms
from .deepseek import MLA_MODULES
from .minicpm3 import mla_attention


def mlp_kinds(c: Config, first_default: int) -> list[str]:
    """mlp_layer_types as stated, else as the config classes derive it from the legacy keys: layer i "sparse"
    where i >= first_k_dense_replace and i % moe_layer_freq == 0 (default 1), "dense" otherwise."""
    n = c.int("num_hidden_layers")
    kinds = c.data.get("mlp_layer_types")
    if kinds is None:
        first = c.int("first_k_dense_replace", first_default, positive=False)
        freq = c.int("moe_layer_freq", 1)
        kinds = ["sparse" if i >= first and i % freq == 0 else "dense" for i in range(n)]
    if not isinstance(kinds, list) or len(kinds) != n or not set(kinds) <= {"dense", "sparse"}:
        raise c.fail("mlp_layer_types", f'expected {n} entries, each "dense" or "sparse", got {kinds!r}')
    return kinds


def deepseek_moe(
    c: Config, *, n_routed_experts: int, num_experts_per_tok: int, moe_intermediate_size: int, n_shared_experts: int, **extra
) -> dict:
    """DeepseekV3MoE with the config class's defaults: a bias-free router (its e_score_correction_bias a
    buffer), SwiGLU experts of moe_intermediate_size, and one shared MLP of n_shared_experts ×
    moe_intermediate_size, stated as that many shared experts of moe_intermediate_size."""
    width = c.int("moe_intermediate_size", moe_intermediate_size)
    moe = {
        "kind": "moe",
        "n_experts": c.int("n_routed_experts", n_routed_experts),
        "top_k": c.int("num_experts_per_tok", num_experts_per_tok),
        "expert": gated(c, width=width),
        **extra,
    }
    shared = c.int("n_shared_experts", n_shared_experts, positive=False)
    if shared:
        moe.update(n_shared_experts=shared, shared=gated(c, width=width))
    return moe


@family("axk1", layer_modules=((r"mlp\.post_mlp_layernorm$", "ffn.output_norm"),) + MLA_MODULES + MOE_MODULES)
def axk1(c: Config) -> dict:
    """AXK1Config / AXK1DecoderLayer: DeepSeek-V3's layer. AXK1Attention always has a low-rank query
    (q_lora_rank 1536; kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128,
    attention_bias false on q_a, kv_a and o). mlp_layer_types (default: first_k_dense_replace 1 and
    moe_layer_freq 1, so one dense layer first): a bias-free MLP of intermediate_size (18432), or AXK1MoE:
    DeepseekV3MoE over n_routed_experts (192), num_experts_per_tok (8), experts of moe_intermediate_size (2048),
    n_shared_experts (1) shared, then post_mlp_layernorm, an RMSNorm over its output. No MTP layers are built."""
    if c.data.get("q_lora_rank", 1536) is None:
        raise c.fail("q_lora_rank", "A.X-K1's attention always has a low-rank query (AXK1Attention.q_a_proj)")
    attention = mla_attention(c, q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)
    kinds = mlp_kinds(c, 1)
    moe = deepseek_moe(
        c, n_routed_experts=192, num_experts_per_tok=8, moe_intermediate_size=2048, n_shared_experts=1, output_norm=True
    )
    ffn, layers = layer_groups(kinds, {"sparse": moe, "dense": gated(c, width=c.int("intermediate_size", 18432))})
    return {
        **common(c, tie=False, context_default=32_768),
        "attention": attention,
        "ffn": ffn,
        **({"layers": layers} if layers else {}),
        "norm": rms(),
    }
