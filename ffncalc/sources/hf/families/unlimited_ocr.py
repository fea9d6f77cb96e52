"""Unlimited OCR's language model (unlimited_ocr_text): multi-head attention beside DeepSeek-V2's mixture."""

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
    n = c.int("num_hidden_layers")
    heads, d = c.int("num_attention_heads"), c.int("hidden_size")
    if d % heads:  # UnlimitedOcrTextConfig.validate_architecture
        raise c.fail("num_attention_heads", f"{heads} heads do not divide hidden_size {d}")
    if "sliding_window" in c.data and c.data["sliding_window"] is None:  # validate_architecture
        raise c.fail("sliding_window", "null: UnlimitedOcrTextConfig requires a window")
    kinds = c.data.get("mlp_layer_types")
    if kinds is None:  # UnlimitedOcrTextConfig.__post_init__: first_k_dense_replace (default 1) dense layers
        first = c.int("first_k_dense_replace", 1, positive=False)
        kinds = ["sparse" if i >= first else "dense" for i in range(n)]
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
        ffns["sparse"] = _deepseek(all_moe, mlp_bias=bias, defaults=UNLIMITED_OCR_TEXT)["ffn"]
    ffn, layers = layer_groups(kinds, ffns)
    bias_attn = c.bool("attention_bias", False)
    return {
        **common(c, tie=False, context_default=32768),
        "attention": {
            "n_heads": heads,
            # a null num_key_value_heads is one a query head (UnlimitedOcrTextConfig.__post_init__)
            "n_kv_heads": c.int("num_key_value_heads", heads if "num_key_value_heads" in c.data else 10),
            "head_dim": d // heads,
            "qkv_bias": bias_attn,
            "o_bias": bias_attn,
        },
        "ffn": ffn,
        **({"layers": layers} if layers else {}),
        "norm": rms(),
    }
