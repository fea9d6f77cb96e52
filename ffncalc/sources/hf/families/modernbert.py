"""ModernBERT (Warner et al. 2024): a bidirectional encoder of global and sliding-window layers, rotary positions,
gated (GeGLU) FFNs, LayerNorms without biases, no norm before the first layer's attention, and the masked-LM head
(dense, activation, norm) before the unembedding tied to the token table, with its bias."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, layer_types, stack

MODULES = (
    (r"attn\.Wqkv$", "attn.q+k+v"),
    (r"attn\.Wo$", "attn.o"),
    (r"(attn_norm|mlp_norm)$", "norms"),
    (r"mlp\.Wi$", "ffn.gate+up"),
    (r"mlp\.Wo$", "ffn.down"),
)
TOP_MODULES = (
    (r"embeddings\.tok_embeddings$", "embed"),
    (r"embeddings\.norm$", "embed_norm"),
    (r"final_norm$", "final_norm"),
    (r"head\.dense$", "prediction_head.dense"),
    (r"head\.norm$", "prediction_head.norm"),
    (r"^decoder$", "lm_head"),
)


def modernbert_layers(c: Config) -> list[dict]:
    """ModernBERT's layers, its encoder's and its decoder's (Ettin): layer_types as stated, or every
    global_attn_every_n_layers-th layer (default 3, from layer 0) global and the others sliding over local_attention // 2
    keys (default 64); attention over num_attention_heads of hidden_size / heads, q/k/v/o biases where attention_bias;
    a gated MLP of intermediate_size with hidden_activation (default gelu), biases where mlp_bias; no norm before
    layer 0's attention."""
    every = c.int("global_attn_every_n_layers", 3)
    types = layer_types(c, lambda i: "sliding_attention" if i % every else "full_attention")
    local = c.int("local_attention", 128)
    if local < 2 and "sliding_attention" in types:
        raise c.fail("local_attention", f"sliding layers need a window of local_attention // 2 keys, got {local}")
    bias = c.bool("attention_bias", False)
    full = attention(c, qkv_bias=bias, o_bias=bias)
    ffn = gated(c, act_key="hidden_activation", act_default="gelu", bias=c.bool("mlp_bias", False))
    return [
        {
            "attention": {**full, "window": local // 2} if t == "sliding_attention" else full,
            "ffn": ffn,
            "norms": ["none" if i == 0 else "norm", "norm"],
        }
        for i, t in enumerate(types)
    ]


@family("modernbert", layer_modules=MODULES, top_modules=TOP_MODULES)
def modernbert(c: Config) -> dict:
    """ModernBertConfig / ModernBertForMaskedLM: the embedding then a LayerNorm (ModernBertEmbeddings.norm); every
    LayerNorm with a weight, and a bias only where norm_bias (default false). ModernBertEncoderLayer: attn_norm
    (nn.Identity in layer 0) before attention, mlp_norm before the MLP. ModernBertAttention: Wqkv, one fused
    d -> 3·d projection of num_attention_heads (default 12) heads of hidden_size / heads (768 / 12), and Wo, each
    with a bias where attention_bias (default false); rotary positions over the whole head. layer_types as stated,
    or every global_attn_every_n_layers-th layer (default 3, from layer 0) global and the others sliding, each query
    meeting the keys within local_attention // 2 (default 64) on both sides (create_bidirectional_sliding_window_mask:
    |i − j| ≤ sliding_window). ModernBertMLP: Wi d -> 2·intermediate_size (default 1152), hidden_activation (default
    gelu) on the input half times the gate half, Wo back, biases where mlp_bias (default false). final_norm, then
    ModernBertPredictionHead: dense d -> d (bias where classifier_bias, default false), classifier_activation
    (default gelu), a norm; decoder tied to the embedding with a bias where decoder_bias (default true).
    Vocabulary 50368, 8192 positions."""
    layers = modernbert_layers(c)
    return {
        **common(c, tie=True, context_default=8192),
        **stack(layers),
        "mask": "bidirectional",
        "norm": {"kind": "layernorm", "bias": c.bool("norm_bias", False), "per_layer": 2, "final": True},
        "embedding_norm": True,
        "lm_head_bias": c.bool("decoder_bias", True),
        "prediction_head": {"activation": c.activation("classifier_activation", "gelu"), "bias": c.bool("classifier_bias", False)},
    }
