"""SmolLM3 (Hugging Face 2025)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms


@family("smollm3")
def smollm3(c: Config) -> dict:
    """SmolLM3Config / SmolLM3Attention, SmolLM3MLP: Llama's shapes; num_key_value_heads defaults to 4
    (null: one per head), tie_word_embeddings to true, max_position_embeddings to 32768; attention_bias on
    q/k/v/o and mlp_bias (both default false). The no-RoPE layers (no_rope_layers) skip the rotation and
    hold the same parameters."""
    bias = c.bool("attention_bias", False)
    attn = attention(c, qkv_bias=bias, o_bias=bias)
    attn["n_kv_heads"] = c.int("num_key_value_heads", 4 if "num_key_value_heads" not in c.data else attn["n_heads"])
    return {**common(c, tie=True, context_default=32768), "attention": attn,
            "ffn": gated(c, bias=c.bool("mlp_bias", False)), "norm": rms()}
