"""DBRX (Databricks 2024): a fine-grained mixture of 16 experts, 4 per token, with a fused qkv projection
and LayerNorms without bias."""

from __future__ import annotations

from ..config import ACTIVATIONS, Config, family


@family(
    "dbrx",
    layer_modules=(
        (r"attn\.Wqkv$", "attn.q+k+v"),
        (r"attn\.out_proj$", "attn.o"),
        (r"norm_[12]$", "norms"),
        (r"ffn\.router\.layer$", "ffn.router"),
        (r"ffn\.experts\b", "ffn.experts"),
    ),
    top_modules=((r"wte$", "embed"), (r"norm_f$", "final_norm")),
)
def dbrx(c: Config) -> dict:
    """DbrxConfig / DbrxBlock: norm_1, attention, norm_2 and the mixture (DbrxNormAttentionNorm, DbrxFFN); every
    LayerNorm has a weight and no bias. DbrxAttention: one fused Wqkv of d_model + 2·kv_n_heads·head_dim
    outputs and out_proj, both bias-free, head_dim = d_model / n_heads; attn_config.kv_n_heads defaults to 1
    (clip_qkv clamps values, no parameter). DbrxFFN: a bias-free router (router.layer) over
    ffn_config.moe_num_experts (default 4) SwiGLU experts of ffn_hidden_size (default 3584) held as three
    (experts·ffn_hidden_size, d_model) tensors w1, v1, w2, with the activation ffn_act_fn.name (default silu);
    moe_top_k (default 1) per token. Defaults: d_model 2048, 16 heads, 24 layers, max_seq_len 2048, vocab 32000;
    tie_word_embeddings must be false (DbrxConfig rejects it)."""
    attn = Config(c.data.get("attn_config") or {}, c.text, c.source)
    ffn = Config(c.data.get("ffn_config") or {}, c.text, c.source)
    if c.bool("tie_word_embeddings", False):
        raise c.fail("tie_word_embeddings", "DbrxConfig does not support tied embeddings")
    act = (ffn.data.get("ffn_act_fn") or {}).get("name", "silu")
    if act not in ACTIVATIONS:
        raise ffn.fail("ffn_act_fn", f"unknown activation {act!r} (known: {', '.join(sorted(ACTIVATIONS))})")
    heads = c.int("n_heads", 16)
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size", 32000),
        "d_model": c.int("d_model", 2048),
        "n_layers": c.int("n_layers", 24),
        "context_length": c.int("max_seq_len", 2048),
        "positions": "rotary",
        "tie_embeddings": False,
        "attention": {"n_heads": heads, "n_kv_heads": attn.int("kv_n_heads", 1)},
        "ffn": {
            "kind": "moe",
            "n_experts": ffn.int("moe_num_experts", 4),
            "top_k": ffn.int("moe_top_k", 1),
            "expert": {"kind": "gated", "d_ff": ffn.int("ffn_hidden_size", 3584), "activation": ACTIVATIONS[act], "bias": False},
        },
        "norm": {"kind": "layernorm", "bias": False, "per_layer": 2, "final": True},
    }
