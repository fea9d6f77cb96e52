"""EXAONE 4.0 (LG AI Research)."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, layer_types, rms, stack, window


@family("exaone4")
def exaone4(c: Config) -> dict:
    """Exaone4Config / Exaone4DecoderLayer, Exaone4Attention: RMSNorms after attention and after the MLP, none
    before, and a final one; an RMSNorm over head_dim shared by the heads on queries and on keys (q_norm,
    k_norm); no biases; head_dim is a stated head_dim or hidden_size / heads; untied by default.
    Without a sliding_window every layer rotates; with one, only the sliding layers do (global NoPE,
    Exaone4Attention). The spec states positions for the whole model: rotary where any layer rotates, none
    where no layer does, so a hybrid's full-attention layers count rotary ops too; no parameter depends on it."""
    data = {**common(c, tie=False), "attention": attention(c, qk_norm="head"), "ffn": gated(c), "norm": rms(placement="post")}
    if c.has("sliding_window"):
        types = c.data.get("layer_types")
        pattern = c.data.get("sliding_window_pattern", 4)
        if types is None and isinstance(pattern, int) and not isinstance(pattern, bool) and pattern > 0:
            types = [
                "sliding_attention" if (i + 1) % pattern else "full_attention"  # Exaone4Config
                for i in range(c.int("num_hidden_layers"))
            ]
        if types is not None and "sliding_attention" not in types:
            data["positions"] = "none"
    return data


@family("exaone_moe", layer_modules=MOE_MODULES)
def exaone_moe(c: Config) -> dict:
    """ExaoneMoeConfig / ExaoneMoeDecoderLayer: pre-norm (input_layernorm, post_attention_layernorm), unlike
    EXAONE 4.0; ExaoneMoeAttention is Exaone4Attention: no biases, an RMSNorm over head_dim shared by the heads
    on queries and on keys, head_dim a stated head_dim or hidden_size / heads, num_key_value_heads defaulting to
    32; untied by default. mlp_layer_types as stated, or the first first_k_dense_replace (default 1) layers
    "dense": a bias-free ExaoneMoeMLP of intermediate_size; the others ExaoneMoeSparseMoEBlock: a bias-free
    router (ExaoneMoeTopkRouter.weight; its e_score_correction_bias is a buffer) over num_experts (default 64)
    SwiGLU experts of moe_intermediate_size (default 1024) fused as 3-D tensors, num_experts_per_tok (default 8)
    per token, and one shared ExaoneMoeMLP of num_shared_experts (default 1) × moe_intermediate_size (none at
    0: a zero-width MLP holds nothing). layer_types as stated, or every sliding_window_pattern-th layer (default
    4th) full and the others sliding over sliding_window (default 4096; the class takes no null). Rotary positions
    turn only the sliding layers; no parameter depends on it. The multi-token-prediction weights a checkpoint may
    carry are not part of the class."""
    n = c.int("num_hidden_layers")
    first = c.int("first_k_dense_replace", 1, positive=False)
    mlp_types = c.data.get("mlp_layer_types") or ["dense" if i < first else "sparse" for i in range(n)]
    if not isinstance(mlp_types, list) or len(mlp_types) != n or not set(mlp_types) <= {"dense", "sparse"}:
        raise c.fail("mlp_layer_types", f'expected a list of {n} of "dense" and "sparse", got {mlp_types!r}')
    size, pattern = window(c, 4096), 1
    if size is None:  # ExaoneMoeConfig's field is an int: its validation refuses null
        raise c.fail("sliding_window", "ExaoneMoeConfig takes an integer sliding_window; null builds no model")
    if c.data.get("layer_types") is None:
        pattern = c.int("sliding_window_pattern", 4)  # ExaoneMoeConfig derives layer types from an integer only
    types = layer_types(c, lambda i: "sliding_attention" if (i + 1) % pattern else "full_attention")
    full = attention(c, qk_norm="head", kv_heads=32)
    width = c.int("moe_intermediate_size", 1024)
    moe = {
        "kind": "moe",
        "n_experts": c.int("num_experts", 64),
        "top_k": c.int("num_experts_per_tok", 8),
        "expert": gated(c, width=width),
    }
    shared = c.int("num_shared_experts", 1, positive=False)
    if shared:
        moe.update(n_shared_experts=1, shared=gated(c, width=shared * width))
    dense = gated(c, width=c.int("intermediate_size", 16384))
    layers = []
    for t, m in zip(types, mlp_types):  # ExaoneMoeAttention: rotary positions on the sliding layers only
        attn = {**full, "window": size} if t == "sliding_attention" else {**full, "rope": False}
        layers.append({"attention": attn, "ffn": moe if m == "sparse" else dense})
    return {**common(c, tie=False), **stack(layers), "norm": rms()}
