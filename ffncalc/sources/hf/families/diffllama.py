"""DiffLlama (transformers 5.23.0, models/diffllama): Llama with differential attention (Ye et al. 2024,
"Differential Transformer", arXiv:2410.05258)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms


@family("diffllama", layer_modules=((r"^self_attn$", "attn.lambda"),))
def diffllama(c: Config) -> dict:
    """DiffLlamaConfig / DiffLlamaDecoderLayer: DiffLlamaAttention's q/k/v/o projections (attention_bias on all
    four, default false), four learned vectors of head_dim (lambda_q1, lambda_k1, lambda_q2, lambda_k2: Parameters
    of the attention module itself) and a weightless RMSNorm over each head pair's 2·head_dim; num_key_value_heads
    defaults to num_attention_heads and must be even, head_dim to hidden_size // num_attention_heads. DiffLlamaMLP:
    a bias-free gated MLP of intermediate_size (default 8192) with hidden_act (default silu). RMSNorms before each
    sublayer and at the end; untied unless tie_word_embeddings."""
    bias = c.bool("attention_bias", False)
    attn = attention(c, qkv_bias=bias, o_bias=bias)
    return {
        **common(c, tie=False),
        "attention": {"kind": "diff_attention", **attn},
        "ffn": gated(c, width=c.int("intermediate_size", 8192)),
        "norm": rms(),
    }
