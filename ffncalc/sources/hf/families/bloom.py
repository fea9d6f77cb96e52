"""BLOOM (BigScience 2022): ALiBi, a LayerNorm straight after the embeddings, fused query_key_value."""

from __future__ import annotations

from ..config import Config, family


def _key(c: Config, name: str, alias: str) -> str:
    """BloomConfig.attribute_map: its own name, or the common alias."""
    return name if c.has(name) or not c.has(alias) else alias


@family(
    "bloom",
    layer_modules=(
        (r"query_key_value$", "attn.q+k+v"),
        (r"self_attention\.dense$", "attn.o"),
        (r"mlp\.dense_h_to_4h$", "ffn.up"),
        (r"mlp\.dense_4h_to_h$", "ffn.down"),
    ),
    top_modules=((r"word_embeddings_layernorm$", "embed_norm"), (r"word_embeddings$", "embed"), (r"ln_f$", "final_norm")),
)
def bloom(c: Config) -> dict:
    """BloomConfig / BloomModel: word_embeddings_layernorm after the embeddings; query_key_value and dense
    biased; an MLP of 4·d with the tanh GELU (BloomGelu), biased; LayerNorm before each sublayer and at the
    end; ALiBi, no position table; lm_head tied by default. apply_residual_connection_post_layernorm only
    changes which tensor the residual carries."""
    d = c.int("n_embed") if c.has("n_embed") else c.int("hidden_size")  # BloomConfig: legacy n_embed wins
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": d,
        "n_layers": c.int(_key(c, "n_layer", "num_hidden_layers")),
        "context_length": 2048,  # ALiBi has no table and BloomConfig no length key: BLOOM's training length
        "positions": "alibi",
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "embedding_norm": True,
        "attention": {"n_heads": c.int(_key(c, "n_head", "num_attention_heads")), "qkv_bias": True, "o_bias": True},
        # BloomMLP: dense_h_to_4h is 4·hidden_size whatever n_inner says
        "ffn": {"kind": "dense", "d_ff": 4 * d, "bias": True, "activation": "gelu_tanh"},
        "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
    }
