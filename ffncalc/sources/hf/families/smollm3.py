"""SmolLM3 (Hugging Face 2025)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms, stack


@family("smollm3")
def smollm3(c: Config) -> dict:
    """SmolLM3Config / SmolLM3Attention, SmolLM3MLP: Llama's shapes; num_key_value_heads defaults to 4
    (null: one per head), tie_word_embeddings to true, max_position_embeddings to 32768; attention_bias on
    q/k/v/o and mlp_bias (both default false). The no-RoPE layers (no_rope_layers) skip the rotation and
    hold the same parameters: no_rope_layers as stated (1: rotary), or every no_rope_layer_interval-th layer
    (default 4th) without (SmolLM3Config.__post_init__)."""
    bias = c.bool("attention_bias", False)
    attn = attention(c, qkv_bias=bias, o_bias=bias)
    attn["n_kv_heads"] = c.int("num_key_value_heads", 4 if "num_key_value_heads" not in c.data else attn["n_heads"])
    n, interval = c.int("num_hidden_layers"), c.int("no_rope_layer_interval", 4)
    rope = c.int_list("no_rope_layers") or [int((i + 1) % interval != 0) for i in range(n)]
    ffn = gated(c, bias=c.bool("mlp_bias", False))
    layers = [{"attention": attn if rope[i] else {**attn, "rope": False}, "ffn": ffn} for i in range(n)]
    return {**common(c, tie=True, context_default=32768), **stack(layers), "norm": rms()}
