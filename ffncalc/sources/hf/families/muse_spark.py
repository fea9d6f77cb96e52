"""MUSE Spark's language model (muse_spark_text): MUSE Glimmer's attention with a weightless norm over each head's
output, routed experts in a narrower space under a sigmoid router, and learned residual gates after each sublayer."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, layer_types, rms, stack, window


@family(
    "muse_spark_text",
    layer_modules=(
        (r"self_attn\.gate_proj$", "attn.g"),
        (r"(input_layernorm|post_attention_layernorm|pre_feedforward_layernorm|post_feedforward_layernorm)$", "norms"),
        (r"post_(attention|feedforward)_residual_gate$", "residual_gates"),
        (r"mlp\.pre_expert_proj$", "ffn.pre_proj"),
        (r"mlp\.pre_expert_norm$", "ffn.pre_norm"),
        (r"mlp\.experts\.post_expert_norm$", "ffn.expert_norm"),
        (r"mlp\.post_expert_proj$", "ffn.post_proj"),
        *MOE_MODULES,
    ),
)
def muse_spark_text(c: Config) -> dict:
    """MuseSparkTextConfig / MuseSparkTextDecoderLayer: input_layernorm and pre_feedforward_layernorm
    MuseSparkTextCenteredRMSNorms (a weight of hidden_size, scaling by 1 + w) before attention and the MLP;
    post_attention_layernorm a MuseSparkRMSNorm without a weight on attention's output; post_feedforward_layernorm a
    MuseSparkTextInputScaledRMSNorm (a weight of hidden_size) on the MLP's output; each sublayer's output then mixed
    with the residual by a MuseSparkResidualGate (a vector of hidden_size, residual_gate_temperature). The final norm a
    MuseSparkRMSNorm of hidden_size. MuseSparkTextAttention: MUSE Glimmer's (q, k, v and o with attention_bias, default
    false; head_dim 64; num_key_value_heads 16; qk_norm a weightless RMSNorm over each query and key head, the queries
    then times qk_scale_factor; a bias-free gate_proj, sigmoid(gate) ⊙ the heads' output before o) with o_norm, a
    weightless RMSNorm over each head's output before the gate. layer_types default: every fourth layer from the last
    global, the others sliding over sliding_window keys (2048); rotary positions only where layer_rope_theta is not 0.
    mlp_layer_types (default every layer "sparse"): MuseSparkMoE (MuseSparkTopkRouter: a bias-free weight of
    num_local_experts × hidden_size, its logits times output_multiplier through a sigmoid, e_score_correction_bias a
    buffer; pre_expert_proj hidden_size → moe_hidden_size and a centred RMSNorm; MuseSparkExperts, num_experts_per_tok
    of num_local_experts SwiGLU experts of moe_intermediate_size, each output through one shared post_expert_norm, an
    input-scaled RMSNorm of moe_hidden_size; post_expert_proj back), or "dense", MuseSparkTextMLP (a SwiGLU of
    intermediate_size). MuseSparkTextNormedEmbedding: the table's rows then an RMSNorm without a weight. Untied
    lm_head; final_logit_softcapping bounds the logits (elementwise)."""
    bias = c.bool("attention_bias", False)
    n = c.int("num_hidden_layers")
    full = {
        **attention(c, head_dim=64, qkv_bias=bias, o_bias=bias, qk_norm="head", kv_heads=16),
        "qk_norm_affine": False,
        "softplus_gate": "element",
        "gate_activation": "sigmoid",
        "o_norm": True,
    }
    size = window(c, 2048)
    types = layer_types(c, lambda i: "full_attention" if (n - 1 - i) % 4 == 0 else "sliding_attention")
    if c.data.get("layer_rope_theta") is not None:
        thetas = c.data["layer_rope_theta"]
        if not isinstance(thetas, list) or len(thetas) != len(types):
            raise c.fail("layer_rope_theta", f"expected a list of {len(types)} numbers, one a layer")
        roped = [bool(t) for t in thetas]
    else:  # MuseSparkTextConfig: 0 (no rotary positions) in every fourth layer from the last
        roped = [(n - 1 - i) % 4 != 0 for i in range(len(types))]
    kinds = c.data.get("mlp_layer_types")
    if kinds is None:  # MuseSparkTextConfig: every layer a mixture
        kinds = ["sparse"] * n
    if not isinstance(kinds, list) or len(kinds) != n or not set(kinds) <= {"sparse", "dense"}:
        raise c.fail("mlp_layer_types", f"expected {n} layer kinds (num_hidden_layers), sparse or dense")
    experts, top_k = c.int("num_local_experts", 256), c.int("num_experts_per_tok", 8)
    if top_k > experts:
        raise c.fail("num_experts_per_tok", f"{top_k} experts a token of {experts} (num_local_experts)")
    ffns = {
        "dense": gated(c),
        "sparse": {
            "kind": "moe",
            "n_experts": experts,
            "top_k": top_k,
            "expert": gated(c, "moe_intermediate_size"),
            "expert_width": c.int("moe_hidden_size", 4096),
            "router_scale": True,
        },
    }

    def attn(kind: str, rope: bool) -> dict:
        out = {**full, "window": size} if kind == "sliding_attention" and size is not None else dict(full)
        return out if rope else {**out, "rope": False}

    layers = [{"attention": attn(t, r), "ffn": ffns[k]} for t, r, k in zip(types, roped, kinds)]
    return {
        **common(c, tie=False, context_default=1_048_576),
        **stack(layers),
        "embedding_norm": True,
        "embedding_norm_affine": False,
        # input_layernorm, post_attention_layernorm (no weight), pre_feedforward_layernorm, post_feedforward_layernorm
        "norm": rms(per_layer=4),
        "norms": ["norm", "bare", "norm", "norm"],
        "residual_gates": {"temperature": c.float("residual_gate_temperature", 0.3)},
    }
