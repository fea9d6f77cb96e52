"""EuroBERT (Boizard et al. 2025): Llama's layers read as an encoder, every query meeting every key."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms


@family("eurobert")
def eurobert(c: Config) -> dict:
    """EuroBertConfig / EuroBertForMaskedLM: LlamaModel's layout with bidirectional attention
    (EuroBertAttention.is_causal false): RMSNorms before each sublayer and at the end, q/k/v/o with biases where
    attention_bias (default false), num_key_value_heads (default 12) KV heads, head_dim 64, a SwiGLU MLP of
    intermediate_size (default 3072) with biases where mlp_bias (default false), rotary positions; lm_head over the
    vocabulary (128256), untied unless tie_word_embeddings (default false). No prediction head: the MLM logits are
    lm_head's."""
    bias = c.bool("attention_bias", False)
    return {
        **common(c, tie=False, context_default=8192),
        "mask": "bidirectional",
        "attention": attention(c, qkv_bias=bias, o_bias=bias),
        "ffn": gated(c, bias=c.bool("mlp_bias", False)),
        "norm": rms(),
    }
