"""Arcee AFM (Arcee AI 2025): Llama's layer with a two-layer squared-ReLU MLP."""

from __future__ import annotations

from ..config import Config, attention, common, family, rms


@family("arcee")
def arcee(c: Config) -> dict:
    """ArceeConfig / ArceeAttention, ArceeMLP: down(act(up x)) with no gate, hidden_act defaulting to relu2
    (squared ReLU), mlp_bias on up and down (default false); Llama's attention with attention_bias on q/k/v/o
    (default false); head_dim a stated head_dim or hidden_size / heads; one KV head per query head when
    num_key_value_heads is absent or null; max_position_embeddings defaults to 4096; untied by default."""
    bias = c.bool("attention_bias", False)
    ffn = {
        "kind": "dense",
        "d_ff": c.int("intermediate_size"),
        "activation": c.activation("hidden_act", "relu2"),
        "bias": c.bool("mlp_bias", False),
    }
    return {
        **common(c, tie=False, context_default=4096),
        "attention": attention(c, qkv_bias=bias, o_bias=bias),
        "ffn": ffn,
        "norm": rms(),
    }
