"""Unlimited OCR's and DeepSeek-OCR 2's language models (unlimited_ocr_text, deepseek_ocr2_text): multi-head
attention beside DeepSeek-V2's mixture."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, common, family, gated, layer_groups, rms
from .deepseek import _deepseek

# UnlimitedOcrTextConfig's defaults (transformers 5.23)
UNLIMITED_OCR_TEXT = {
    "n_routed_experts": 64,
    "n_shared_experts": 2,
    "moe_intermediate_size": 896,
    "num_experts_per_tok": 6,
    "q_lora_rank": None,  # unread: its attention is not MLA
    "first_k_dense_replace": 1,
    "num_key_value_heads": 10,
    "max_position_embeddings": 32768,
}

# DeepseekOcr2TextConfig's defaults (transformers 5.23): no num_experts_per_tok (None), one KV head a query head
DEEPSEEK_OCR2_TEXT = {
    "n_routed_experts": 64,
    "n_shared_experts": 2,
    "moe_intermediate_size": 1407,
    "num_experts_per_tok": ...,  # none: the parameters are counted without one (deepseek.top_k)
    "q_lora_rank": None,
    "first_k_dense_replace": 0,
    "num_key_value_heads": None,
    "max_position_embeddings": 2048,
}


@family("unlimited_ocr_text", layer_modules=MOE_MODULES)
def unlimited_ocr_text(c: Config) -> dict:
    """UnlimitedOcrTextConfig / UnlimitedOcrTextDecoderLayer: UnlimitedOcrTextAttention is multi-head attention
    (q_proj, k_proj, v_proj and o_proj, attention_bias on all four; num_key_value_heads, default 10, of
    head_dim = hidden_size // num_attention_heads, which the config sets whatever head_dim it is given) with rotary
    positions; mlp_layer_types ("sparse" from the first layer on by default: first_k_dense_replace 1) picks
    UnlimitedOcrTextMoe (a bias-free router over n_routed_experts, 64, of moe_intermediate_size 896, 6 a token, and
    shared_experts: one UnlimitedOcrTextMLP of n_shared_experts × moe_intermediate_size, DeepSeek-V2's) or
    UnlimitedOcrTextMLP of intermediate_size (mlp_bias on gate, up and down); RMSNorms; an untied lm_head.
    Its layers' reference sliding-window attention (layer_types "reference_sliding_attention") keeps every prefill
    token and a window of sliding_window decoded tokens: a prefill attends causally over all of it, as counted here;
    a decode step past sliding_window generated tokens meets fewer keys than counted (the cache's eviction is not
    read)."""
    if "sliding_window" in c.data and c.data["sliding_window"] is None:  # validate_architecture
        raise c.fail("sliding_window", "null: UnlimitedOcrTextConfig requires a window")
    kinds = c.data.get("mlp_layer_types")
    if kinds is None:  # UnlimitedOcrTextConfig.__post_init__: first_k_dense_replace (default 1) dense layers
        first = c.int("first_k_dense_replace", 1, positive=False)
        kinds = ["sparse" if i >= first else "dense" for i in range(c.int("num_hidden_layers"))]
    return _text(c, kinds, UNLIMITED_OCR_TEXT)


@family("deepseek_ocr2_text", layer_modules=MOE_MODULES)
def deepseek_ocr2_text(c: Config) -> dict:
    """DeepseekOcr2TextConfig / DeepseekOcr2TextDecoderLayer: Unlimited OCR's layers (the same classes) at
    DeepSeek-V2-Lite's sizes: multi-head attention (num_key_value_heads defaults to num_attention_heads), and
    mlp_layer_types, which the decoder layers index and which defaults to None (transformers then cannot build the
    model), picking the mixture (64 experts of 1,407, 2 shared; no num_experts_per_tok by default) or a dense MLP of
    intermediate_size. Full causal attention; an untied lm_head."""
    kinds = c.data.get("mlp_layer_types")
    if kinds is None:
        raise c.fail("mlp_layer_types", "null or missing: DeepseekOcr2TextDecoderLayer reads each layer's entry, dense or sparse")
    return _text(c, kinds, DEEPSEEK_OCR2_TEXT)


def _text(c: Config, kinds, defaults: dict) -> dict:
    """The layers of both: multi-head attention of hidden_size // num_attention_heads a head and, layer by layer
    (``kinds``), a dense SwiGLU MLP or DeepSeek-V2's mixture."""
    n = c.int("num_hidden_layers")
    heads, d = c.int("num_attention_heads"), c.int("hidden_size")
    if d % heads:  # UnlimitedOcrTextConfig.validate_architecture
        raise c.fail("num_attention_heads", f"{heads} heads do not divide hidden_size {d}")
    if not isinstance(kinds, list) or len(kinds) != n or not set(kinds) <= {"dense", "sparse"}:
        raise c.fail("mlp_layer_types", f'expected {n} entries, each "dense" or "sparse", got {kinds!r}')
    bias = c.bool("mlp_bias", False)
    ffns = {"dense": gated(c, bias=bias)}
    if "sparse" in kinds:  # DeepSeek-V2's mixture (UnlimitedOcrTextMoe: its experts, router and shared MLP)
        all_moe = Config(
            {**c.data, "first_k_dense_replace": 0, "q_lora_rank": None},
            c.text,
            c.source,
            start=c.start,
            wrapper=c.wrapper,
            towers=c.towers,
        )
        ffns["sparse"] = _deepseek(all_moe, mlp_bias=bias, defaults=defaults)["ffn"]
    ffn, layers = layer_groups(kinds, ffns)
    bias_attn = c.bool("attention_bias", False)
    # a null num_key_value_heads is one a query head (both configs' __post_init__)
    kv_default = defaults["num_key_value_heads"]
    if kv_default is None or "num_key_value_heads" in c.data:
        kv_default = heads
    return {
        **common(c, tie=False, context_default=defaults["max_position_embeddings"]),
        "attention": {
            "n_heads": heads,
            "n_kv_heads": c.int("num_key_value_heads", kv_default),
            "head_dim": d // heads,
            "qkv_bias": bias_attn,
            "o_bias": bias_attn,
        },
        "ffn": ffn,
        **({"layers": layers} if layers else {}),
        "norm": rms(),
    }
