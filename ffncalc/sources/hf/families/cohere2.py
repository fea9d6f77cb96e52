"""Command R7B and Command A (Cohere 2024, 2025): Cohere's parallel layer, three sliding-window layers with
rotary positions to one global layer without."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, layer_types, stack, window


@family("cohere2")
def cohere2(c: Config) -> dict:
    """Cohere2Config / Cohere2DecoderLayer, Cohere2Attention, Cohere2MLP: input_layernorm only, a
    Cohere2LayerNorm with a weight and no bias (also the final norm); attention and the SwiGLU MLP read the same
    normed input and both add to the residual; attention_bias on q/k/v/o (default false), no q/k norm; the MLP
    never has a bias; head_dim a stated head_dim or hidden_size / heads; one KV head per query head when
    num_key_value_heads is absent or null; tied by default; a context of 8192.
    layer_types as stated, or (Cohere2Config.__post_init__) every sliding_window_pattern-th layer (default 4th)
    global and the others sliding over sliding_window (default 4096; null: every key). Rotary positions turn only
    the sliding layers (Cohere2Attention): the global layers take none (rope false); no parameter depends on it."""
    pattern = c.int("sliding_window_pattern", 4)
    types = layer_types(c, lambda i: "sliding_attention" if (i + 1) % pattern else "full_attention")
    bias = c.bool("attention_bias", False)
    full = attention(c, qkv_bias=bias, o_bias=bias)
    size = window(c, 4096)
    ffn = gated(c)
    layers = [
        {"attention": {**full, "window": size} if t == "sliding_attention" else {**full, "rope": False}, "ffn": ffn} for t in types
    ]
    return {
        **common(c, tie=True, context_default=8192),
        **stack(layers),
        "norm": {"kind": "layernorm", "bias": False, "per_layer": 1, "final": True},
        "parallel": True,
    }


@family("cohere2_moe", layer_modules=MOE_MODULES)
def cohere2_moe(c: Config) -> dict:
    """Cohere2MoeConfig / Cohere2MoeDecoderLayer: Cohere 2's parallel layer (one input norm, attention and the
    MLP reading it): an RMSNorm where rms_norm_eps is stated, else a LayerNorm with a weight and no bias (also
    the final norm); attention_bias on q/k/v/o (default false); head_dim defaults to 128; one KV head per query
    head when num_key_value_heads is absent or null; tied by default.
    mlp_layer_types as stated, or the first first_k_dense_replace (default 0) layers "dense": a bias-free
    Cohere2MoeMLP of prefix_dense_intermediate_size (null: intermediate_size); the others
    Cohere2MoeSparseMoeBlock: a bias-free router (Cohere2MoeTopKRouter.weight) over num_experts (default 8)
    SwiGLU experts of intermediate_size fused as 3-D tensors, num_experts_per_tok (default 2) per token, and
    with num_shared_experts (default 0) one shared Cohere2MoeMLP of num_shared_experts × intermediate_size,
    added to the routed output or, under shared_expert_combination_strategy "average" (the default), averaged
    with it. layer_types as stated, or: the dense prefix sliding except every
    prefix_dense_sliding_window_pattern-th layer (default 1: all full), then every sliding_window_pattern-th
    layer (default 4th) full. Rotary positions turn the sliding layers (those with a sliding_window) and, where
    that pattern is 1, the dense prefix; no parameter depends on it. A null head_dim builds no model (the
    config class's validation takes an integer), so it is refused."""
    n = c.int("num_hidden_layers")
    first = c.int("first_k_dense_replace", 0, positive=False)
    prefix, pattern = c.int("prefix_dense_sliding_window_pattern", 1), c.int("sliding_window_pattern", 4)
    types = layer_types(
        c,
        lambda i: (
            ("sliding_attention" if (i + 1) % prefix else "full_attention")
            if i < first
            else ("sliding_attention" if (i - first + 1) % pattern else "full_attention")
        ),
    )
    mlp_types = c.data.get("mlp_layer_types") or ["dense" if i < first else "sparse" for i in range(n)]
    if not isinstance(mlp_types, list) or len(mlp_types) != n or not set(mlp_types) <= {"dense", "sparse"}:
        raise c.fail("mlp_layer_types", f'expected a list of {n} of "dense" and "sparse", got {mlp_types!r}')
    if "head_dim" in c.data and c.data["head_dim"] is None:
        raise c.fail("head_dim", "Cohere2MoeConfig takes an integer head_dim; null builds no model")
    bias = c.bool("attention_bias", False)
    full = attention(c, head_dim=128, qkv_bias=bias, o_bias=bias)
    size = window(c, 4096)
    width = c.int("intermediate_size", 22528)
    moe = {
        "kind": "moe",
        "n_experts": c.int("num_experts", 8),
        "top_k": c.int("num_experts_per_tok", 2),
        "expert": gated(c, width=width),
    }
    shared = c.int("num_shared_experts", 0, positive=False)
    if shared:
        strategy = c.data.get("shared_expert_combination_strategy", "average")
        if strategy not in ("sum", "average"):  # Cohere2MoeSparseMoeBlock raises on any other in its forward
            raise c.fail("shared_expert_combination_strategy", f'expected "sum" or "average", got {strategy!r}')
        moe.update(n_shared_experts=1, shared=gated(c, width=shared * width), shared_average=strategy == "average")
    dense = gated(c, width=c.int("prefix_dense_intermediate_size", width))
    layers = []
    for t, m in zip(types, mlp_types):
        sliding = t == "sliding_attention" and size is not None  # Cohere2MoeAttention.sliding_window
        attn = {**full, "window": size} if sliding else dict(full)
        if not sliding and not (m == "dense" and prefix == 1):  # neither sliding nor force_rope
            attn["rope"] = False
        layers.append({"attention": attn, "ffn": dense if m == "dense" else moe})
    norm = (
        {"kind": "rmsnorm", "per_layer": 1, "final": True}
        if c.has("rms_norm_eps")
        else {"kind": "layernorm", "bias": False, "per_layer": 1, "final": True}
    )
    return {**common(c, tie=True, context_default=8192), **stack(layers), "norm": norm, "parallel": True}
