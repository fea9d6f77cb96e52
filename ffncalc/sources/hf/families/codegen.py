"""CodeGen (Nijkamp et al. 2022): GPT-J's block with one fused, unbiased qkv_proj."""

from __future__ import annotations

from ..config import Config, family


@family(
    "codegen",
    layer_modules=(
        (r"attn\.qkv_proj$", "attn.q+k+v"),
        (r"attn\.out_proj$", "attn.o"),
        (r"mlp\.fc_in$", "ffn.up"),
        (r"mlp\.fc_out$", "ffn.down"),
        (r"ln_1$", "norms"),
    ),
    top_modules=((r"wte$", "embed"), (r"ln_f$", "final_norm")),
)
def codegen(c: Config) -> dict:
    """CodeGenConfig / CodeGenBlock, CodeGenAttention, CodeGenMLP: one LayerNorm (ln_1) shared by attention and
    MLP in parallel; qkv_proj (3·n_embd) and out_proj without biases; fc_in/fc_out with, n_inner defaulting to
    4·n_embd; rotary_dim features of each head rotated (default 64); lm_head with a bias, untied by default
    (tie_word_embeddings false)."""
    d = c.int("n_embd", 4096)
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size", 50400),
        "d_model": d,
        "n_layers": c.int("n_layer", 28),
        "context_length": c.int("n_positions", 2048),
        "positions": "rotary",
        "tie_embeddings": c.bool("tie_word_embeddings", False),
        "attention": {"n_heads": c.int("n_head", 16), "qkv_bias": False, "o_bias": False, "rotary_dim": c.int("rotary_dim", 64)},
        "ffn": {
            "kind": "dense",
            "d_ff": c.int("n_inner", 4 * d),
            "bias": True,
            "activation": c.activation("activation_function", "gelu_new"),
        },
        "norm": {"kind": "layernorm", "per_layer": 1, "final": True},
        "parallel": True,
        "lm_head_bias": True,  # CodeGenForCausalLM.lm_head = nn.Linear(n_embd, vocab_size)
    }
