"""IQuest-Coder-V1 (IQuest Lab 2025): LlamaForCausalLM under its own configuration class."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms


@family("iquestcoder")
def iquestcoder(c: Config) -> dict:
    """IQuestCoderConfig / LlamaForCausalLM: Llama's layer with IQuestCoderConfig's defaults: head_dim 128 (null:
    hidden_size / heads), 8 KV heads, a context of 131072; attention_bias and mlp_bias default false;
    untied unless tie_word_embeddings."""
    bias = c.bool("attention_bias", False)
    attn = attention(c, head_dim=128 if "head_dim" not in c.data else None, kv_heads=8, qkv_bias=bias, o_bias=bias)
    return {
        **common(c, tie=False, context_default=131072),
        "attention": attn,
        "ffn": gated(c, bias=c.bool("mlp_bias", False)),
        "norm": rms(),
    }
