"""Ultrabert: Llama's layers read as an encoder, sliding-window and global layers, and a bottleneck prediction head."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, layer_types, rms, stack

TOP_MODULES = (
    (r"head\.linear1$", "prediction_head.dense"),
    (r"head\.linear2$", "prediction_head.back"),
    (r"head\.decoder$", "lm_head"),
)


@family("ultrabert", top_modules=TOP_MODULES)
def ultrabert(c: Config) -> dict:
    """UltrabertConfig / UltrabertForMaskedLM: LlamaModel's layout with bidirectional attention: RMSNorms before each
    sublayer and at the end, q/k/v/o with biases where attention_bias (default false) over num_attention_heads (32)
    of head_dim (128), num_key_value_heads (32) KV heads, rotary positions; layer_types as stated (default: every
    third layer global, the others sliding; or, in earlier checkpoints, attention_windows: a window a layer, 0 for a
    global one, the first nonzero the sliding_window), a sliding layer's query meeting the keys within sliding_window (128) on
    both sides (UltrabertAttention passes sliding_window + 1 to create_bidirectional_sliding_window_mask: |i − j| ≤
    sliding_window); a SwiGLU MLP of intermediate_size (11008), biases where mlp_bias; UltrabertPredictionHead:
    linear1 d -> prediction_head_size (768), gelu_tanh, linear2 back, gelu_tanh, no biases or norm, and the decoder
    untied unless tie_word_embeddings (default false). Vocabulary 32000, 32768 positions."""
    bias = c.bool("attention_bias", False)
    full = attention(c, qkv_bias=bias, o_bias=bias)
    window = c.int("sliding_window", 128)
    windows = c.data.get("attention_windows")  # earlier checkpoints' form (UltrabertConfig.__post_init__): a window a layer
    if windows is not None:
        if not isinstance(windows, list) or not all(type(w) is int and w >= 0 for w in windows):
            raise c.fail("attention_windows", f"expected a list of windows, 0 for a global layer, got {windows!r}")
        window = next((w for w in windows if w), window)
    n = c.int("num_hidden_layers")
    if windows is not None and c.data.get("layer_types") is None:
        if len(windows) != n:
            raise c.fail("attention_windows", f"{len(windows)} windows for {n} layers")
        types = ["sliding_attention" if w else "full_attention" for w in windows]
    else:
        types = layer_types(c, lambda i: "full_attention" if (i + 1) % 3 == 0 else "sliding_attention")
    ffn = gated(c, bias=c.bool("mlp_bias", False))
    layers = [{"attention": {**full, "window": window} if t == "sliding_attention" else full, "ffn": ffn} for t in types]
    return {
        **common(c, tie=False, context_default=32768),
        **stack(layers),
        "mask": "bidirectional",
        "norm": rms(),
        "prediction_head": {
            "activation": "gelu_tanh",
            "bias": False,
            "norm": False,
            "width": c.int("prediction_head_size", 768),
            "back": True,
        },
    }
