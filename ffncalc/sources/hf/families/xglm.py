"""XGLM (Lin et al. 2022): pre-LayerNorm decoder with fixed sinusoidal positions offset by two rows, biases throughout."""

from __future__ import annotations

from ..config import Config, family


@family(
    "xglm",
    layer_modules=(
        (r"self_attn\.out_proj$", "attn.o"),
        (r"fc1$", "ffn.up"),
        (r"fc2$", "ffn.down"),
        (r"(self_attn_layer_norm|final_layer_norm)$", "norms"),
    ),
    top_modules=((r"layer_norm$", "final_norm"),),
)
def xglm(c: Config) -> dict:
    """XGLMConfig / XGLMForCausalLM, XGLMDecoderLayer: every key has a default (vocab_size 256008, d_model 1024,
    num_layers 24, attention_heads 16, ffn_dim 4096, max_position_embeddings 2048, activation_function gelu);
    q/k/v/out_proj and fc1/fc2 biased; LayerNorm before each sublayer and at the end (layer_norm);
    XGLMSinusoidalPositionalEmbedding is a buffer of sines and cosines read from row 2 on (offset 2, no
    parameters, grown past max_position_embeddings on demand); word embeddings scaled by √d (scale_embedding),
    no parameter; lm_head tied by default. add_cross_attention (default false) adds encoder attention, which
    a decoder-only count has no input for."""
    if c.bool("add_cross_attention", False):
        raise c.fail(
            "add_cross_attention", "true adds attention over an encoder's output, which a decoder-only language model does not have"
        )
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size", 256008),
        "d_model": c.int("d_model", 1024),
        "n_layers": c.int("num_layers", 24),
        "context_length": c.int("max_position_embeddings", 2048),
        "positions": "sinusoidal",
        "position_offset": 2,
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "attention": {"n_heads": c.int("attention_heads", 16), "qkv_bias": True, "o_bias": True},
        "ffn": {
            "kind": "dense",
            "d_ff": c.int("ffn_dim", 4096),
            "bias": True,
            "activation": c.activation("activation_function", "gelu"),
        },
        "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
    }
