"""Gemma, Gemma 2 and Gemma 3 (Gemma Team 2024, 2025)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, layer_types, rms, stack, window


@family("gemma")
def gemma(c: Config) -> dict:
    """GemmaConfig / GemmaMLP: head_dim defaults to 256, GeGLU with the tanh GELU (a legacy hidden_act
    "gelu" is read as gelu_pytorch_tanh, as GemmaConfig does), tied embeddings; RMSNorm scales by 1 + w."""
    bias = c.bool("attention_bias", False)
    ffn = gated(c, act_default="gelu_pytorch_tanh")
    if c.data.get("hidden_act") == "gelu":
        ffn["activation"] = "gelu_tanh"
    return {**common(c, tie=True), "attention": attention(c, head_dim=256, qkv_bias=bias, o_bias=bias), "ffn": ffn, "norm": rms()}


@family("gemma2")
def gemma2(c: Config) -> dict:
    """Gemma2Config / Gemma2DecoderLayer: four RMSNorms per layer, one before and one after each sublayer;
    GeGLU from hidden_activation; head_dim defaults to 256; tied embeddings."""
    bias = c.bool("attention_bias", False)
    types = layer_types(c, lambda i: "sliding_attention" if (i + 1) % 2 else "full_attention")  # Gemma2Config
    size = window(c, 4096)
    full = attention(c, head_dim=256, qkv_bias=bias, o_bias=bias)
    ffn = gated(c, act_key="hidden_activation", act_default="gelu_pytorch_tanh")
    layers = [{"attention": {**full, "window": size} if t == "sliding_attention" else full, "ffn": ffn} for t in types]
    return {**common(c, tie=True), **stack(layers), "norm": rms(per_layer=4)}


# Gemma3TextConfig's defaults (transformers 5.23): a Gemma 3 text_config states only what differs from them.
GEMMA3_TEXT = {
    "vocab_size": 262_208,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 26,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "max_position_embeddings": 131_072,
    "tie_word_embeddings": True,
    "attention_bias": False,
    "hidden_activation": "gelu_pytorch_tanh",
}


@family("gemma3_text")
def gemma3_text(c: Config) -> dict:
    """Gemma3TextConfig / Gemma3DecoderLayer: Gemma 2's four RMSNorms a layer, plus an RMSNorm over head_dim
    on each query and key head (Gemma3Attention q_norm, k_norm); sliding-window and global layers
    (layer_types) have the same parameters; the embedding is scaled, not resized. The language model of
    a gemma3 config is its text_config read with these defaults."""
    c = c.with_defaults(GEMMA3_TEXT)
    bias = c.bool("attention_bias", False)
    pattern = c.int("sliding_window_pattern", 6)  # Gemma3TextConfig: every sixth layer global by default
    types = layer_types(c, lambda i: "sliding_attention" if (i + 1) % pattern else "full_attention")
    size = window(c, 4096)
    full = attention(c, qkv_bias=bias, o_bias=bias, qk_norm="head")
    ffn = gated(c, act_key="hidden_activation", act_default="gelu_pytorch_tanh")
    layers = [{"attention": {**full, "window": size} if t == "sliding_attention" else full, "ffn": ffn} for t in types]
    return {**common(c, tie=True), **stack(layers), "norm": rms(per_layer=4)}
