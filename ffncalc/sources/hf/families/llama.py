"""Llama 1-3 (Touvron et al. 2023; Grattafiori et al. 2024); Emu3's language model (Emu3TextModel: Llama's layers)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms


@family("llama", "emu3_text_model")
def llama(c: Config) -> dict:
    """LlamaConfig / LlamaAttention, LlamaMLP: attention_bias on q/k/v/o and mlp_bias (both default false);
    head_dim defaults to hidden_size / heads; untied unless tie_word_embeddings (Llama 3.2 1B/3B)."""
    bias = c.bool("attention_bias", False)
    return {
        **common(c, tie=False),
        "attention": attention(c, qkv_bias=bias, o_bias=bias),
        "ffn": gated(c, bias=c.bool("mlp_bias", False)),
        "norm": rms(),
    }
