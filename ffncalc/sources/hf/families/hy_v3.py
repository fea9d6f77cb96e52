"""Hy3 (Tencent 2026): Llama's pre-norm layer with per-head query and key norms, one dense layer first, then
mixtures of sigmoid-routed experts beside one shared expert, set per layer by mlp_layer_types."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, layer_groups, rms


@family("hy_v3", layer_modules=MOE_MODULES)
def hy_v3(c: Config) -> dict:
    """HYV3Config / HYV3DecoderLayer: norms before each sublayer. HYV3Attention: attention_bias (default false)
    on q, k, v and o; an RMSNorm over head_dim shared by every query head and one by every key head (q_norm,
    k_norm); head_dim defaults to 128, num_key_value_heads to 8. mlp_layer_types default: one dense HYV3MLP of
    intermediate_size (default 13312) first, then HYV3MoE: a bias-free sigmoid router (HYV3TopKRouter.weight;
    the e_score_correction_bias beside it is a buffer) over num_experts (default 192), num_experts_per_tok
    (default 8) per token, fused bias-free SwiGLU experts of moe_intermediate_size (default 1536), and one
    shared HYV3MLP of moe_intermediate_size × num_shared_experts (default 1), or of intermediate_size where
    that product is 0. mlp_bias (default false) is on the dense and shared MLPs' gate, up and down, never on
    the routed experts. The multi-token-prediction layer a checkpoint may carry is not built."""
    n = c.int("num_hidden_layers")
    bias = c.bool("attention_bias", False)
    attn = attention(c, head_dim=128, kv_heads=8, qkv_bias=bias, o_bias=bias, qk_norm="head")
    kinds = c.data.get("mlp_layer_types") or ["dense"] + ["sparse"] * (n - 1)
    if not isinstance(kinds, list) or len(kinds) != n or any(t not in ("dense", "sparse") for t in kinds):
        raise c.fail("mlp_layer_types", f"expected a list of {n} of dense and sparse, got {kinds!r}")
    mlp_bias = c.bool("mlp_bias", False)
    width = c.int("moe_intermediate_size", 1536)
    moe = {
        "kind": "moe",
        "n_experts": c.int("num_experts", c.int("num_local_experts", 192)),
        "top_k": c.int("num_experts_per_tok", 8),
        "expert": gated(c, width=width),
    }
    shared = c.int("num_shared_experts", 1, positive=False)
    # one MLP num_shared_experts times as wide (its biases once); HYV3MLP reads a width of 0 as "not given", so
    # num_shared_experts 0 makes it as wide as the dense MLP
    moe.update(n_shared_experts=1, shared=gated(c, bias=mlp_bias, width=width * shared or c.int("intermediate_size", 13312)))
    dense = gated(c, bias=mlp_bias, width=c.int("intermediate_size", 13312))
    ffn, layers = layer_groups(kinds, {"sparse": moe, "dense": dense})
    return {
        **common(c, tie=False, context_default=131_072),
        "attention": attn,
        "ffn": ffn,
        **({"layers": layers} if layers else {}),
        "norm": rms(),
    }
