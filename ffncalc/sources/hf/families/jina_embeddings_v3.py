"""Jina Embeddings v3 (Sturua et al. 2024): XLM-RoBERTa's post-norm encoder with rotary positions in place of the
position table, under RoBERTa's masked-LM head."""

from __future__ import annotations

from ..config import Config, attention, common, family

MODULES = (
    (r"mlp\.fc1$", "ffn.up"),
    (r"mlp\.fc2$", "ffn.down"),
    (r"(post_attention_layernorm|post_mlp_layernorm)$", "norms"),
)
TOP_MODULES = (
    (r"embeddings\.word_embeddings$", "embed"),
    (r"embeddings\.token_type_embeddings$", "token_type_embed"),
    (r"embeddings\.LayerNorm$", "embed_norm"),
    (r"lm_head\.dense$", "prediction_head.dense"),
    (r"lm_head\.layer_norm$", "prediction_head.norm"),
    (r"lm_head(\.decoder)?$", "lm_head"),
)


@family("jina_embeddings_v3", layer_modules=MODULES, top_modules=TOP_MODULES)
def jina_embeddings_v3(c: Config) -> dict:
    """JinaEmbeddingsV3Config / JinaEmbeddingsV3ForMaskedLM: the word table (vocabulary 250002 × hidden 1024) and a
    token-type table of type_vocab_size (default 1), summed, then a LayerNorm, no position table; 24 layers: self_attn's
    q/k/v/o with biases over 16 heads, rotary positions over the whole head, the residual sum then
    post_attention_layernorm; mlp.fc1 (d -> intermediate_size 4096), hidden_act (gelu), fc2 back, with biases, the sum
    then post_mlp_layernorm; the head: dense (with a bias), gelu, layer_norm, the decoder tied to the word table with
    its bias. The task LoRA adapters of the released checkpoint are not in this class. 8194 positions."""
    spec = {
        **common(c, tie=True, context_default=8194),
        "mask": "bidirectional",
        "lm_head_bias": True,
        "embedding_norm": True,
        "attention": attention(c, qkv_bias=True, o_bias=True),
        "ffn": {"kind": "dense", "d_ff": c.int("intermediate_size"), "bias": True, "activation": c.activation("hidden_act", "gelu")},
        "norm": {"kind": "layernorm", "per_layer": 2, "final": False, "placement": "residual"},
        "prediction_head": {"activation": "gelu", "bias": True},  # JinaEmbeddingsV3LMHead: gelu, whatever hidden_act
    }
    types = c.int("type_vocab_size", 1, positive=False)
    return {**spec, "token_types": types} if types else spec
