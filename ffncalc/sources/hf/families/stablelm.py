"""StableLM (Stability AI): StableLM-3B-4E1T and StableLM 2, LayerNorm with a SwiGLU MLP, partial rotary."""

from __future__ import annotations

from ..config import Config, common, family, gated


@family("stablelm", layer_modules=((r"q_layernorm\b", "attn.q_norm"), (r"k_layernorm\b", "attn.k_norm")))
def stablelm(c: Config) -> dict:
    """StableLmConfig / StableLmDecoderLayer: q/k/v biased by use_qkv_bias (default false), o_proj and the
    gated MLP without; head_dim is hidden_size / heads; a quarter of each head rotated by default
    (partial_rotary_factor); with qk_layernorm (default false) q_layernorm and k_layernorm, each a
    StableLmLayerNormPerHead: a LayerNorm over head_dim with a weight and no bias in every query (and every KV)
    head; LayerNorm with bias, two per layer, or one shared by attention and MLP in parallel with
    use_parallel_residual; untied by default."""
    d, heads = c.int("hidden_size"), c.int("num_attention_heads")
    head_dim = d // heads  # StableLmAttention: hidden_size // num_heads, no head_dim key
    parallel = c.bool("use_parallel_residual", False)
    # StableLmLayerNormPerHead: nn.LayerNorm(head_dim, bias=False) per head, beside the model's biased LayerNorms
    qk = {"qk_norm": "each_head", "qk_norm_bias": False} if c.bool("qk_layernorm", False) else {}
    return {
        **common(c, tie=False, context_default=4096),
        "attention": {
            "n_heads": heads,
            "n_kv_heads": c.int("num_key_value_heads", 32),
            "head_dim": head_dim,
            "qkv_bias": c.bool("use_qkv_bias", False),
            "o_bias": False,
            **qk,
            # StableLmAttention.rotary_ndims = int(head_dim * partial_rotary_factor)
            "rotary_dim": int(head_dim * c.rope_fraction(0.25)),
        },
        "ffn": gated(c),
        "norm": {"kind": "layernorm", "per_layer": 1 if parallel else 2, "final": True},
        "parallel": parallel,
    }
