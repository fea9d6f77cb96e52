"""Chameleon's language model (Chameleon Team 2024, "Chameleon: Mixed-Modal Early-Fusion Foundation Models"; transformers'
ChameleonModel): Llama's layers with a LayerNorm over each head's queries and keys, its language model's keys at the
top of its config (no text_config); its VQ-VAE image tokenizer is the wrapper's (towers/vqvae.py)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms


@family("chameleon")
def chameleon(c: Config) -> dict:
    """ChameleonConfig / ChameleonDecoderLayer, ChameleonAttention, ChameleonMLP: q, k, v and o of
    num_attention_heads heads of hidden_size / heads (which must divide it, as ChameleonAttention raises),
    num_key_value_heads K/V heads, attention_bias on all four; q_norm and k_norm ChameleonLayerNorms of shape (heads,
    head_dim) and (kv_heads, head_dim): statistics over each head, a weight and a bias of its own in every head; a
    SwiGLU of intermediate_size with mlp_bias; ChameleonRMSNorms before each sublayer, or with swin_norm
    (ChameleonSwinDecoderLayer) on each sublayer's output before its residual add; a final RMSNorm; the head untied
    unless tie_word_embeddings."""
    d, heads = c.int("hidden_size"), c.int("num_attention_heads")
    if d % heads:
        raise c.fail("num_attention_heads", f"{heads} heads do not divide hidden_size {d}")
    bias = c.bool("attention_bias", False)
    attn = {**attention(c, qkv_bias=bias, o_bias=bias, qk_norm="each_head"), "qk_layernorm": True}
    return {
        **common(c, tie=False),
        "attention": attn,
        "ffn": gated(c, bias=c.bool("mlp_bias", False)),
        "norm": rms(placement="post" if c.bool("swin_norm", False) else "pre"),
    }
