"""ModernBERT's decoder (Ettin, Weller et al. 2025): ModernBERT's layers trained as a causal LM, sliding-window and
global layers, no norm before the first layer's attention, and a prediction head before the tied unembedding."""

from __future__ import annotations

from ..config import Config, common, family, stack
from .modernbert import modernbert_layers

MODULES = ((r"attn\.Wo$", "attn.o"), (r"(attn_norm|mlp_norm)$", "norms"), (r"mlp\.Wi$", "ffn.gate+up"), (r"mlp\.Wo$", "ffn.down"))
TOP_MODULES = (
    (r"embeddings\.tok_embeddings$", "embed"),
    (r"embeddings\.norm$", "embed_norm"),
    (r"final_norm$", "final_norm"),
    (r"lm_head\.dense$", "prediction_head.dense"),
    (r"lm_head\.norm$", "prediction_head.norm"),
    (r"^decoder$", "lm_head"),
)

# ModernBertDecoderConfig's defaults (transformers 5.23) for the keys the shared readers require
DEFAULTS = {"vocab_size": 50368, "hidden_size": 768, "intermediate_size": 1152, "num_hidden_layers": 22, "num_attention_heads": 12}


@family("modernbert-decoder", layer_modules=MODULES, top_modules=TOP_MODULES)
def modernbert_decoder(c: Config) -> dict:
    """ModernBertDecoderConfig / ModernBertDecoderForCausalLM: the embedding then a LayerNorm
    (ModernBertDecoderEmbeddings.norm); every LayerNorm with a weight and a bias only where norm_bias (default
    false). ModernBertDecoderLayer: attn_norm (none in layer 0: nn.Identity) before attention, mlp_norm before the
    MLP. ModernBertDecoderAttention: q_proj, k_proj, v_proj of num_attention_heads (default 12) heads of
    hidden_size / heads (default 768 / 12), one KV head per query head, Wo, each with a bias where attention_bias
    (default false); rotary positions over the whole head. ModernBertDecoderMLP: Wi d -> 2·intermediate_size
    (default 1152) fused input and gate, hidden_activation (default gelu) on the input, Wo back, biases where
    mlp_bias (default false). layer_types as stated, or (__post_init__) every global_attn_every_n_layers-th layer
    (default 3, from layer 0) global and the others sliding over local_attention // 2 keys (default 128 // 2 = 64,
    sliding_window as transformers sets it, whatever the file says). final_norm, then
    ModernBertDecoderPredictionHead: dense d -> d (bias where classifier_bias, default false),
    classifier_activation (default gelu), a LayerNorm; then decoder, the unembedding, with a bias where
    decoder_bias (default true), tied to the embedding by default. Vocabulary 50368, context 8192."""
    c = c.with_defaults(DEFAULTS)
    layers = modernbert_layers(c)
    return {
        **common(c, tie=True, context_default=8192),
        **stack(layers),
        "norm": {"kind": "layernorm", "bias": c.bool("norm_bias", False), "per_layer": 2, "final": True},
        "embedding_norm": True,
        "lm_head_bias": c.bool("decoder_bias", True),
        "prediction_head": {"activation": c.activation("classifier_activation", "gelu"), "bias": c.bool("classifier_bias", False)},
    }
