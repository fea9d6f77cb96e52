"""OPT (Zhang et al. 2022): learned positions offset by two rows, ReLU MLP, biases throughout."""

from __future__ import annotations

from ..config import Config, family


@family(
    "opt",
    layer_modules=(
        (r"self_attn\.out_proj$", "attn.o"),
        (r"fc1$", "ffn.up"),
        (r"fc2$", "ffn.down"),
        (r"(self_attn_layer_norm|final_layer_norm)$", "norms"),
    ),
    top_modules=(
        (r"embed_positions$", "pos_embed"),
        (r"final_layer_norm$", "final_norm"),
        (r"project_in$", "embed.project_in"),
        (r"project_out$", "embed.project_out"),
    ),
)
def opt(c: Config) -> dict:
    """OPTConfig / OPTForCausalLM: q/k/v/out_proj and fc1/fc2 biased by enable_bias (default true); two
    LayerNorms per layer, before the sublayers with do_layer_norm_before (default true), else each on the sum after
    its residual add (OPTDecoderLayer), their weights and biases present only with layer_norm_elementwise_affine
    (default true); a final LayerNorm unless _remove_final_layer_norm or do_layer_norm_before is false
    (OPTDecoder); the position table max_position_embeddings + 2 rows; lm_head tied by default. Where
    word_embed_proj_dim (default: hidden_size) differs, embed_tokens and lm_head are that wide, with project_in and
    project_out between them and the layers (OPT-350m)."""
    d = c.int("hidden_size")
    # OPTDecoder: embed_tokens vocab × e; project_in e -> d (no bias) after the lookup, before the positions (at d) are
    # added; project_out d -> e (no bias) after final_layer_norm, where there is one; OPTForCausalLM.lm_head e -> vocab
    proj = c.int("word_embed_proj_dim", d)
    before = c.bool("do_layer_norm_before", True)  # OPTDecoderLayer: false, each LayerNorm after its residual add
    bias = c.bool("enable_bias", True)
    affine = c.bool("layer_norm_elementwise_affine", True)
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": d,
        "n_layers": c.int("num_hidden_layers"),
        "context_length": c.int("max_position_embeddings", 2048),
        "positions": "learned",
        "position_offset": 2,  # OPTLearnedPositionalEmbedding: offset = 2, the table 2 rows longer
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "attention": {"n_heads": c.int("num_attention_heads"), "qkv_bias": bias, "o_bias": bias},
        "ffn": {"kind": "dense", "d_ff": c.int("ffn_dim"), "bias": bias, "activation": c.activation("activation_function", "relu")},
        "norm": {
            "kind": "layernorm",
            "per_layer": 2,
            "affine": affine,
            "bias": affine,
            **({} if before else {"placement": "residual"}),
            # OPTDecoder.final_layer_norm: only with do_layer_norm_before and not _remove_final_layer_norm
            "final": before and not c.bool("_remove_final_layer_norm", False),
        },
        **({"embedding": {"width": proj}} if proj != d else {}),
    }
