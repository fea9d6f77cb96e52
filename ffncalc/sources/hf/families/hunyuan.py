"""Hunyuan dense models (Tencent 2025)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms


@family("hunyuan_v1_dense",
        layer_modules=((r"query_layernorm$", "attn.q_norm"), (r"key_layernorm$", "attn.k_norm")))
def hunyuan_v1_dense(c: Config) -> dict:
    """HunYuanDenseV1Config / HunYuanDenseV1Attention: an RMSNorm over head_dim shared by every query head
    and one by every key head (query_layernorm, key_layernorm, built and applied whatever use_qk_norm says);
    attention_bias on q/k/v/o (default false); HunYuanDenseV1MLP has no bias whatever mlp_bias says.
    head_dim must be stated: the config leaves it None and the attention reads it as it is."""
    bias = c.bool("attention_bias", False)
    attn = attention(c, qkv_bias=bias, o_bias=bias, qk_norm="head")
    attn["head_dim"] = c.int("head_dim")
    return {**common(c, tie=False), "attention": attn, "ffn": gated(c), "norm": rms()}
