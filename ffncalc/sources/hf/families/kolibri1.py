"""Kolibri-1 (Aleph Alpha 2026): sliding-window layers with rotary positions and global layers without, norms
before and after each sublayer, and a mixture beside one shared expert in every layer."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, layer_types, rms, stack, window


@family("kolibri1", layer_modules=((r"(post_self_attn_layernorm|post_mlp_layernorm)$", "norms"),) + MOE_MODULES)
def kolibri1(c: Config) -> dict:
    """Kolibri1Config / Kolibri1DecoderLayer: four RMSNorms a layer, input_layernorm before attention and
    post_self_attn_layernorm on its output, post_attention_layernorm before the mixture and post_mlp_layernorm on
    its output. Kolibri1Attention: no bias anywhere; an RMSNorm over head_dim shared by every query head and one by
    every key head; head_dim defaults to 128, num_key_value_heads to 4. layer_types default: every fifth layer
    global, the others sliding over sliding_window keys (default 513); with a sliding_window, only the sliding
    layers take rotary positions (null: every layer does, and none may be sliding). Every layer is a
    Kolibri1SparseMoeBlock: a bias-free sigmoid router (Kolibri1TopKRouter.weight; its
    e_score_correction_bias is a buffer) over num_experts (default 384), num_experts_per_tok (default 6) per
    token, SwiGLU experts of moe_intermediate_size (default 512), and one SwiGLU shared expert of
    shared_expert_intermediate_size (default 512)."""
    size = window(c, 513)
    types = layer_types(c, lambda i: "full_attention" if (i + 1) % 5 == 0 else "sliding_attention")
    if size is None and "sliding_attention" in types:
        raise c.fail("sliding_window", "sliding-window layers need a positive sliding_window")
    full = attention(c, head_dim=128, kv_heads=4, qk_norm="head")
    moe = {
        "kind": "moe",
        "n_experts": c.int("num_local_experts", c.int("num_experts", 384)),
        "top_k": c.int("num_experts_per_tok", 6),
        "expert": gated(c, width=c.int("moe_intermediate_size", 512)),
        "n_shared_experts": 1,
        "shared": gated(c, width=c.int("shared_expert_intermediate_size", 512)),
    }

    def attn(kind: str) -> dict:
        if kind == "sliding_attention":
            return {**full, "window": size}
        return full if size is None else {**full, "rope": False}

    layers = [{"attention": attn(t), "ffn": moe} for t in types]
    return {**common(c, tie=False, context_default=262_144), **stack(layers), "norm": rms(per_layer=4)}
