"""GPT-2 (Radford et al. 2019): Conv1D layers with biases, learned positions."""

from __future__ import annotations

from ..config import Config, alias, family


@family(
    "gpt2",
    layer_modules=(
        (r"c_attn$", "attn.q+k+v"),
        (r"attn\.c_proj$", "attn.o"),
        (r"mlp\.c_fc$", "ffn.up"),
        (r"mlp\.c_proj$", "ffn.down"),
        (r"ln_[12]$", "norms"),
    ),
    top_modules=((r"wte$", "embed"), (r"wpe$", "pos_embed"), (r"ln_f$", "final_norm")),
)
def gpt2(c: Config) -> dict:
    """GPT2Config / GPT2LMHeadModel: learned positions, Conv1D layers with biases, LayerNorm, lm_head tied."""
    d = c.int("n_embd")
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": d,
        "n_layers": c.int("n_layer"),
        "context_length": c.int("n_positions", 1024),
        "positions": "learned",
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "attention": {"n_heads": c.int("n_head"), "qkv_bias": True, "o_bias": True},
        "ffn": {
            "kind": "dense",
            "d_ff": c.int("n_inner", 4 * d),
            "bias": True,
            "activation": c.activation("activation_function", "gelu_new"),
        },
        "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
    }


# GPT-SW3 (AI Sweden) is GPT2LMHeadModel with GPT2Config: the same keys and defaults under its own name.
alias("gpt-sw3", of="gpt2")
