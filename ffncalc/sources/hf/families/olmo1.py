"""OLMo 1 (Groeneveld et al. 2024) in transformers' native form (the "-hf" checkpoints, model_type olmo)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated


@family("olmo")
def olmo(c: Config) -> dict:
    """OlmoConfig / OlmoDecoderLayer, OlmoAttention, OlmoMLP: Llama's shapes with an OlmoLayerNorm that has no
    weight and no bias before each sublayer (input_layernorm, post_attention_layernorm) and at the end;
    attention_bias on q/k/v/o (default false); the MLP has no bias; head_dim a stated head_dim or hidden_size /
    heads; one KV head per query head when num_key_value_heads is absent or null; clip_qkv clamps q, k and v and
    adds no parameter; untied unless tie_word_embeddings (OLMo-1B ties); a context of 2048."""
    bias = c.bool("attention_bias", False)
    return {
        **common(c, tie=False),
        "attention": attention(c, qkv_bias=bias, o_bias=bias),
        "ffn": gated(c),
        "norm": {"kind": "layernorm", "affine": False, "bias": False, "per_layer": 2, "final": True},
    }
