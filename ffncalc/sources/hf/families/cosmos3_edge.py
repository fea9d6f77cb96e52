"""Cosmos3 Edge (NVIDIA 2026): the language model of Cosmos3EdgeForConditionalGeneration, as cosmos3_edge_text."""

from __future__ import annotations

from ..config import Config, attention, common, family, rms


@family("cosmos3_edge_text", layer_modules=((r"mlp\.fc1$", "ffn.up"), (r"mlp\.fc2$", "ffn.down")))
def cosmos3_edge_text(c: Config) -> dict:
    """Cosmos3EdgeTextConfig / Cosmos3EdgeTextDecoderLayer: Llama's pre-norm layer (input_layernorm and
    post_attention_layernorm, RMSNorms, a final norm), Cosmos3EdgeTextAttention with attention_bias on q/k/v/o (default
    false), num_key_value_heads key-value heads (default 8) of head_dim (default 128), multimodal rotary positions (no
    multiply-adds); Cosmos3EdgeTextMLP, fc1 → hidden_act (relu2: max(0, x)²) → fc2 without a gate, mlp_bias on both
    (default false); untied unless tie_word_embeddings."""
    bias = c.bool("attention_bias", False)
    ffn = {
        "kind": "dense",
        "d_ff": c.int("intermediate_size"),
        "bias": c.bool("mlp_bias", False),
        "activation": c.activation("hidden_act", "relu2"),
    }
    return {
        **common(c, tie=False, context_default=131072),
        "attention": attention(c, qkv_bias=bias, o_bias=bias, head_dim=128, kv_heads=8),
        "ffn": ffn,
        "norm": rms(),
    }
