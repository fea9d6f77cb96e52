"""ProphetNet (Qi et al. 2020, "ProphetNet: Predicting Future N-gram for Sequence-to-Sequence Pre-training"): a BERT-like
post-norm encoder and a decoder that runs ngram predicting streams beside its main stream through n-stream
self-attention, each decoder layer with a cross-attention to the encoder's output, as transformers'
ProphetNetForConditionalGeneration builds them."""

from __future__ import annotations

from ..config import Config, family

LAYER_MODULES = (
    (r"cross_attn\.query_proj$", "encoder.cross.q"),
    (r"cross_attn\.key_proj$", "encoder.cross.k"),
    (r"cross_attn\.value_proj$", "encoder.cross.v"),
    (r"cross_attn\.out_proj$", "encoder.cross.o"),
    (r"self_attn\.query_proj$", "attn.q"),
    (r"self_attn\.key_proj$", "attn.k"),
    (r"self_attn\.value_proj$", "attn.v"),
    (r"self_attn\.out_proj$", "attn.o"),
    (r"self_attn\.relative_pos_embeddings$", "attn.rel"),
    (r"feed_forward\.intermediate$", "ffn.up"),
    (r"feed_forward\.output$", "ffn.down"),
    (r"(self_attn_layer_norm|cross_attn_layer_norm|feed_forward_layer_norm)$", "norms"),
)
TOP_MODULES = (
    (r"word_embeddings$", "embed"),
    (r"position_embeddings$", "pos_embed"),
    (r"embeddings_layer_norm$", "embed_norm"),
    (r"ngram_embeddings$", "ngram_embed"),
    (r"lm_head$", "lm_head"),
)


@family("prophetnet", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=((r"encoder\.", "encoder."),))
def prophetnet(c: Config) -> dict:
    """ProphetNetConfig / ProphetNetForConditionalGeneration: word_embeddings (vocab_size, 30522, × hidden_size, 1024)
    shared by both stacks and tied to lm_head (tie_word_embeddings, default true). Each stack: position_embeddings of
    max_position_embeddings (512) rows, embeddings_layer_norm; layers whose every sublayer is followed by its LayerNorm
    over the residual sum (self_attn_layer_norm, in the decoder cross_attn_layer_norm, feed_forward_layer_norm),
    attention query_proj, key_proj, value_proj and out_proj with biases, feed_forward intermediate (→ encoder_ffn_dim
    or decoder_ffn_dim, 4096) and output with biases, activation_function (gelu); no final norm. The encoder:
    num_encoder_layers (12) of num_encoder_attention_heads (16). The decoder: num_decoder_layers (12) of
    ProphetNetNgramSelfAttention over num_decoder_attention_heads (16), with relative_pos_embeddings (hidden →
    num_buckets (32) × heads, a bias), and the ngram (2) predicting streams with their ngram_embeddings
    (parts/ngram.py); the cross-attention ProphetNetAttention over every stream's rows."""
    d = c.int("hidden_size")
    if not c.bool("add_cross_attention", True):
        raise c.fail("add_cross_attention", "a ProphetNet decoder without its cross-attention is not read")
    ngram = c.int("ngram", 2)
    act = c.activation("activation_function", "gelu")

    def ffn(key: str) -> dict:
        return {"kind": "dense", "d_ff": c.int(key), "bias": True, "activation": act}

    heads = c.int("num_decoder_attention_heads")
    rows = c.int("max_position_embeddings", 512)
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": d,
        "n_layers": c.int("num_decoder_layers"),
        "context_length": rows,
        "positions": "learned",
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "embedding_norm": True,
        "attention": {
            "kind": "ngram",
            "n_heads": heads,
            "qkv_bias": True,
            "o_bias": True,
            "ngram": ngram,
            "buckets": c.int("num_buckets", 32),
        },
        "ffn": ffn("decoder_ffn_dim"),
        "norm": {"kind": "layernorm", "per_layer": 2, "final": False, "placement": "residual"},
        "ngram_streams": {"ngram": ngram},
        "encoder": {
            "layers": {
                "d_model": d,
                "n_layers": c.int("num_encoder_layers"),
                "attention": {"n_heads": c.int("num_encoder_attention_heads"), "qkv_bias": True, "o_bias": True},
                "ffn": ffn("encoder_ffn_dim"),
                "positions": "learned",
            },
            "position_rows": rows,
            "embedding_norm": True,
            "cross_bias": True,
        },
    }
