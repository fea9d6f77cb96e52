"""Qwen2, Qwen2.5, Qwen3 and their mixtures (Qwen2-MoE, Qwen3-MoE); the language models of Qwen2-VL, Qwen2.5-VL,
Qwen3-VL and Qwen3-VL-MoE (their text_configs: the same layers, with multimodal rotary positions that add no parameters
and no multiply-adds)."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, layer_groups, rms


@family("qwen2", "qwen2_vl_text", "qwen2_5_vl_text", "qwen2_5_omni_text")
def qwen2(c: Config) -> dict:
    """Qwen2Config / Qwen2Attention: q, k and v always carry a bias and o never does (hard-coded, no key)."""
    return {**common(c, tie=False), "attention": attention(c, qkv_bias=True), "ffn": gated(c), "norm": rms()}


def _qwen_moe(c: Config, *, shared: bool) -> dict:
    """Qwen2Moe/Qwen3Moe DecoderLayer: layer i is sparse unless listed in mlp_only_layers, when
    num_experts > 0 and (i + 1) % decoder_sparse_step == 0; other layers are dense MLPs of intermediate_size."""
    n, step = c.int("num_hidden_layers"), c.int("decoder_sparse_step", 1)
    experts, dense_only = c.int("num_experts", 60 if shared else 128, positive=False), set(c.int_list("mlp_only_layers"))
    moe = {
        "kind": "moe",
        "n_experts": experts or 1,
        "top_k": c.int("num_experts_per_tok", 4 if shared else 8),
        "expert": gated(c, "moe_intermediate_size", width=c.int("moe_intermediate_size", 1408 if shared else 768)),
    }
    if shared:  # Qwen2MoeSparseMoeBlock: one shared expert, scaled by sigmoid(shared_expert_gate(x))
        moe.update(n_shared_experts=1, shared_gate=True, shared=gated(c, width=c.int("shared_expert_intermediate_size", 5632)))
    kinds = ["moe" if experts and i not in dense_only and (i + 1) % step == 0 else "dense" for i in range(n)]
    ffn, layers = layer_groups(kinds, {"moe": moe, "dense": gated(c) if "dense" in kinds else None})
    return {"ffn": ffn, **({"layers": layers} if layers else {})}


@family("qwen2_moe", layer_modules=MOE_MODULES)
def qwen2_moe(c: Config) -> dict:
    """Qwen2MoeConfig / Qwen2MoeAttention: q/k/v bias from qkv_bias (default true), none on o."""
    return {
        **common(c, tie=False),
        "attention": attention(c, qkv_bias=c.bool("qkv_bias", True)),
        "norm": rms(),
        **_qwen_moe(c, shared=True),
    }


@family("qwen3", "qwen3_vl_text")
def qwen3(c: Config) -> dict:
    """Qwen3Config / Qwen3Attention: head_dim defaults to 128, attention_bias on q/k/v/o (default false),
    and an RMSNorm over head_dim on each query and key head (q_norm, k_norm)."""
    bias = c.bool("attention_bias", False)
    return {
        **common(c, tie=False),
        "attention": attention(c, head_dim=128, qkv_bias=bias, o_bias=bias, qk_norm="head"),
        "ffn": gated(c),
        "norm": rms(),
    }


@family("qwen3_moe", "qwen3_vl_moe_text", "qwen3_omni_moe_text", layer_modules=MOE_MODULES)
def qwen3_moe(c: Config) -> dict:
    """Qwen3MoeConfig: Qwen3's attention (head_dim stated or hidden_size / heads) and routed experts only."""
    bias = c.bool("attention_bias", False)
    return {
        **common(c, tie=False),
        "attention": attention(c, qkv_bias=bias, o_bias=bias, qk_norm="head"),
        "norm": rms(),
        **_qwen_moe(c, shared=False),
    }
