"""Molmo2's language model (molmo2_text, Ai2 2025): Qwen3-like layers whose query and key norms run per head or over
the whole projection, and whose RMSNorms run before or after each sublayer."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms

_QK_NORMS = {"qwen3": "head", "olmo": "full"}  # Molmo2Attention: q_norm and k_norm of head_dim, or of all heads' width


@family("molmo2_text")
def molmo2_text(c: Config) -> dict:
    """Molmo2TextConfig / Molmo2DecoderLayer: q_proj, k_proj and
    v_proj with attention_bias (default false), o_proj never with one; head_dim defaults to 128; q_norm and k_norm
    RMSNorms over head_dim (qk_norm_type "qwen3", the default) or over the whole query and key projections ("olmo");
    a bias-free SwiGLU MLP of intermediate_size; input_layernorm and post_attention_layernorm before each sublayer, or
    on each sublayer's output before the residual add (norm_after); a final RMSNorm. Molmo2TextModel.embed_tokens
    holds vocab_size + additional_vocab_size rows (default 128: the image and frame tokens); lm_head
    (Molmo2ForConditionalGeneration) vocab_size rows, untied by default. rope_scaling_layers picks which layers rotate
    by the scaled table: no weights (transformers/models/molmo2/modeling_molmo2.py)."""
    kind = c.data.get("qk_norm_type", "qwen3")
    if kind not in _QK_NORMS:
        raise c.fail("qk_norm_type", f"expected 'qwen3' or 'olmo', got {kind!r}")
    vocab, rows = c.int("vocab_size"), c.int("vocab_size") + c.int("additional_vocab_size", 128, positive=False)
    return {
        **common(c, tie=False),
        "attention": attention(c, head_dim=128, qkv_bias=c.bool("attention_bias", False), o_bias=False, qk_norm=_QK_NORMS[kind]),
        "ffn": gated(c),
        "norm": rms(placement="post") if c.bool("norm_after", False) else rms(),
        **({"embedding": {"vocab_size": rows}} if rows != vocab else {}),
    }
