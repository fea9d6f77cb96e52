"""GTE (Alibaba's gte-*-v1.5, Zhang et al. 2024): BERT's post-norm encoder with rotary positions in place of the
position table and a gated FFN, under RoBERTa's masked-LM head."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated

MODULES = ((r"(post_attention_layernorm|post_mlp_layernorm)$", "norms"),)
TOP_MODULES = (
    (r"embeddings\.word_embeddings$", "embed"),
    (r"embeddings\.token_type_embeddings$", "token_type_embed"),
    (r"embeddings\.LayerNorm$", "embed_norm"),
    (r"lm_head\.dense$", "prediction_head.dense"),
    (r"lm_head\.layer_norm$", "prediction_head.norm"),
    (r"lm_head\.decoder$", "lm_head"),
)


@family("gte", layer_modules=MODULES, top_modules=TOP_MODULES)
def gte(c: Config) -> dict:
    """GteConfig / GteForMaskedLM: GteEmbeddings (word table and, where type_vocab_size (default 1) is not 0, a
    token-type table, summed, then a LayerNorm; no position table); GteLayer: self_attn's q/k/v/o each with a bias
    over num_attention_heads (default 12) heads of hidden_size / heads, rotary positions over the whole head, the
    residual sum then post_attention_layernorm; GteMLP: gate_proj and up_proj without biases, hidden_act (default
    gelu) on the gate times up, down_proj with a bias, intermediate_size (default 3072), the sum then
    post_mlp_layernorm; every LayerNorm with a bias. GteLMHead: dense (with a bias), gelu, layer_norm, and the decoder
    tied to the word table, with its bias. Vocabulary 250048, 8192 positions."""
    spec = {
        **common(c, tie=True, context_default=8192),
        "mask": "bidirectional",
        "lm_head_bias": True,
        "embedding_norm": True,
        "attention": attention(c, qkv_bias=True, o_bias=True),
        "ffn": {**gated(c, act_default="gelu"), "down_bias": True},
        "norm": {"kind": "layernorm", "per_layer": 2, "final": False, "placement": "residual"},
        "prediction_head": {"activation": "gelu", "bias": True},  # GteLMHead: gelu, whatever hidden_act
    }
    types = c.int("type_vocab_size", 1)
    return {**spec, "token_types": types} if types else spec
