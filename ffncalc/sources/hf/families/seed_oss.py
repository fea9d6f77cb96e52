"""Seed-OSS (ByteDance Seed 2025)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms


@family("seed_oss")
def seed_oss(c: Config) -> dict:
    """SeedOssConfig / SeedOssAttention, SeedOssMLP: q, k and v biased by attention_bias (default true), o by
    attention_out_bias (default false); mlp_bias on the three MLP projections (default false); head_dim
    defaults to 128 and num_key_value_heads to 8 (either null: hidden_size / heads, one per head, as
    SeedOssConfig.__post_init__ makes them); a context of 524288; untied by default."""
    attn = attention(
        c,
        head_dim=128 if "head_dim" not in c.data else None,
        kv_heads=8,
        qkv_bias=c.bool("attention_bias", True),
        o_bias=c.bool("attention_out_bias", False),
    )
    return {
        **common(c, tie=False, context_default=524288),
        "attention": attn,
        "ffn": gated(c, bias=c.bool("mlp_bias", False)),
        "norm": rms(),
    }
