"""HunyuanOCR's language model (hunyuan_vl_text, Tencent 2025): Hunyuan's dense layers with XD-RoPE positions."""

from __future__ import annotations

from ..config import Config, common, family, gated, rms
from .hunyuan import HUNYUAN_MODULES, _hunyuan_attention


@family("hunyuan_vl_text", layer_modules=HUNYUAN_MODULES)
def hunyuan_vl_text(c: Config) -> dict:
    """HunYuanVLTextConfig / HunYuanVLDenseV1DecoderLayer: HunYuanVLDenseV1Attention is Hunyuan's dense attention
    (q_proj, k_proj, v_proj and o_proj with attention_bias; query_layernorm and key_layernorm, RMSNorms over
    head_dim; head_dim must be stated: the config leaves it None and the attention's scaling reads it as it is);
    HunYuanVLMLP a bias-free SwiGLU MLP of intermediate_size; RMSNorms; the head tied by default
    (tie_word_embeddings true). Its rotary positions are XD-RoPE (rope_parameters.mrope_section: the head's
    frequencies split between the text, height, width and time positions): the same rotation of every query and key
    feature as a 1-D rotary table's."""
    return {**common(c, tie=True), "attention": _hunyuan_attention(c), "ffn": gated(c), "norm": rms()}
