"""Helium-1 (Kyutai)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms


@family("helium")
def helium(c: Config) -> dict:
    """HeliumConfig / HeliumAttention, HeliumMLP: attention_bias (default false) on q/k/v, never on o; mlp_bias
    (default false) on gate/up/down; num_key_value_heads defaults to 20 and head_dim to 128 (HeliumConfig);
    RMSNorm before each sublayer and a final one; untied by default. o_proj maps hidden_size to hidden_size
    (HeliumAttention), so the heads' width must be hidden_size."""
    d, heads = c.int("hidden_size"), c.int("num_attention_heads")
    att = attention(c, head_dim=128, qkv_bias=c.bool("attention_bias", False))
    att["n_kv_heads"] = c.int("num_key_value_heads", 20)
    if heads * att["head_dim"] != d:
        raise c.fail("head_dim", f"{heads} heads × {att['head_dim']} is not hidden_size {d}, the width HeliumAttention's o_proj takes")
    return {
        **common(c, tie=False, context_default=4096),
        "attention": att,
        "ffn": gated(c, bias=c.bool("mlp_bias", False)),
        "norm": rms(),
    }
