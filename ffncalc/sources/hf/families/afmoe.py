"""Trinity (Arcee 2025, AFMoE): sliding-window layers with rotary positions and global layers without, a sigmoid
output gate in every attention, norms before and after each sublayer, and a mixture of sigmoid-routed experts
beside shared experts after dense layers."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, layer_types, rms, stack, window


@family(
    "afmoe",
    layer_modules=(
        (r"mlp\.router\.gate$", "ffn.router"),
        (r"mlp$", "ffn.correction_bias"),
        (r"self_attn\.gate_proj$", "attn.g"),
        (r"(pre_mlp_layernorm|post_mlp_layernorm)$", "norms"),
    )
    + MOE_MODULES,
)
def afmoe(c: Config) -> dict:
    """AfmoeConfig / AfmoeDecoderLayer: four RMSNorms a layer, input_layernorm before attention and
    post_attention_layernorm on its output, pre_mlp_layernorm before the FFN and post_mlp_layernorm on its output.
    AfmoeAttention: attention_bias (default false) on q, k, v and o; an RMSNorm over head_dim shared by every
    query head and one by every key head; head_dim defaults to 128; one KV head per query head when
    num_key_value_heads is absent or null; a bias-free gate_proj of the layer's input, one gate per output
    feature, sigmoid(gate) ⊙ the heads' output before o. layer_types default: every global_attn_every_n_layers-th
    layer (default 4th) global, the others sliding over sliding_window keys (default 1024); only the sliding
    layers take rotary positions. Layers from num_dense_layers (default 1) on are an AfmoeSparseMoeBlock, the
    others a dense AfmoeMLP of intermediate_size (default 6144). The mixture: a bias-free sigmoid router
    (AfmoeTokenChoiceRouter.gate) over num_experts (default 64), num_experts_per_tok (default 6) per token, whose
    choice adds expert_bias, a parameter (not trained, counted); SwiGLU experts of moe_intermediate_size (default
    1408) and one shared AfmoeMLP of moe_intermediate_size × num_shared_experts (default 2), stated as that many
    shared experts. mup_enabled scales the embeddings' output only: no parameter."""
    bias = c.bool("attention_bias", False)
    full = {
        **attention(c, head_dim=128, qkv_bias=bias, o_bias=bias, qk_norm="head"),
        "softplus_gate": "element",
        "gate_activation": "sigmoid",
    }
    size = window(c, 1024)
    every = c.int("global_attn_every_n_layers", 4)
    types = layer_types(c, lambda i: "sliding_attention" if (i + 1) % every else "full_attention")
    width = c.int("moe_intermediate_size", 1408)
    moe = {
        "kind": "moe",
        "n_experts": c.int("num_experts", 64),
        "top_k": c.int("num_experts_per_tok", 6),
        "expert": gated(c, width=width),
        "correction_bias": True,
    }
    shared = c.int("num_shared_experts", 2, positive=False)
    if shared:
        moe.update(n_shared_experts=shared, shared=gated(c, width=width))
    first = c.int("num_dense_layers", 1, positive=False)
    dense = gated(c, width=c.int("intermediate_size", 6144))

    def attn(kind: str) -> dict:
        if kind == "sliding_attention":
            return {**full, "window": size} if size is not None else dict(full)
        return {**full, "rope": False}

    layers = [{"attention": attn(t), "ffn": moe if i >= first else dense} for i, t in enumerate(types)]
    return {**common(c, tie=False, context_default=16_384), **stack(layers), "norm": rms(per_layer=4)}
