"""Falcon (Almazrouei et al. 2023): one fused query_key_value, multi-query or grouped K/V heads, parallel
attention and MLP; RefinedWeb models with ALiBi."""

from __future__ import annotations

from ..config import Config, family


def _flag(c: Config, key: str, default: bool) -> bool:
    """A FalconConfig flag: an explicit null reads as false in FalconModel's ``if config.…`` tests."""
    return False if key in c.data and c.data[key] is None else c.bool(key, default)


@family(
    "falcon",
    layer_modules=(
        (r"query_key_value$", "attn.q+k+v"),
        (r"self_attention\.dense$", "attn.o"),
        (r"mlp\.dense_h_to_4h$", "ffn.up"),
        (r"mlp\.dense_4h_to_h$", "ffn.down"),
        (r"ln_(attn|mlp)$", "norms"),
    ),
    top_modules=((r"word_embeddings$", "embed"), (r"ln_f$", "final_norm")),
)
def falcon(c: Config) -> dict:
    """FalconConfig / FalconDecoderLayer: query_key_value holds heads + 2·kv heads (new_decoder_architecture:
    num_kv_heads; else multi_query, default true: one; else all heads); query_key_value, dense and the MLP
    biased by bias (default false); parallel attention and MLP (parallel_attn, default true, or
    new_decoder_architecture) under one LayerNorm, or two (ln_attn, ln_mlp) with num_ln_in_parallel_attn 2,
    the new architecture's default; sequential layers have two; ALiBi (alibi) or rotary over the whole head;
    lm_head tied by default."""
    d = c.int("n_embed") if c.has("n_embed") else c.int("hidden_size")  # FalconConfig: legacy n_embed wins
    heads = c.int("num_attention_heads")
    new = _flag(c, "new_decoder_architecture", False)
    if new:
        kv = c.int("num_kv_heads", heads)
    else:
        kv = 1 if _flag(c, "multi_query", True) else heads
    parallel_attn = _flag(c, "parallel_attn", True)
    norms = c.int("num_ln_in_parallel_attn", 2 if new else None)  # FalconDecoderLayer sets 2 for the new one
    bias = _flag(c, "bias", False)
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": d,
        "n_layers": c.int("num_hidden_layers"),
        "context_length": c.int("max_position_embeddings", 2048),
        "positions": "alibi" if _flag(c, "alibi", False) else "rotary",
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "attention": {"n_heads": heads, "n_kv_heads": kv, "qkv_bias": bias, "o_bias": bias},
        "ffn": {
            "kind": "dense",
            "d_ff": c.int("ffn_hidden_size", 4 * d),
            "bias": bias,
            "activation": c.activation("activation", "gelu"),
        },
        # input_layernorm and post_attention_layernorm when sequential; ln_attn and ln_mlp, or input_layernorm alone
        "norm": {"kind": "layernorm", "per_layer": 2 if not parallel_attn or norms == 2 else 1, "final": True},
        "parallel": parallel_attn or new,  # FalconDecoderLayer.forward adds the MLP to attention for either
    }
