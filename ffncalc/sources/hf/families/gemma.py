"""Gemma and Gemma 2 (Gemma Team 2024)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms


@family("gemma")
def gemma(c: Config) -> dict:
    """GemmaConfig / GemmaMLP: head_dim defaults to 256, GeGLU with the tanh GELU (a legacy hidden_act
    "gelu" is read as gelu_pytorch_tanh, as GemmaConfig does), tied embeddings; RMSNorm scales by 1 + w."""
    bias = c.bool("attention_bias", False)
    ffn = gated(c, act_default="gelu_pytorch_tanh")
    if c.data.get("hidden_act") == "gelu":
        ffn["activation"] = "gelu_tanh"
    return {**common(c, tie=True), "attention": attention(c, head_dim=256, qkv_bias=bias, o_bias=bias),
            "ffn": ffn, "norm": rms()}


@family("gemma2")
def gemma2(c: Config) -> dict:
    """Gemma2Config / Gemma2DecoderLayer: four RMSNorms per layer, one before and one after each sublayer;
    GeGLU from hidden_activation; head_dim defaults to 256; tied embeddings."""
    bias = c.bool("attention_bias", False)
    return {**common(c, tie=True), "attention": attention(c, head_dim=256, qkv_bias=bias, o_bias=bias),
            "ffn": gated(c, act_key="hidden_activation", act_default="gelu_pytorch_tanh"), "norm": rms(per_layer=4)}
