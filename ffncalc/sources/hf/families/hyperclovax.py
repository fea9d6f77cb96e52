"""HyperCLOVA X (NAVER Cloud 2025): Llama's layer with an RMSNorm after each sublayer as well, and muP-style
multipliers."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms


@family("hyperclovax", layer_modules=((r"post_norm[12]$", "norms"),))
def hyperclovax(c: Config) -> dict:
    """HyperCLOVAXConfig / HyperCLOVAXDecoderLayer: input_layernorm and post_attention_layernorm before the
    sublayers and, with use_post_norm (default true), post_norm1 and post_norm2 on their outputs before the
    residual add; attention_bias on q/k/v/o and mlp_bias on gate/up/down (both default false); head_dim
    defaults to hidden_size / heads, one KV head per query head; untied unless tie_word_embeddings. The
    embedding, residual, attention and logit multipliers scale activations and add no parameter."""
    bias = c.bool("attention_bias", False)
    return {
        **common(c, tie=False),
        "attention": attention(c, qkv_bias=bias, o_bias=bias),
        "ffn": gated(c, bias=c.bool("mlp_bias", False)),
        "norm": rms(per_layer=4 if c.bool("use_post_norm", True) else 2),
    }
