"""OPT (Zhang et al. 2022): learned positions offset by two rows, ReLU MLP, biases throughout."""

from __future__ import annotations

from ..config import Config, family


@family("opt",
        layer_modules=((r"self_attn\.out_proj$", "attn.o"), (r"fc1$", "ffn.up"), (r"fc2$", "ffn.down"),
                       (r"(self_attn_layer_norm|final_layer_norm)$", "norms")),
        top_modules=((r"embed_positions$", "pos_embed"), (r"final_layer_norm$", "final_norm")))
def opt(c: Config) -> dict:
    """OPTConfig / OPTForCausalLM: q/k/v/out_proj and fc1/fc2 biased by enable_bias (default true); two
    LayerNorms per layer before the sublayers (do_layer_norm_before, default true), their weights and biases
    present only with layer_norm_elementwise_affine (default true); a final LayerNorm unless
    _remove_final_layer_norm; the position table max_position_embeddings + 2 rows; lm_head tied by default."""
    d = c.int("hidden_size")
    proj = c.int("word_embed_proj_dim", d)
    if proj != d:  # OPTDecoder.project_in / project_out (OPT-350m): no spec field holds them
        raise c.fail("word_embed_proj_dim", f"{proj} differs from hidden_size {d}: OPT's project_in and project_out "
                                            "between embeddings and layers have no ffncalc spec field")
    if not c.bool("do_layer_norm_before", True):  # OPTDecoderLayer: LayerNorm after each residual add
        raise c.fail("do_layer_norm_before", "false puts each LayerNorm after the residual add; ffncalc's norm "
                                             "placements are pre, or post on the sublayer's output before the add")
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
        "ffn": {"kind": "dense", "d_ff": c.int("ffn_dim"), "bias": bias,
                "activation": c.activation("activation_function", "relu")},
        "norm": {"kind": "layernorm", "per_layer": 2, "affine": affine, "bias": affine,
                 "final": not c.bool("_remove_final_layer_norm", False)},
    }
