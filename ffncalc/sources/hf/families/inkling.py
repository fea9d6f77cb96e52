"""Inkling (Thinking Machines Lab 2026): attention with a hidden-state-conditioned relative-position bias and short
convolutions on keys and values, short convolutions on each sublayer's output, and a mixture whose router weighs
routed and shared experts together, as inkling_text (transformers 5.23.0, models/inkling)."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, common, family, rms, stack

# InklingDecoderLayer's modules beyond the common ones: self_attn.r_proj, self_attn.k_sconv and v_sconv (each a
# Conv1d named conv1d), self_attn.rel_logits_proj (its bank, ``proj``), attn_sconv and mlp_sconv after the
# sublayers; InklingMoE's gate (the router's weight and its global_scale), experts and shared_experts; InklingMLP's
# own global_scale. The embedding's norm is InklingNormedEmbedding.embed_norm.
INKLING_MODULES = (
    (r"^self_attn\.r_proj$", "attn.r"),
    (r"^self_attn\.k_sconv\.conv1d$", "attn.k_conv1d"),
    (r"^self_attn\.v_sconv\.conv1d$", "attn.v_conv1d"),
    (r"^self_attn\.rel_logits_proj$", "attn.rel"),
    (r"^attn_sconv\.conv1d$", "attn.out_conv1d"),
    (r"^mlp_sconv\.conv1d$", "ffn.out_conv1d"),
    (r"^mlp$", "ffn.global_scale"),
) + MOE_MODULES
TOP_MODULES = ((r"embed_tokens\.embed_norm$", "embed_norm"),)


def _key(c: Config, key: str, alias: str, default: int) -> int:
    """A key the config class also accepts under another name (its attribute_map)."""
    return c.int(alias) if not c.has(key) and c.has(alias) else c.int(key, default)


@family("inkling_text", layer_modules=INKLING_MODULES, top_modules=TOP_MODULES)
def inkling_text(c: Config) -> dict:
    """InklingTextConfig / InklingDecoderLayer: input_layernorm, InklingAttention, attn_sconv on its output, the
    residual add; post_attention_layernorm, the MLP, mlp_sconv on its output, the residual add (RMSNorms with a
    weight). layer_types ("hybrid_sliding" local, "hybrid" global): as stated, else local in the layers of
    local_layer_ids, else in every layer but each sixth. Global layers: num_attention_heads (64),
    num_key_value_heads (8), head_dim (128), the relative bias over rel_extent (1024); local layers:
    swa_num_attention_heads (64), swa_num_key_value_heads (16), swa_head_dim (128), a window and a bias reach of
    sliding_window_size (512). No biases, no rotary; q_norm and k_norm over head_dim; r_proj to d_rel (16) per
    head; the short convolutions of conv_kernel_size (4, also sconv_kernel_size). mlp_layer_types ("dense" or
    "sparse"): as stated, else dense in the first dense_mlp_idx (0) layers. Sparse: InklingMoE over n_routed_experts
    (256) SwiGLU experts of moe_intermediate_size (3072), num_experts_per_tok (6), and n_shared_experts (2) of the
    same width scored by the router; dense: InklingMLP, SwiGLU of intermediate_size (24,576) times a learned scale.
    A config with dense_intermediate_size reads intermediate_size as the experts' width and that as the dense MLP's.
    The embedding has an RMSNorm; lm_head is never tied (vocab_size 201,024); the final hidden states divided by
    logits_mup_width_multiplier and any unpadded_vocab_size cut of the logits change no shape. The multi-token
    prediction layers (num_mtp_layers) are not part of InklingForCausalLM."""
    n = c.int("num_hidden_layers", 66)
    act = c.activation("hidden_act", "silu")
    kernel = _key(c, "conv_kernel_size", "sconv_kernel_size", 4)
    local_window = _key(c, "sliding_window_size", "sliding_window", 512)
    types = c.data.get("layer_types")
    if types is None:
        local = set(c.int_list("local_layer_ids")) if c.has("local_layer_ids") else {i for i in range(n) if (i + 1) % 6}
        types = ["hybrid_sliding" if i in local else "hybrid" for i in range(n)]
    elif not isinstance(types, list) or len(types) != n or not all(isinstance(t, str) for t in types):
        raise c.fail("layer_types", f"expected a list of {n} layer types, got {types!r}")
    mlp_types = c.data.get("mlp_layer_types")
    if mlp_types is None:
        first = c.int("dense_mlp_idx", 0, positive=False)
        mlp_types = ["dense" if i < first else "sparse" for i in range(n)]
    elif not isinstance(mlp_types, list) or len(mlp_types) != n or not all(isinstance(t, str) for t in mlp_types):
        raise c.fail("mlp_layer_types", f"expected a list of {n} MLP types, got {mlp_types!r}")
    dense_width, expert_width = c.int("intermediate_size", 24_576), c.int("moe_intermediate_size", 3072)
    if c.has("dense_intermediate_size"):
        dense_width, expert_width = c.int("dense_intermediate_size"), c.int("intermediate_size", 24_576)
    rel = {"d_rel": c.int("d_rel", 16), "conv_kernel": kernel}
    full = {
        "kind": "rel_attention",
        "n_heads": c.int("num_attention_heads", 64),
        "n_kv_heads": c.int("num_key_value_heads", 8),
        "head_dim": c.int("head_dim", 128),
        "rel_extent": c.int("rel_extent", 1024),
        "log_scaling": c.has("log_scaling_n_floor"),
        **rel,
    }
    local = {
        "kind": "rel_attention",
        "n_heads": c.int("swa_num_attention_heads", 64),
        "n_kv_heads": c.int("swa_num_key_value_heads", 16),
        "head_dim": c.int("swa_head_dim", 128),
        "rel_extent": local_window,
        "window": local_window,
        **rel,
    }
    expert = {"kind": "gated", "d_ff": expert_width, "activation": act, "bias": False}
    sparse = {
        "kind": "sink_moe",
        "n_experts": _key(c, "n_routed_experts", "num_local_experts", 256),
        "top_k": c.int("num_experts_per_tok", 6),
        "expert": expert,
        "n_shared_experts": c.int("n_shared_experts", 2),
        "shared": expert,
        "conv_kernel": kernel,
    }
    dense = {"kind": "scaled_gated", "d_ff": dense_width, "activation": act, "conv_kernel": kernel}
    layers = [
        {"attention": local if t == "hybrid_sliding" else full, "ffn": sparse if m == "sparse" else dense}
        for t, m in zip(types, mlp_types)
    ]
    context = _key(c, "max_position_embeddings", "model_max_length", 131_072)
    return {
        **common(c, tie=False),
        "context_length": context,
        "tie_embeddings": False,
        "positions": "none",
        **stack(layers),
        "norm": rms(),
        "embedding_norm": True,
    }
