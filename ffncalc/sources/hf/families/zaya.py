"""ZAYA1 (Zyphra 2026): compressed convolutional attention (arXiv:2510.04476) and a mixture of experts routed by
a small MLP that can skip every expert, with scaled residual adds."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, common, family, gated, layer_types, rms, stack

MODULES = (
    (r"qkv_proj\.v_proj_current$", "attn.v_current"),
    (r"qkv_proj\.v_proj_delayed$", "attn.v_delayed"),
    (r"conv_qk_depthwise$", "attn.conv_depthwise"),
    (r"conv_qk_grouped$", "attn.conv_grouped"),
    (r"qk_norm$", "attn.key_scale"),  # ZayaQKNorm.temp; before the common k_norm
    (r"mlp\.gate\.down_proj$", "ffn.router.down"),
    (r"router_mlp\.norm$", "ffn.router.norm"),
    (r"router_mlp\.fc1$", "ffn.router.fc1"),
    (r"router_mlp\.fc2$", "ffn.router.fc2"),
    (r"router_mlp\.out_proj$", "ffn.router.out"),
    (r"post_attention_residual_scale$", "residual_scale.attention"),
    (r"post_mlp_residual_scale$", "residual_scale.ffn"),
)
TOP_MODULES = ((r"^model$", "residual_scale.input"),)  # ZayaModel.input_hidden_states_scale and _bias

# ZayaConfig's defaults (transformers 5.23.0) for the keys the shared readers require
DEFAULTS = {"vocab_size": 262_272, "hidden_size": 2048, "num_hidden_layers": 40, "num_attention_heads": 8}


def _rotary(c: Config, layer_type: str, head_dim: int) -> int:
    """int(head_dim · partial_rotary_factor) of the layer type's rope parameters (ZayaRotaryEmbedding; 0.5 for both
    types by default)."""
    nested = c.data.get("rope_parameters")
    params = nested.get(layer_type) if isinstance(nested, dict) else None
    fraction = params.get("partial_rotary_factor", 1.0) if isinstance(params, dict) else 0.5
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
        raise c.fail("rope_parameters", f"expected a partial_rotary_factor above 0 and at most 1, got {fraction!r}")
    return int(head_dim * fraction)


@family("zaya", layer_modules=MODULES + MOE_MODULES, top_modules=TOP_MODULES)
def zaya(c: Config) -> dict:
    """ZayaConfig / ZayaDecoderLayer: input_layernorm, attention, then post_attention_residual_scale adds it to the
    residual, each side shifted and scaled per feature (ZayaResidualScaling: four vectors of hidden_size);
    post_attention_layernorm, the mixture, post_mlp_residual_scale likewise; RMSNorms. ZayaModel scales and shifts
    the embedding the same way (input_hidden_states_scale, _bias) before the first layer.
    ZayaAttention: compressed convolutional attention (ZayaCCAProjection: q_proj and k_proj of num_attention_heads
    (8) and num_key_value_heads (2) heads of head_dim (128), conv_qk_depthwise of kernel cca_time0 (2) and
    conv_qk_grouped of kernel cca_time1 (2) over their channels, v_proj_current and v_proj_delayed of half the KV
    width each; ZayaQKNorm's temp, one key scale per KV head), rotary positions over int(head_dim ·
    partial_rotary_factor) features (0.5 for both layer types); attention_bias (false) on q, k, v and o_proj.
    layer_types as stated, or every layer "hybrid" (global); "hybrid_sliding" over sliding_window keys.
    ZayaSparseMoeBlock: num_experts (16) SwiGLU experts of moe_intermediate_size (2048), fused gate_up_proj and
    down_proj, num_experts_per_tok 1 (the only value ZayaConfig accepts); ZayaRouter: down_proj hidden_size ->
    router_hidden_size (256) with a bias, from the second layer on the previous layer's router state × its
    router_states_scale added, then ZayaRouterMLP (an RMSNorm, fc1 and fc2 with biases and GELU, out_proj to
    num_experts + 1 classes without one): the last class a skip expert that runs nothing (balancing_biases is a
    buffer). Tied embeddings by default; an lm_head bias where lm_head_bias (false)."""
    c = c.with_defaults(DEFAULTS)
    heads, kv = c.int("num_attention_heads"), c.int("num_key_value_heads", 2)
    head_dim, bias = c.int("head_dim", 128), c.bool("attention_bias", False)
    if c.int("num_experts_per_tok", 1) != 1:
        raise c.fail("num_experts_per_tok", "ZAYA routes each token to one expert (ZayaConfig accepts only 1)")
    types = layer_types(c, lambda i: "hybrid")
    if not set(types) <= {"hybrid", "hybrid_sliding"}:
        raise c.fail("layer_types", f'expected "hybrid" or "hybrid_sliding" layers, got {sorted(set(types))}')
    if "hybrid_sliding" in types and c.data.get("sliding_window") is None:
        raise c.fail("sliding_window", "hybrid_sliding layers need a sliding_window (ZayaConfig)")

    def attention(t: str) -> dict:
        out = {
            "kind": "cca",
            "n_heads": heads,
            "n_kv_heads": kv,
            "head_dim": head_dim,
            "bias": bias,
            "time0": c.int("cca_time0", 2),
            "time1": c.int("cca_time1", 2),
            "rotary_dim": _rotary(c, t, head_dim),
        }
        return {**out, "window": c.int("sliding_window")} if t == "hybrid_sliding" else out

    def moe(i: int) -> dict:
        return {
            "kind": "moe",
            "n_experts": c.int("num_experts", 16),
            "top_k": 1,
            "expert": gated(c, width=c.int("moe_intermediate_size", 2048)),
            "router_mlp": c.int("router_hidden_size", 256),
            "skip_expert": True,
            "router_state": i > 0,
        }

    layers = [{"attention": attention(t), "ffn": moe(i)} for i, t in enumerate(types)]
    return {
        **common(c, tie=True, context_default=131_072),
        **stack(layers),
        "norm": rms(),
        "residual_scale": {"input": True},
        "lm_head_bias": c.bool("lm_head_bias", False),
    }
