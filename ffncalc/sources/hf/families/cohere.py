"""Command R, Aya 23 and Aya Expanse (Cohere): one bias-free LayerNorm per layer feeding attention and the
MLP in parallel."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated


@family("cohere")
def cohere(c: Config) -> dict:
    """CohereConfig / CohereDecoderLayer, CohereAttention, CohereMLP: input_layernorm only, a CohereLayerNorm
    with a weight and no bias (also the final norm); attention and the SwiGLU MLP read the same normed input
    and both add to the residual; attention_bias on q/k/v/o (default false); the MLP never has a bias; tied by
    default; head_dim is a stated head_dim or hidden_size / heads. use_qk_norm (default false) adds a
    CohereLayerNorm of shape (heads, head_dim) on queries and (kv_heads, head_dim) on keys: its own weights
    in every head."""
    bias = c.bool("attention_bias", False)
    return {
        **common(c, tie=True, context_default=8192),
        "attention": attention(c, qkv_bias=bias, o_bias=bias, qk_norm="each_head" if c.bool("use_qk_norm", False) else "none"),
        "ffn": gated(c),
        "norm": {"kind": "layernorm", "bias": False, "per_layer": 1, "final": True},
        "parallel": True,
    }
