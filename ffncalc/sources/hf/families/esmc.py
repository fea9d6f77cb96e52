"""ESM C (EvolutionaryScale 2024): a protein language model; pre-norm rotary layers with LayerNorms, query and key
norms over all heads, a SwiGLU FFN, no biases in the projections, and a masked-LM head."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated

TOP_MODULES = (
    (r"lm_head\.dense$", "prediction_head.dense"),
    (r"lm_head\.layer_norm$", "prediction_head.norm"),
    (r"lm_head\.decoder$", "lm_head"),
)


@family("esmc", top_modules=TOP_MODULES)
def esmc(c: Config) -> dict:
    """EsmcConfig / EsmcForMaskedLM: embed_tokens (vocabulary 64 × hidden_size 2560); EsmcLayer: input_layernorm (a
    LayerNorm with a bias), q/k/v/o over num_attention_heads (40) of head_dim (64), biases where attention_bias
    (default false), q_norm and k_norm LayerNorms over hidden_size without biases, rotary positions, the output
    divided by sqrt(layers / 36) before the residual add (elementwise, uncounted here); post_attention_layernorm (with
    a bias) and a SwiGLU MLP of intermediate_size (6912), biases where mlp_bias (default false), divided likewise;
    80 layers; the final norm, a LayerNorm without a bias; EsmcMaskedLMHead: dense d -> d with a bias, gelu, an
    nn.LayerNorm (with a bias), and the decoder to the vocabulary with a bias, untied (tie_word_embeddings false)."""
    bias = c.bool("attention_bias", False)
    return {
        **common(c, tie=False),
        "mask": "bidirectional",
        "attention": {**attention(c, qkv_bias=bias, o_bias=bias, qk_norm="full"), "qk_norm_bias": False},
        "ffn": gated(c, bias=c.bool("mlp_bias", False)),
        # each layer's LayerNorms with a bias, the final one (EsmcModel.norm) without
        "norm": {"kind": "layernorm", "bias": False, "layer_bias": True, "per_layer": 2, "final": True},
        "lm_head_bias": True,
        "prediction_head": {"activation": "gelu", "bias": True, "norm_bias": True},
    }
