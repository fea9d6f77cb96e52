"""GPT-NeoX and Pythia (Black et al. 2022): fused query_key_value, parallel residual."""

from __future__ import annotations

from ..config import Config, attention, common, family


@family(
    "gpt_neox",
    layer_modules=(
        (r"query_key_value$", "attn.q+k+v"),
        (r"attention\.dense$", "attn.o"),
        (r"mlp\.dense_h_to_4h$", "ffn.up"),
        (r"mlp\.dense_4h_to_h$", "ffn.down"),
    ),
    top_modules=((r"embed_in$", "embed"), (r"final_layer_norm$", "final_norm"), (r"embed_out$", "lm_head")),
)
def gpt_neox(c: Config) -> dict:
    """GPTNeoXConfig / GPTNeoXLayer: fused query_key_value and dense with attention_bias (default true),
    MLP always biased, LayerNorm, parallel residual by default, a quarter of each head rotated."""
    parallel = c.bool("use_parallel_residual", True)
    bias = c.bool("attention_bias", True)
    return {
        **common(c, tie=False),
        "attention": attention(c, qkv_bias=bias, o_bias=bias, rotary=c.rope_fraction(0.25, "rotary_pct")),
        "ffn": {"kind": "dense", "d_ff": c.int("intermediate_size"), "bias": True, "activation": c.activation("hidden_act", "gelu")},
        "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
        "parallel": parallel,
    }
