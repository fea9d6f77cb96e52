"""Command R7B and Command A (Cohere 2024, 2025): Cohere's parallel layer, three sliding-window layers with
rotary positions to one global layer without."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, layer_types, stack, window


@family("cohere2")
def cohere2(c: Config) -> dict:
    """Cohere2Config / Cohere2DecoderLayer, Cohere2Attention, Cohere2MLP: input_layernorm only, a
    Cohere2LayerNorm with a weight and no bias (also the final norm); attention and the SwiGLU MLP read the same
    normed input and both add to the residual; attention_bias on q/k/v/o (default false), no q/k norm; the MLP
    never has a bias; head_dim a stated head_dim or hidden_size / heads; one KV head per query head when
    num_key_value_heads is absent or null; tied by default; a context of 8192.
    layer_types as stated, or (Cohere2Config.__post_init__) every sliding_window_pattern-th layer (default 4th)
    global and the others sliding over sliding_window (default 4096; null: every key). Rotary positions turn only
    the sliding layers (Cohere2Attention): the global layers take none (rope false); no parameter depends on it."""
    pattern = c.int("sliding_window_pattern", 4)
    types = layer_types(c, lambda i: "sliding_attention" if (i + 1) % pattern else "full_attention")
    bias = c.bool("attention_bias", False)
    full = attention(c, qkv_bias=bias, o_bias=bias)
    size = window(c, 4096)
    ffn = gated(c)
    layers = [{"attention": {**full, "window": size} if t == "sliding_attention" else {**full, "rope": False},
               "ffn": ffn} for t in types]
    return {**common(c, tie=True, context_default=8192), **stack(layers),
            "norm": {"kind": "layernorm", "bias": False, "per_layer": 1, "final": True}, "parallel": True}
