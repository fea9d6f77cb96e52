"""Nemotron-4 and Minitron (NVIDIA 2024): LayerNorm1P, a squared-ReLU MLP without a gate, partial rotary."""

from __future__ import annotations

from ..config import Config, attention, common, family


@family("nemotron")
def nemotron(c: Config) -> dict:
    """NemotronConfig / NemotronDecoderLayer, NemotronAttention, NemotronMLP: two NemotronLayerNorm1P per layer
    (an nn.LayerNorm with a bias whose weight scales as 1 + w: input_layernorm, post_attention_layernorm) and a
    final one; up_proj -> relu2 -> down_proj, mlp_bias on both (default false); attention_bias on q/k/v/o
    (default false); head_dim a stated head_dim or hidden_size / heads; partial_rotary_factor defaults to 0.5
    (NemotronConfig.__post_init__); untied unless tie_word_embeddings. num_key_value_heads must be stated:
    NemotronConfig leaves it None and NemotronAttention cannot be built without it."""
    bias = c.bool("attention_bias", False)
    attn = attention(c, qkv_bias=bias, o_bias=bias, rotary=c.rope_fraction(0.5))
    attn["n_kv_heads"] = c.int("num_key_value_heads")
    return {
        **common(c, tie=False, context_default=4096),
        "attention": attn,
        "ffn": {
            "kind": "dense",
            "d_ff": c.int("intermediate_size"),
            "bias": c.bool("mlp_bias", False),
            "activation": c.activation("hidden_act", "relu2"),
        },
        "norm": {"kind": "layernorm1p", "per_layer": 2, "final": True},
    }
