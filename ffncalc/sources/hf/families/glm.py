"""GLM-4 (Team GLM 2024): glm (GLM-4-9B in transformers' native form, GLM-Edge) and glm4 (GLM-4-0414, with
norms after each sublayer too)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms

GLM_MODULES = ((r"mlp\.gate_up_proj$", "ffn.gate+up"),)


def _glm(c: Config, *, norms: int, ocr: bool = False) -> dict:
    """GlmAttention / Glm4Attention, GlmMLP / Glm4MLP: attention_bias (default true) on q, k and v, never on o;
    num_key_value_heads defaults to 2 and head_dim to 128 (the config classes); half of each head rotated unless
    partial_rotary_factor says otherwise (the config classes' default); one fused gate_up_proj and down_proj,
    no biases; untied by default; a context of 131072."""
    if ocr:  # GlmOcrTextAttention: q, k and v without biases, heads of hidden_size / num_attention_heads
        att = attention(c, qkv_bias=False, rotary=c.rope_fraction(0.5))
    else:
        att = attention(c, head_dim=128, kv_heads=2, qkv_bias=c.bool("attention_bias", True), rotary=c.rope_fraction(0.5))
    return {**common(c, tie=False, context_default=131072), "attention": att, "ffn": gated(c), "norm": rms(per_layer=norms)}


@family("glm", layer_modules=GLM_MODULES)
def glm(c: Config) -> dict:
    """GlmConfig / GlmDecoderLayer: an RMSNorm before attention and one before the MLP, and a final one."""
    return _glm(c, norms=2)


GLM4_MODULES = GLM_MODULES + ((r"(post_self_attn_layernorm|post_mlp_layernorm)$", "norms"),)


@family("glm4", "glm4v_text", "glm_ocr_text", layer_modules=GLM4_MODULES)
def glm4(c: Config) -> dict:
    """Glm4Config / Glm4DecoderLayer: four RMSNorms per layer, one before and one after each sublayer
    (input_layernorm, post_self_attn_layernorm; post_attention_layernorm, post_mlp_layernorm), and a final one. GLM-4V's
    language model (Glm4vTextConfig: GLM-4.1V, GLM-4.6V) is built the same, its rotary positions in three sections;
    GLM-OCR's (GlmOcrTextConfig) with its q, k and v projections unbiased and heads of head_dim where stated, else of
    hidden_size / num_attention_heads (GlmOcrTextAttention)."""
    return _glm(c, norms=4, ocr=c.model_type == "glm_ocr_text")
