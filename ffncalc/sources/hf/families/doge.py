"""Doge (SmallDoge; transformers 5.23.0, models/doge): dynamic mask attention, a dense gated MLP or the cross-domain
mixture of experts, and learned scales on both residuals of every layer."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms

DOGE_MODULES = (
    (r"self_attn\.dt_proj$", "attn.dt_proj"),
    (r"^self_attn$", "attn.A"),
    (r"^(input_residual|post_attention_residual)$", "attn.residual_scales"),
    (r"mlp\.router_gate$", "ffn.router_gate"),
    (r"mlp\.down_embed$", "ffn.down_embed"),
    (r"mlp\.up_embed$", "ffn.up_embed"),
)


@family("doge", layer_modules=DOGE_MODULES)
def doge(c: Config) -> dict:
    """DogeConfig / DogeDecoderLayer: DogeAttention (q/k/v/o and dt_proj with attention_bias, default false; q_norm
    and k_norm RMSNorms over head_dim, one weight each; A, one scalar per KV head; num_key_value_heads defaults to
    num_attention_heads (default 8), head_dim to hidden_size // num_attention_heads; full rotary; the dynamic mask
    keeps keep_window_size keys (default 2048)), then DogeMLP (a gated MLP of intermediate_size, default 2048, with
    mlp_bias and hidden_act) or, with is_moe, DogeCDMoE (that MLP beside num_experts (default 16384) single-neuron
    experts, down_embed and up_embed rows, num_experts_per_tok (default 64) per token by product-key routing over
    router_gate). input_residual and post_attention_residual (hidden_size each) scale the residuals. RMSNorms before
    each sublayer and at the end; untied unless tie_word_embeddings. A sliding_window, which narrows the mask
    before the dynamic one, is not read."""
    if c.data.get("sliding_window") is not None:
        raise c.fail("sliding_window", "a sliding window under the dynamic mask is not counted")
    bias = c.bool("attention_bias", False)
    attn = attention(c, qkv_bias=bias)
    mixer = {
        "kind": "dynamic_mask",
        "n_heads": attn["n_heads"],
        "n_kv_heads": attn["n_kv_heads"],
        "head_dim": attn["head_dim"],
        "bias": bias,
        "keep_window": c.int("keep_window_size", 2048),
    }
    mlp = gated(c, width=c.int("intermediate_size", 2048), bias=c.bool("mlp_bias", False))
    if c.bool("is_moe", False):
        ffn = {
            "kind": "cdmoe",
            "d_ff": mlp["d_ff"],
            "n_experts": c.int("num_experts", 16384),
            "top_k": c.int("num_experts_per_tok", 64),
            "activation": mlp["activation"],
            "bias": mlp["bias"],
        }
    else:
        ffn = mlp
    return {**common(c, tie=False), "attention": mixer, "ffn": ffn, "norm": rms()}
