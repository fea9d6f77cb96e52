"""nanochat (Karpathy 2025): a small GPT with RMSNorms without weights, a query and key norm after the
rotation, and a ReLU² MLP."""

from __future__ import annotations

from ..config import Config, attention, common, family


@family("nanochat", layer_modules=((r"mlp\.fc1$", "ffn.up"), (r"mlp\.fc2$", "ffn.down")))
def nanochat(c: Config) -> dict:
    """NanoChatConfig / NanoChatDecoderLayer: every NanoChatRMSNorm has no weight (the layer's two, q_norm and
    k_norm over head_dim after the rotation, and the final norm, which also normalises the embeddings before
    the first layer); attention_bias on q/k/v/o (default false), one KV head per query head by default;
    NanoChatMLP fc1, fc2 bias-free with hidden_act (default relu2); untied unless tie_word_embeddings."""
    bias = c.bool("attention_bias", False)
    return {
        **common(c, tie=False),
        "embedding_norm": True,
        "attention": attention(c, qkv_bias=bias, o_bias=bias, qk_norm="head"),
        "ffn": {"kind": "dense", "d_ff": c.int("intermediate_size"), "bias": False, "activation": c.activation("hidden_act", "relu2")},
        "norm": {"kind": "rmsnorm", "per_layer": 2, "affine": False, "final": True},
    }
