"""Ministral 8B (Mistral AI 2024): Mistral's layer with sliding-window and full-attention layers interleaved."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, layer_types, rms, stack, window


@family("ministral")
def ministral(c: Config) -> dict:
    """MinistralConfig / MinistralAttention, MinistralMLP: Mistral's bias-free layer; 8 KV heads and a context of
    4096 × 32 by default; head_dim must be stated (MinistralAttention reads config.head_dim, which defaults to
    None and fails to build). layer_types as stated, else every layer sliding when sliding_window (default
    4096) is set and full when it is null (MinistralConfig); untied unless tie_word_embeddings."""
    if c.data.get("head_dim") is None:
        raise c.fail("head_dim", "MinistralAttention needs head_dim (MinistralConfig's default, None, builds no layer)")
    size = window(c, 4096)
    types = layer_types(c, lambda i: "sliding_attention" if size is not None else "full_attention")
    full = attention(c, kv_heads=8)
    ffn = gated(c)
    layers = [{"attention": {**full, "window": size} if t == "sliding_attention" and size else full, "ffn": ffn} for t in types]
    return {**common(c, tie=False, context_default=4096 * 32), **stack(layers), "norm": rms()}
