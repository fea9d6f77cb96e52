"""Inkling 2 (Thinking Machines Lab 2026): Inkling's attention with a relative bias and short convolutions, gated and
clipped, with per-token sinks; soft-capped SwiGLU experts behind a sigmoid router; and block attention residuals
(parts/block_residuals.py), as inkling2_text (transformers 5.23.0, models/inkling2)."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, family, rms, stack

# Inkling2SlidingDecoderLayer and Inkling2FullDecoderLayer beyond the common names: the block residuals' queries
# (attention_input, mlp_input); the attention's r_proj, gate_proj, sink_proj, its convolutions on keys and values
# (a Conv1d named conv1d in sliding layers; static_weight and weight_proj in full ones), rel_logits_proj (its bank,
# ``proj``) and the clips' scales (q_l2_clip, rel_l2_clip); the full layers' own key and value input norms (the
# queries' is q_input_layernorm, the layer's first); post_attention_convolution and post_mlp_convolution after the
# sublayers; the mixture's gate (router) and experts.
INKLING2_MODULES = (
    (r"^attention_input$", "res.attention"),
    (r"^mlp_input$", "res.ffn"),
    (r"^self_attn\.r_proj$", "attn.r"),
    (r"^self_attn\.gate_proj$", "attn.gate"),
    (r"^self_attn\.sink_proj$", "attn.sink"),
    (r"^self_attn\.k_sconv\.conv1d$", "attn.k_conv1d"),
    (r"^self_attn\.v_sconv\.conv1d$", "attn.v_conv1d"),
    (r"^self_attn\.k_sconv(\.weight_proj)?$", "attn.k_conv"),
    (r"^self_attn\.v_sconv(\.weight_proj)?$", "attn.v_conv"),
    (r"^self_attn\.rel_logits_proj$", "attn.rel"),
    (r"^self_attn\.q_l2_clip$", "attn.q_clip"),
    (r"^self_attn\.rel_l2_clip$", "attn.rel_clip"),
    (r"^k_input_layernorm$", "attn.k_input_norm"),
    (r"^v_input_layernorm$", "attn.v_input_norm"),
    (r"^q_input_layernorm$", "norms"),
    (r"^post_attention_convolution\.conv1d$", "attn.out_conv1d"),
    (r"^post_mlp_convolution\.conv1d$", "ffn.out_conv1d"),
) + MOE_MODULES
TOP_MODULES = ((r"embed_tokens\.embed_norm$", "embed_norm"), (r"final_input$", "res.final"))


def _key(c: Config, key: str, alias: str, default: int) -> int:
    """A key the config class also accepts under another name (its attribute_map)."""
    return c.int(alias) if not c.has(key) and c.has(alias) else c.int(key, default)


@family("inkling2_text", layer_modules=INKLING2_MODULES, top_modules=TOP_MODULES)
def inkling2_text(c: Config) -> dict:
    """Inkling2TextConfig / Inkling2SlidingDecoderLayer, Inkling2FullDecoderLayer. layer_types ("hybrid_sliding"
    local, "hybrid" full): as stated, else full in each sixth layer. Each layer: attention_input (from the second
    layer on) mixes the block states into the attention's input, input_layernorm (full layers: q_, k_ and
    v_input_layernorm on three mixed inputs, the keys' and values' their own), the attention,
    post_attention_convolution, the residual (restarted at a block's first layer); mlp_input mixes again,
    post_attention_layernorm, the mixture, post_mlp_convolution, the residual; RMSNorms with a weight; blocks of
    n_layers_per_attn_res_block (6) layers, final_input before the final norm. Sliding layers:
    swa_num_attention_heads (48), swa_num_key_value_heads (8), swa_head_dim (128), a window and a bias reach of
    sliding_window_size (1024); full layers: num_attention_heads (48), num_key_value_heads (8), head_dim (128), the
    bias over rel_extent (1024), dynamic key and value convolutions, queries and relative states log-scaled past
    log_scaling_n_floor. Both: r_proj to d_rel (16) per head, gate_proj, sink_proj, q/k/relative-state L2 clips,
    values RMS-normed without a weight, convolutions of conv_kernel_size (4, also sconv_kernel_size) scaled by
    1/√(K + 1); no biases, no rotary. Every layer's MLP is Inkling2SparseMoeBlock: n_routed_experts (384, also
    num_local_experts) SwiGLU experts of moe_intermediate_size (2304, also intermediate_size) with the gate's linear
    factor soft-capped at mlp_gate_softcap (4) and up at mlp_up_softcap (25), num_experts_per_tok (8) chosen by a
    sigmoid router, weights normalised × route_scale; no shared experts. The embedding has an RMSNorm; lm_head is
    never tied (vocab_size 201,024); the logits' soft cap (final_logit_softcapping) and the unpadded_vocab_size cut
    change no shape and are not counted."""
    n = c.int("num_hidden_layers", 48)
    d = c.int("hidden_size", 4608)
    kernel = _key(c, "conv_kernel_size", "sconv_kernel_size", 4)
    local_window = _key(c, "sliding_window_size", "sliding_window", 1024)
    types = c.data.get("layer_types")
    if types is None:
        types = ["hybrid" if (i + 1) % 6 == 0 else "hybrid_sliding" for i in range(n)]
    elif not isinstance(types, list) or len(types) != n or not all(isinstance(t, str) for t in types):
        raise c.fail("layer_types", f"expected a list of {n} layer types, got {types!r}")
    shared = {
        "kind": "rel_attention",
        "d_rel": c.int("d_rel", 16),
        "conv_kernel": kernel,
        "qk_norm": False,
        "output_gate": True,
        "token_sinks": True,
        "l2_clip": True,
        "v_norm": True,
        "conv_scale": True,
    }
    full = {
        **shared,
        "n_heads": c.int("num_attention_heads", 48),
        "n_kv_heads": c.int("num_key_value_heads", 8),
        "head_dim": c.int("head_dim", 128),
        "rel_extent": c.int("rel_extent", 1024),
        "log_scaling": True,
        "log_scaling_states": True,
        "dynamic_conv": True,
        "kv_inputs": True,
    }
    local = {
        **shared,
        "n_heads": c.int("swa_num_attention_heads", 48),
        "n_kv_heads": c.int("swa_num_key_value_heads", 8),
        "head_dim": c.int("swa_head_dim", 128),
        "rel_extent": local_window,
        "window": local_window,
    }
    expert = {
        "kind": "gated",
        "d_ff": _key(c, "moe_intermediate_size", "intermediate_size", 2304),
        "activation": "silu",
        "bias": False,
    }
    moe = {
        "kind": "sink_moe",
        "n_experts": _key(c, "n_routed_experts", "num_local_experts", 384),
        "top_k": c.int("num_experts_per_tok", 8),
        "expert": expert,
        "router": "sigmoid",
        "gate_softcap": c.float("mlp_gate_softcap", 4.0),
        "up_softcap": c.float("mlp_up_softcap", 25.0),
        "conv_kernel": kernel,
        "conv_scale": True,
    }
    layers = [{"attention": local if t == "hybrid_sliding" else full, "ffn": moe} for t in types]
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size", 201_024),
        "d_model": d,
        "n_layers": n,
        "context_length": _key(c, "max_position_embeddings", "model_max_length", 1_048_576),
        "tie_embeddings": False,
        "positions": "none",
        **stack(layers),
        "norm": rms(),
        "embedding_norm": True,
        "block_residuals": {"block_layers": c.int("n_layers_per_attn_res_block", 6)},
    }
