"""GPT-J (Wang and Komatsuzaki 2021): parallel attention and MLP under one LayerNorm, partial rotary."""

from __future__ import annotations

from ..config import Config, family


def _key(c: Config, name: str, alias: str) -> str:
    """GPTJConfig.attribute_map: the GPT-2 name, or its common alias."""
    return name if c.has(name) or not c.has(alias) else alias


@family(
    "gptj",
    layer_modules=((r"attn\.out_proj$", "attn.o"), (r"mlp\.fc_in$", "ffn.up"), (r"mlp\.fc_out$", "ffn.down"), (r"ln_1$", "norms")),
    top_modules=((r"wte$", "embed"), (r"ln_f$", "final_norm")),
)
def gptj(c: Config) -> dict:
    """GPTJConfig / GPTJBlock: one LayerNorm per layer shared by attention and MLP in parallel; q/k/v/out_proj
    without biases, fc_in/fc_out with; rotary_dim features of each head rotated (default 64);
    lm_head with a bias, untied by default."""
    d = c.int(_key(c, "n_embd", "hidden_size"))
    heads = c.int(_key(c, "n_head", "num_attention_heads"))
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": d,
        "n_layers": c.int(_key(c, "n_layer", "num_hidden_layers")),
        "context_length": c.int(_key(c, "n_positions", "max_position_embeddings"), 2048),
        "positions": "rotary",
        "tie_embeddings": c.bool("tie_word_embeddings", False),
        "attention": {"n_heads": heads, "qkv_bias": False, "o_bias": False, "rotary_dim": c.int("rotary_dim", 64)},
        "ffn": {
            "kind": "dense",
            "d_ff": c.int("n_inner", 4 * d),
            "bias": True,
            "activation": c.activation("activation_function", "gelu_new"),
        },
        "norm": {"kind": "layernorm", "per_layer": 1, "final": True},
        "parallel": True,
        "lm_head_bias": True,  # GPTJForCausalLM.lm_head = nn.Linear(n_embd, vocab_size)
    }
