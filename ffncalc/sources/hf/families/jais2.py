"""Jais 2 (Inception, MBZUAI 2025): LayerNorm, biases throughout and a ReLU² MLP."""

from __future__ import annotations

from ..config import Config, attention, common, family


@family("jais2")
def jais2(c: Config) -> dict:
    """Jais2Config / Jais2DecoderLayer: two LayerNorms (with bias) a layer and a final one; attention_bias on
    q/k/v/o (default true), one KV head per query head by default; Jais2MLP up_proj, down_proj with mlp_bias
    (default true) and hidden_act (default relu2); a context of 8192 by default; untied unless
    tie_word_embeddings."""
    bias = c.bool("attention_bias", True)
    return {
        **common(c, tie=False, context_default=8192),
        "attention": attention(c, qkv_bias=bias, o_bias=bias),
        "ffn": {
            "kind": "dense",
            "d_ff": c.int("intermediate_size"),
            "bias": c.bool("mlp_bias", True),
            "activation": c.activation("hidden_act", "relu2"),
        },
        "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
    }
