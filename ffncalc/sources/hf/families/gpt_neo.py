"""GPT-Neo (Black et al. 2021): GPT-2's layout with unbiased q/k/v, layers alternating global and local attention."""

from __future__ import annotations

from ..config import Config, family


def _key(c: Config, name: str, alias: str) -> str:
    """GPTNeoConfig.attribute_map: its own name, or the common alias."""
    return name if c.has(name) or not c.has(alias) else alias


@family(
    "gpt_neo",
    layer_modules=(
        (r"attn\.attention\.out_proj$", "attn.o"),
        (r"mlp\.c_fc$", "ffn.up"),
        (r"mlp\.c_proj$", "ffn.down"),
        (r"ln_[12]$", "norms"),
    ),
    top_modules=((r"wte$", "embed"), (r"wpe$", "pos_embed"), (r"ln_f$", "final_norm")),
)
def gpt_neo(c: Config) -> dict:
    """GPTNeoConfig / GPTNeoSelfAttention, GPTNeoMLP: learned positions; q/k/v without biases, out_proj with;
    c_fc/c_proj biased, intermediate_size defaulting to 4·d; LayerNorm; lm_head tied by default. Local layers
    (attention_types) mask keys beyond window_size but hold the same parameters as global ones."""
    d = c.int("hidden_size")
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": d,
        "n_layers": c.int(_key(c, "num_layers", "num_hidden_layers")),
        "context_length": c.int("max_position_embeddings", 2048),
        "positions": "learned",
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "attention": {"n_heads": c.int(_key(c, "num_heads", "num_attention_heads")), "qkv_bias": False, "o_bias": True},
        "ffn": {
            "kind": "dense",
            "d_ff": c.int("intermediate_size", 4 * d),
            "bias": True,
            "activation": c.activation("activation_function", "gelu_new"),
        },
        "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
    }
