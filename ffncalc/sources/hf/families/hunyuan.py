"""Hunyuan dense models and Hunyuan-A13B (Tencent 2025)."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, rms, stack

# HunYuanDenseV1Attention / HunYuanMoEV1Attention name their head norms query_layernorm and key_layernorm.
HUNYUAN_MODULES = ((r"query_layernorm$", "attn.q_norm"), (r"key_layernorm$", "attn.k_norm"))


def _hunyuan_attention(c: Config) -> dict:
    """An RMSNorm over head_dim shared by every query head and one by every key head (query_layernorm,
    key_layernorm, built and applied whatever use_qk_norm says); attention_bias on q/k/v/o (default false).
    head_dim must be stated: the config leaves it None and the attention reads it as it is."""
    bias = c.bool("attention_bias", False)
    attn = attention(c, qkv_bias=bias, o_bias=bias, qk_norm="head")
    attn["head_dim"] = c.int("head_dim")
    return attn


@family("hunyuan_v1_dense", layer_modules=HUNYUAN_MODULES)
def hunyuan_v1_dense(c: Config) -> dict:
    """HunYuanDenseV1Config / HunYuanDenseV1Attention: the attention above; HunYuanDenseV1MLP has no bias
    whatever mlp_bias says."""
    return {**common(c, tie=False), "attention": _hunyuan_attention(c), "ffn": gated(c), "norm": rms()}


@family(
    "hunyuan_v1_moe",
    layer_modules=HUNYUAN_MODULES + ((r"mlp\.gate\.wg$", "ffn.router"), (r"mlp\.shared_mlp\b", "ffn.shared")) + MOE_MODULES,
)
def hunyuan_v1_moe(c: Config) -> dict:
    """HunYuanMoEV1Config / HunYuanMoEV1DecoderLayer: the dense model's attention and a HunYuanMoEV1Moe in
    every layer: a bias-free router (gate.wg) over num_experts (default 1; alias num_local_experts) SwiGLU experts
    of intermediate_size fused as 3-D tensors (HunYuanMoEV1Experts), moe_topk (default 1, or one per layer; alias
    num_experts_per_tok) per token, and one bias-free shared HunYuanMoEV1MLP (shared_mlp) of intermediate_size,
    whatever num_shared_expert, moe_intermediate_size or use_cla (cross-layer attention) say: the class reads
    none of them, and every layer has its own k and v. A per-layer list of num_experts builds no model
    (HunYuanMoEV1Config's validation takes one integer), so it is refused."""
    experts_key = "num_local_experts" if c.has("num_local_experts") else "num_experts"  # attribute_map aliases
    topk_key = "num_experts_per_tok" if c.has("num_experts_per_tok") else "moe_topk"
    if isinstance(c.data.get(experts_key), list):
        raise c.fail(experts_key, "a per-layer list builds no model: HunYuanMoEV1Config takes one expert count")
    n, experts = c.int("num_hidden_layers"), c.int(experts_key, 1)
    top_k = c.data.get(topk_key, 1)
    if isinstance(top_k, list):
        if len(top_k) < n or not all(isinstance(k, int) and not isinstance(k, bool) and k > 0 for k in top_k):
            raise c.fail(topk_key, f"expected a positive integer or one per layer ({n}), got {top_k!r}")
    else:
        top_k = [c.int(topk_key, 1)] * n
    attn, mlp = _hunyuan_attention(c), gated(c, width=c.int("intermediate_size", 11008))
    layers = [
        {
            "attention": attn,
            "ffn": {"kind": "moe", "n_experts": experts, "top_k": top_k[i], "expert": mlp, "n_shared_experts": 1, "shared": mlp},
        }
        for i in range(n)
    ]
    return {**common(c, tie=False), **stack(layers), "norm": rms()}
