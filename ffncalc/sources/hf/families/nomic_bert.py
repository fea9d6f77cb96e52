"""Nomic BERT (Nussbaum et al. 2024, nomic-embed-text): BERT's post-norm encoder with rotary positions in place of
the position table, bias-free projections and a SwiGLU FFN, under BERT's masked-LM head."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated

MODULES = ((r"(post_attention_layernorm|post_mlp_layernorm)$", "norms"),)
TOP_MODULES = (
    (r"embeddings\.word_embeddings$", "embed"),
    (r"embeddings\.token_type_embeddings$", "token_type_embed"),
    (r"embeddings\.LayerNorm$", "embed_norm"),
    (r"transform\.dense$", "prediction_head.dense"),
    (r"transform\.layer_norm$", "prediction_head.norm"),
    (r"(cls\.predictions|predictions\.decoder)$", "lm_head"),
)


@family("nomic_bert", layer_modules=MODULES, top_modules=TOP_MODULES)
def nomic_bert(c: Config) -> dict:
    """NomicBertConfig / NomicBertForMaskedLM: NomicBertEmbeddings (word and token-type tables, type_vocab_size
    default 2, summed, then a LayerNorm; no position table); NomicBertLayer: self_attn's q/k/v/o without biases over
    num_attention_heads (default 12) heads of head_dim (default hidden_size / heads), rotary positions over the whole
    head, the residual sum then post_attention_layernorm; a SwiGLU MLP (gate, up, down without biases, hidden_act
    default silu, intermediate_size default 3072), the sum then post_mlp_layernorm; every LayerNorm with a bias.
    The head is BERT's: transform dense (with a bias), hidden_act, layer_norm; the decoder tied to the word table,
    with its bias. Vocabulary 30528, 2048 positions."""
    spec = {
        **common(c, tie=True),
        "mask": "bidirectional",
        "lm_head_bias": True,
        "embedding_norm": True,
        "attention": attention(c),
        "ffn": gated(c),
        "norm": {"kind": "layernorm", "per_layer": 2, "final": False, "placement": "residual"},
        "prediction_head": {"activation": c.activation("hidden_act", "silu"), "bias": True},
    }
    types = c.int("type_vocab_size", 2)
    return {**spec, "token_types": types} if types else spec
