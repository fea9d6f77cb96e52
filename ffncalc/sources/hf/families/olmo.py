"""OLMo 2 (Team OLMo 2024)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms


@family("olmo2")
def olmo2(c: Config) -> dict:
    """Olmo2Config / Olmo2DecoderLayer: RMSNorms after attention and after the MLP, none before;
    q_norm and k_norm over all heads' width; attention_bias on q/k/v/o (default false)."""
    bias = c.bool("attention_bias", False)
    return {
        **common(c, tie=False),
        "attention": attention(c, qkv_bias=bias, o_bias=bias, qk_norm="full"),
        "ffn": gated(c),
        "norm": rms(placement="post"),
    }
