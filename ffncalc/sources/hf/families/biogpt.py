"""BioGPT (Luo et al. 2022): pre-LayerNorm decoder with learned positions offset by two rows, biases throughout."""

from __future__ import annotations

from ..config import Config, family


@family(
    "biogpt",
    layer_modules=(
        (r"self_attn\.out_proj$", "attn.o"),
        (r"fc1$", "ffn.up"),
        (r"fc2$", "ffn.down"),
        (r"(self_attn_layer_norm|final_layer_norm)$", "norms"),
    ),
    top_modules=((r"embed_positions$", "pos_embed"), (r"layer_norm$", "final_norm"), (r"output_projection$", "lm_head")),
)
def biogpt(c: Config) -> dict:
    """BioGptConfig / BioGptForCausalLM, BioGptDecoderLayer: q/k/v/out_proj and fc1/fc2 biased; LayerNorm
    before each sublayer (self_attn_layer_norm, final_layer_norm) and at the end (layer_norm); word embeddings
    scaled by √d (scale_embedding), no parameter; BioGptLearnedPositionalEmbedding has
    max_position_embeddings + 2 rows; output_projection tied by default."""
    d = c.int("hidden_size", 1024)
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size", 42384),
        "d_model": d,
        "n_layers": c.int("num_hidden_layers", 24),
        "context_length": c.int("max_position_embeddings", 1024),
        "positions": "learned",
        "position_offset": 2,
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "attention": {"n_heads": c.int("num_attention_heads", 16), "qkv_bias": True, "o_bias": True},
        "ffn": {
            "kind": "dense",
            "d_ff": c.int("intermediate_size", 4096),
            "bias": True,
            "activation": c.activation("hidden_act", "gelu"),
        },
        "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
    }
