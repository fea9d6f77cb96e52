"""GPT-1 (Radford et al. 2018): learned positions, Conv1D layers with biases, each LayerNorm after its residual add."""

from __future__ import annotations

from ..config import Config, family

# OpenAIGPT's ACT_FNS: its "gelu" is gelu_new, the tanh approximation.
AFN = {"gelu": "gelu_tanh", "relu": "relu", "silu": "silu", "swish": "silu"}


@family(
    "openai-gpt",
    layer_modules=(
        (r"c_attn$", "attn.q+k+v"),
        (r"attn\.c_proj$", "attn.o"),
        (r"mlp\.c_fc$", "ffn.up"),
        (r"mlp\.c_proj$", "ffn.down"),
        (r"ln_[12]$", "norms"),
    ),
    top_modules=((r"tokens_embed$", "embed"), (r"positions_embed$", "pos_embed")),
)
def openai_gpt(c: Config) -> dict:
    """OpenAIGPTConfig / OpenAIGPTLMHeadModel: every key has a default (vocab_size 40478, n_positions 512,
    n_embd 768, n_layer 12, n_head 12, afn gelu); Block computes n = ln_1(x + attn(x)), ln_2(n + mlp(n)):
    two LayerNorms per layer on the residual sums, none after the last layer; the MLP is 4·n_embd wide;
    lm_head tied."""
    d = c.int("n_embd", 768)
    afn = c.data.get("afn") or "gelu"
    if afn not in AFN:
        raise c.fail("afn", f"unknown activation {afn!r} (OpenAIGPT knows: {', '.join(AFN)})")
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size", 40478),
        "d_model": d,
        "n_layers": c.int("n_layer", 12),
        "context_length": c.int("n_positions", 512),
        "positions": "learned",
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "attention": {"n_heads": c.int("n_head", 12), "qkv_bias": True, "o_bias": True},
        "ffn": {"kind": "dense", "d_ff": 4 * d, "bias": True, "activation": AFN[afn]},
        "norm": {"kind": "layernorm", "per_layer": 2, "placement": "residual", "final": False},
    }
