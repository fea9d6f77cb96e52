"""Pix2Struct's text decoder (Lee et al. 2023, "Pix2Struct"): T5's decoder (families/t5.py) as Pix2StructTextModel
builds it, whose every layer cross-attends the image encoder's output (the vision part, towers/image_seq2seq.py)."""

from __future__ import annotations

from ..config import Config, family

LAYER_MODULES = (
    (r"encoder_decoder_attention\.attention\.query$", "encoder.cross.q"),
    (r"encoder_decoder_attention\.attention\.key$", "encoder.cross.k"),
    (r"encoder_decoder_attention\.attention\.value$", "encoder.cross.v"),
    (r"encoder_decoder_attention\.attention\.output$", "encoder.cross.o"),
    (r"self_attention\.attention\.query$", "attn.q"),
    (r"self_attention\.attention\.key$", "attn.k"),
    (r"self_attention\.attention\.value$", "attn.v"),
    (r"self_attention\.attention\.output$", "attn.o"),
    (r"DenseReluDense\.wi_0$", "ffn.gate"),
    (r"DenseReluDense\.wi_1$", "ffn.up"),
    (r"DenseReluDense\.wo$", "ffn.down"),
    (r"layer_norm$", "norms"),
)
TOP_MODULES = (
    (r"embed_tokens$", "embed"),
    (r"final_layer_norm$", "final_norm"),
    (r"lm_head$", "head"),
    # the first layer holds the table every layer reads: a model-level component
    (r"layer\.0\.self_attention\.attention\.relative_attention_bias$", "relative_bias"),
)


def cross_attention(c: Config, d: int, heads: int, head_dim: int, ffn: dict) -> dict:
    """The ``encoder`` part of Pix2Struct's decoder: no layers of its own (the vision part is its encoder), the
    cross-attention's heads d_kv wide in every layer (Pix2StructTextLayerCrossAttention: its layer_norm, then query,
    key, value and output without biases)."""
    layers = {"d_model": d, "n_layers": 0, "attention": {"n_heads": heads, "head_dim": head_dim}, "ffn": ffn, "positions": "none"}
    return {"layers": layers, "cross_head_dim": head_dim}


@family("pix2struct_text_model", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES)
def pix2struct_text_model(c: Config) -> dict:
    """Pix2StructTextConfig / Pix2StructTextModel: embed_tokens (vocab_size, 50244, × hidden_size, 768); num_layers
    (12) Pix2StructTextBlocks of a self-attention (layer_norm, then query, key, value and output of hidden_size ×
    hidden_size, no biases, num_heads (12) heads of d_kv (64)), a cross-attention of the same form and an MLP
    (layer_norm, DenseReluDense: wi_0 and wi_1 d -> d_ff (2048) and wo back, no biases, gated by dense_act_fn,
    gelu_new); the first block's self-attention holds relative_attention_bias (relative_attention_num_buckets, 32, ×
    heads), read by every block; final_layer_norm; lm_head (hidden_size -> vocab_size, no bias), tied to embed_tokens
    only by tie_word_embeddings (false). Every norm an RMS norm with a weight (Pix2StructLayerNorm)."""
    d, heads, kv = c.int("hidden_size"), c.int("num_heads"), c.int("d_kv")
    if heads * kv != d:  # its projections are hidden_size square; the heads split them
        raise c.fail("d_kv", f"{heads} heads × {kv} is not hidden_size {d}, the width Pix2StructTextAttention's projections split")
    ffn = {"kind": "gated", "d_ff": c.int("d_ff"), "activation": c.activation("dense_act_fn", "gelu_new")}
    attention = {"n_heads": heads, "head_dim": kv}
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": d,
        "n_layers": c.int("num_layers"),
        "context_length": 512,  # no position table (relative buckets reach any length): T5's n_positions, as t5.py
        "positions": "none",
        "tie_embeddings": c.bool("tie_word_embeddings", False),
        "attention": attention,
        "ffn": ffn,
        "norm": {"kind": "rmsnorm", "per_layer": 2, "final": True},
        "relative_bias": {"buckets": c.int("relative_attention_num_buckets", 32), "heads": heads, "segments": 0},
        "encoder": cross_attention(c, d, heads, kv, ffn),
    }
