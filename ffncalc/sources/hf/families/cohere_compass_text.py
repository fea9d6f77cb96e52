"""Cohere Compass (Cohere 2026), its language model: Cohere's parallel layer with sliding-window and full layers
by layer_types and rotary parameters per layer type."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, layer_types, stack, window


@family("cohere_compass_text")
def cohere_compass_text(c: Config) -> dict:
    """CohereCompassTextConfig / CohereCompassDecoderLayer, CohereCompassAttention, CohereCompassMLP:
    input_layernorm only, a CohereCompassLayerNorm with a weight and no bias (also the final norm); attention
    and the bias-free SwiGLU MLP read the same normed input and both add to the residual; attention_bias on
    q/k/v/o (default false), no q/k norm; head_dim as the file states it, else hidden_size // heads
    (CohereCompassTextConfig.__post_init__ sets the quotient, then PreTrainedConfig.__post_init__ sets a stated
    head_dim over it; a null one builds no attention); one KV head per query head when num_key_value_heads is
    absent or null; tied by default; a context of 8192. layer_types as stated, else every layer full (CohereCompassTextConfig);
    sliding layers attend sliding_window keys (default 4096; null: every key). rope_parameters names an entry
    for each layer type; a null entry takes no rotary positions (CohereCompassTextModel); no parameter
    depends on it. logit_scale multiplies the logits: no parameter."""
    types = layer_types(c, lambda i: "full_attention")
    rope = c.data.get("rope_parameters")
    if not isinstance(rope, dict) or any(t not in rope for t in types):
        missing = sorted({t for t in types if not isinstance(rope, dict) or t not in rope})
        raise c.fail(
            "rope_parameters",
            f"no entry for the layer type(s) {', '.join(missing)} that layer_types "
            "names (CohereCompassRotaryEmbedding reads one per type; null: none)",
        )
    bias = c.bool("attention_bias", False)
    # CohereCompassTextConfig: the quotient unless the file states head_dim (c.int refuses a null one)
    hd = c.int("head_dim") if "head_dim" in c.data else c.int("hidden_size") // c.int("num_attention_heads")
    full = {**attention(c, qkv_bias=bias, o_bias=bias), "head_dim": hd}
    size = window(c, 4096)
    ffn = gated(c)
    layers = []
    for t in types:
        attn = {**full, "window": size} if t == "sliding_attention" and size else dict(full)
        if rope[t] is None:
            attn["rope"] = False
        layers.append({"attention": attn, "ffn": ffn})
    return {
        **common(c, tie=True, context_default=8192),
        **stack(layers),
        "norm": {"kind": "layernorm", "bias": False, "per_layer": 1, "final": True},
        "parallel": True,
    }
