"""InternLM3 (Shanghai AI Laboratory 2025)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms


@family("internlm3")
def internlm3(c: Config) -> dict:
    """InternLM3Config, built as LlamaForCausalLM: qkv_bias (alias of attention_bias) on q/k/v/o and bias
    (alias of mlp_bias) on the MLP, both default false; head_dim defaults to 128 and num_key_value_heads
    to 2 (either null: hidden_size / heads, one per head); max_position_embeddings defaults to 32768."""
    bias = c.bool("qkv_bias", c.bool("attention_bias", False))  # the alias, set after the field, wins
    attn = attention(c, head_dim=128 if "head_dim" not in c.data else None, qkv_bias=bias, o_bias=bias)
    attn["n_kv_heads"] = c.int("num_key_value_heads", 2 if "num_key_value_heads" not in c.data else attn["n_heads"])
    return {
        **common(c, tie=False, context_default=32768),
        "attention": attn,
        "ffn": gated(c, bias=c.bool("bias", c.bool("mlp_bias", False))),
        "norm": rms(),
    }
