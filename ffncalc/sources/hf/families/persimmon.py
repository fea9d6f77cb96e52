"""Persimmon (Adept 2023): fused biased query_key_value, LayerNorm on each head's query and key, relu² MLP."""

from __future__ import annotations

from ..config import Config, common, family


@family(
    "persimmon",
    layer_modules=(
        (r"query_key_value$", "attn.q+k+v"),
        (r"self_attn\.dense$", "attn.o"),
        (r"q_layernorm$", "attn.q_norm"),
        (r"k_layernorm$", "attn.k_norm"),
        (r"mlp\.dense_h_to_4h$", "ffn.up"),
        (r"mlp\.dense_4h_to_h$", "ffn.down"),
    ),
    top_modules=((r"final_layernorm$", "final_norm"),),
)
def persimmon(c: Config) -> dict:
    """PersimmonConfig / PersimmonAttention, PersimmonMLP: query_key_value (3·hidden, all heads, biased) and
    dense biased; with qk_layernorm (default true) q_layernorm and k_layernorm, LayerNorms over head_dim shared
    by every head; dense_h_to_4h/dense_4h_to_h biased, hidden_act relu2; LayerNorm before each sublayer and at
    the end; partial_rotary_factor 0.5 unless stated; untied by default. num_key_value_heads is not read."""
    heads = c.int("num_attention_heads", 64)
    d = c.int("hidden_size", 4096)
    return {
        **common(c, tie=False, context_default=16384),
        "attention": {
            "n_heads": heads,
            "qkv_bias": True,
            "o_bias": True,
            **({"qk_norm": "head"} if c.bool("qk_layernorm", True) else {}),
            "rotary_dim": int(d // heads * c.rope_fraction(0.5)),
        },
        "ffn": {
            "kind": "dense",
            "d_ff": c.int("intermediate_size", 16384),
            "bias": True,
            "activation": c.activation("hidden_act", "relu2"),
        },
        "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
    }
