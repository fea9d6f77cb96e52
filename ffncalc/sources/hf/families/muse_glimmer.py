"""MUSE Glimmer's language model (muse_glimmer_text): sliding-window and global layers of grouped-query attention with
weightless query and key norms and a sigmoid output gate of its own projection, four centred RMSNorms a layer, a
weightless norm over the embeddings and soft-capped logits."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, layer_types, rms, stack, window


@family(
    "muse_glimmer_text",
    layer_modules=(
        (r"self_attn\.gate_proj$", "attn.g"),
        (r"(input_layernorm|post_attention_layernorm|pre_feedforward_layernorm|post_feedforward_layernorm)$", "norms"),
    ),
)
def muse_glimmer_text(c: Config) -> dict:
    """MuseGlimmerTextConfig / MuseGlimmerTextDecoderLayer: four MuseGlimmerTextCenteredRMSNorms a layer (a weight of
    hidden_size each, scaling by 1 + w), input_layernorm before attention and post_attention_layernorm on its output,
    pre_feedforward_layernorm before the MLP and post_feedforward_layernorm on its output; the final norm a
    MuseGlimmerRMSNorm of hidden_size. MuseGlimmerTextAttention: q, k, v and o with attention_bias (default false),
    head_dim 128, num_key_value_heads (2) KV heads; qk_norm, one MuseGlimmerRMSNorm without a weight over each query
    and key head (with_scale false; the queries then times qk_scale_factor, elementwise); a bias-free gate_proj of the
    layer's input, one gate per output feature, sigmoid(gate) ⊙ the heads' output before o. layer_types default:
    every fourth layer from the last global, the others sliding over sliding_window keys (2048); rotary positions
    only where layer_rope_theta is not 0 (by default the sliding layers). A SwiGLU MLP of intermediate_size
    (hidden_activation silu). MuseGlimmerTextNormedEmbedding: the table's rows then an RMSNorm without a weight.
    Untied lm_head; final_logit_softcapping bounds the logits and output_multiplier scales them (elementwise)."""
    bias = c.bool("attention_bias", False)
    n = c.int("num_hidden_layers")
    full = {
        **attention(c, head_dim=128, qkv_bias=bias, o_bias=bias, qk_norm="head"),
        "qk_norm_affine": False,
        "softplus_gate": "element",
        "gate_activation": "sigmoid",
    }
    size = window(c, 2048)
    types = layer_types(c, lambda i: "full_attention" if (n - 1 - i) % 4 == 0 else "sliding_attention")
    if c.has("layer_rope_theta") and c.data.get("layer_rope_theta") is not None:
        thetas = c.data["layer_rope_theta"]
        if not isinstance(thetas, list) or len(thetas) != len(types):
            raise c.fail("layer_rope_theta", f"expected a list of {len(types)} numbers, one a layer")
        roped = [bool(t) for t in thetas]
    else:  # MuseGlimmerTextConfig: 0 (no rotary positions) in every fourth layer from the last
        roped = [(n - 1 - i) % 4 != 0 for i in range(len(types))]
    ffn = gated(c, act_key="hidden_activation", act_default="silu")

    def attn(kind: str, rope: bool) -> dict:
        out = {**full, "window": size} if kind == "sliding_attention" and size is not None else dict(full)
        return out if rope else {**out, "rope": False}

    layers = [{"attention": attn(t, r), "ffn": ffn} for t, r in zip(types, roped)]
    return {
        **common(c, tie=False, context_default=131_072),
        **stack(layers),
        "embedding_norm": True,
        "embedding_norm_affine": False,
        "norm": rms(per_layer=4),
    }
