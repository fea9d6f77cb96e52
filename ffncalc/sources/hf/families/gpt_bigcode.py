"""GPT-BigCode: SantaCoder and StarCoder (Allal et al. 2023; Li et al. 2023), GPT-2 with multi-query attention."""

from __future__ import annotations

from ..config import Config, family


def _key(c: Config, name: str, alias: str) -> str:
    """GPTBigCodeConfig.attribute_map: the GPT-2 name, or its common alias."""
    return name if c.has(name) or not c.has(alias) else alias


@family(
    "gpt_bigcode",
    layer_modules=(
        (r"c_attn$", "attn.q+k+v"),
        (r"attn\.c_proj$", "attn.o"),
        (r"mlp\.c_fc$", "ffn.up"),
        (r"mlp\.c_proj$", "ffn.down"),
        (r"ln_[12]$", "norms"),
    ),
    top_modules=((r"wte$", "embed"), (r"wpe$", "pos_embed"), (r"ln_f$", "final_norm")),
)
def gpt_bigcode(c: Config) -> dict:
    """GPTBigCodeConfig / GPTBigCodeForCausalLM: learned positions; one fused c_attn of d + 2·kv·head_dim
    outputs, one K/V head with multi_query (default true); c_attn, c_proj, c_fc biased; LayerNorm; n_inner
    defaults to 4·d; lm_head tied by default."""
    if c.bool("add_cross_attention", False):  # GPTBigCodeBlock: a cross-attention and its LayerNorm per layer
        raise c.fail("add_cross_attention", "cross-attention layers have no ffncalc spec field")
    d = c.int(_key(c, "n_embd", "hidden_size"))
    heads = c.int(_key(c, "n_head", "num_attention_heads"))
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": d,
        "n_layers": c.int(_key(c, "n_layer", "num_hidden_layers")),
        "context_length": c.int(_key(c, "n_positions", "max_position_embeddings"), 1024),
        "positions": "learned",
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "attention": {"n_heads": heads, "n_kv_heads": 1 if c.bool("multi_query", True) else heads, "qkv_bias": True, "o_bias": True},
        "ffn": {
            "kind": "dense",
            "d_ff": c.int("n_inner", 4 * d),
            "bias": True,
            "activation": c.activation("activation_function", "gelu_pytorch_tanh"),
        },
        "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
    }
