"""Kosmos-2 (Peng et al. 2023) and Kosmos-2.5 (Lv et al. 2023): the language models of Kosmos2ForConditionalGeneration
and Kosmos2_5ForConditionalGeneration, as kosmos_2_text_model and kosmos_2_5_text_model: XGLM's decoder with Magneto's
sub-layer norms (Wang et al. 2022, "Foundation Transformers")."""

from __future__ import annotations

from ..config import Config, family

LAYER_MODULES = (
    (r"self_attn\.inner_attn_ln$", "attn.sub_norm"),
    (r"self_attn\.out_proj$", "attn.o"),
    (r"ffn\.ffn_layernorm$", "ffn.sub_norm"),
    (r"ffn\.fc1$", "ffn.up"),
    (r"ffn\.fc2$", "ffn.down"),
    (r"(self_attn_layer_norm|final_layer_norm)$", "norms"),
)


@family("kosmos_2_text_model", layer_modules=LAYER_MODULES, top_modules=((r"model\.layer_norm$", "final_norm"),))
def kosmos_2_text_model(c: Config) -> dict:
    """Kosmos2TextConfig / Kosmos2TextTransformer, Kosmos2TextBlock: every key has a default (vocab_size 65037,
    embed_dim 2048, layers 24, attention_heads 32, ffn_dim 8192, max_position_embeddings 2048, activation_function
    gelu); a LayerNorm before each sublayer (self_attn_layer_norm, final_layer_norm) and at the end (layer_norm);
    KosmosTextAttention's q/k/v/out_proj with biases and inner_attn_ln, a LayerNorm of embed_dim over the heads' output
    before out_proj; Kosmos2TextFFN's fc1 → activation → ffn_layernorm (a LayerNorm of ffn_dim) → fc2, with biases;
    Kosmos2TextSinusoidalPositionalEmbedding a buffer read from row 2 on (offset 2, no parameters); word embeddings
    scaled by √d (scale_embedding); lm_head tied by default. add_cross_attention (default false) adds encoder
    attention, which a decoder-only count has no input for."""
    if c.bool("add_cross_attention", False):
        raise c.fail(
            "add_cross_attention", "true adds attention over an encoder's output, which a decoder-only language model does not have"
        )
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size", 65037),
        "d_model": c.int("embed_dim", 2048),
        "n_layers": c.int("layers", 24),
        "context_length": c.int("max_position_embeddings", 2048),
        "positions": "sinusoidal",
        "position_offset": 2,
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "attention": {"n_heads": c.int("attention_heads", 32), "qkv_bias": True, "o_bias": True, "sub_norm": True},
        "ffn": {
            "kind": "dense",
            "d_ff": c.int("ffn_dim", 8192),
            "bias": True,
            "activation": c.activation("activation_function", "gelu"),
            "sub_norm": True,
        },
        "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
    }


@family(
    "kosmos_2_5_text_model",
    layer_modules=LAYER_MODULES,
    top_modules=((r"model\.layer_norm$", "final_norm"), (r"model\.segment_emb$", "token_type_embed")),
)
def kosmos_2_5_text_model(c: Config) -> dict:
    """Kosmos2_5TextConfig / Kosmos2_5TextTransformer, Kosmos2_5TextBlock: Kosmos-2's decoder (every key with a
    default: vocab_size 108481, embed_dim 1536, layers 24, attention_heads 16, ffn_dim 6144, max_position_embeddings
    4096) without the attention's inner norm (its MLP keeps ffn_layernorm), and segment_emb, a table of two rows (an
    image's positions and the text's) added to the positions: a token-type table."""
    spec = kosmos_2_text_model(c)
    spec["vocab_size"] = c.int("vocab_size", 108481)
    spec["d_model"] = c.int("embed_dim", 1536)
    spec["context_length"] = c.int("max_position_embeddings", 4096)
    spec["attention"] = {"n_heads": c.int("attention_heads", 16), "qkv_bias": True, "o_bias": True}
    spec["ffn"]["d_ff"] = c.int("ffn_dim", 6144)
    return {**spec, "token_types": 2}
