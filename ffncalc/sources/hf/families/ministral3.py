"""Ministral 3 (Mistral AI 2025): Mistral's layer under its own model_type, the language model of a mistral3
wrapper or a standalone text model."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms, window


@family("ministral3")
def ministral3(c: Config) -> dict:
    """Ministral3Config / Ministral3Attention, Ministral3MLP: Mistral's bias-free layer with Ministral3Config's
    defaults: head_dim 128 (null: hidden_size / heads), 8 KV heads (null: one per query head), a context of
    262144, no sliding window unless sliding_window states one (it reads no layer_types); untied unless
    tie_word_embeddings. The llama_4_scaling_beta of rope_parameters scales the queries by position: no
    parameter, no matrix product."""
    attn = {**attention(c, head_dim=128 if "head_dim" not in c.data else None, kv_heads=8), "window": window(c, None)}
    return {**common(c, tie=False, context_default=262144), "attention": attn, "ffn": gated(c), "norm": rms()}
