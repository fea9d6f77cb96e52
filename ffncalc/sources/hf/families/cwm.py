"""CWM, Code World Model (Meta FAIR 2025): Llama 3's layer with sliding-window layers between full ones."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, layer_types, rms, stack, window


@family("cwm")
def cwm(c: Config) -> dict:
    """CwmConfig / CwmAttention, CwmMLP: Llama's layer with no attention bias, mlp_bias (default false) on
    gate/up/down; head_dim 128 when absent (null: hidden_size / heads), 8 KV heads when absent (null: one per
    query head); layer_types as stated, else every fourth layer full from the first and the others sliding
    (CwmConfig), over sliding_window (default 8192; null or 0: no window); a context of 131072 by default;
    untied unless tie_word_embeddings."""
    size = window(c, 8192) if c.data.get("sliding_window", 8192) else None  # CwmConfig: 0 or null is no window
    types = layer_types(c, lambda i: "full_attention" if i % 4 == 0 else "sliding_attention")
    full = attention(c, head_dim=128 if "head_dim" not in c.data else None, kv_heads=8)
    ffn = gated(c, bias=c.bool("mlp_bias", False))
    layers = [{"attention": {**full, "window": size} if t == "sliding_attention" and size else full, "ffn": ffn} for t in types]
    return {**common(c, tie=False, context_default=131072), **stack(layers), "norm": rms()}
