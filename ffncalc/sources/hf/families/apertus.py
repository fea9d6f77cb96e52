"""Apertus (Swiss AI 2025): Llama's attention with a query and key norm per head, and a two-layer MLP with the
learned xIELU activation."""

from __future__ import annotations

from ..config import Config, attention, common, family, rms


@family("apertus", layer_modules=((r"mlp\.act_fn$", "ffn.act"), (r"(attention|feedforward)_layernorm$", "norms")))
def apertus(c: Config) -> dict:
    """ApertusConfig / ApertusDecoderLayer: attention_layernorm and feedforward_layernorm before the sublayers;
    ApertusAttention q/k/v/o with attention_bias (default false), q_norm and k_norm RMSNorms over head_dim shared
    by the heads, one KV head per query head by default; ApertusMLP up_proj, down_proj without bias (mlp_bias is
    not read) and hidden_act (default xielu: XIELUActivation, two learned scalars alpha_p and alpha_n in every
    layer, beta and eps buffers); a context of 65536 by default; untied unless tie_word_embeddings."""
    bias = c.bool("attention_bias", False)
    act = "xielu" if (c.data.get("hidden_act") or "xielu") == "xielu" else c.activation("hidden_act", "xielu")
    return {
        **common(c, tie=False, context_default=65536),
        "attention": attention(c, qkv_bias=bias, o_bias=bias, qk_norm="head"),
        "ffn": {"kind": "dense", "d_ff": c.int("intermediate_size"), "activation": act, "bias": False},
        "norm": rms(),
    }
