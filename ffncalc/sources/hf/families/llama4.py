"""Llama 4 (Meta 2025): Scout and Maverick, mixtures of a routed and a shared expert, interleaved with dense
layers, as llama4_text (the llama4 wrapper's text_config; TEXT_TYPES reads it as one)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, layer_types, rms, stack

# Llama4TextConfig's defaults (transformers 5.23): a llama4 text_config may state only what differs from them.
LLAMA4_TEXT = {
    "vocab_size": 202_048,
    "hidden_size": 5120,
    "intermediate_size": 8192,
    "intermediate_size_mlp": 16_384,
    "num_hidden_layers": 48,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_act": "silu",
    "max_position_embeddings": 4096 * 32,
    "tie_word_embeddings": False,
    "num_experts_per_tok": 1,
    "num_local_experts": 16,
    "interleave_moe_layer_step": 1,
    "attention_bias": False,
}

# Llama4TextDecoderLayer's feed_forward: a Llama4TextMoe (router, experts, shared_expert) or a Llama4TextMLP.
LLAMA4_MODULES = (
    (r"feed_forward\.router$", "ffn.router"),
    (r"feed_forward\.shared_expert\b", "ffn.shared"),
    (r"feed_forward\.experts\b", "ffn.experts"),
    (r"feed_forward\.gate_proj$", "ffn.gate"),
    (r"feed_forward\.up_proj$", "ffn.up"),
    (r"feed_forward\.down_proj$", "ffn.down"),
)


@family("llama4_text", layer_modules=LLAMA4_MODULES)
def llama4_text(c: Config) -> dict:
    """Llama4TextConfig / Llama4ForCausalLM: Llama4TextAttention puts attention_bias (default false) on q, k, v
    and o; its qk_norm is a parameter-free L2 norm (Llama4TextL2Norm), and no_rope layers and chunked
    attention (attention_chunk_size, layer_types) change no parameters. Layer i is a Llama4TextMoe when it is
    in moe_layers (default: every interleave_moe_layer_step-th layer, step - 1, 2·step - 1, …), else a dense
    Llama4TextMLP of intermediate_size_mlp. The mixture: a bias-free router (Llama4Router, an nn.Linear; it
    takes a sigmoid of the top-k logits where the spec counts a softmax) over num_local_experts SwiGLU
    experts of intermediate_size, fused as 3-D gate_up_proj and down_proj (Llama4TextExperts),
    num_experts_per_tok per token, and one shared Llama4TextMLP of intermediate_size (shared_expert).
    The language model of a llama4 config is its text_config read with these defaults."""
    c = c.with_defaults(LLAMA4_TEXT)
    heads = c.int("num_attention_heads")
    # Llama4TextConfig.__post_init__: a null head_dim is hidden_size / heads, a null KV count the heads
    head_dim = c.int("head_dim") if c.has("head_dim") else c.int("hidden_size") // heads
    bias = c.bool("attention_bias", False)
    attn = attention(c, qkv_bias=bias, o_bias=bias)
    attn["head_dim"] = head_dim
    n = c.int("num_hidden_layers")
    # Llama4TextConfig.__post_init__: layers with rope (no_rope_layers, by default all but every
    # no_rope_layer_interval-th) attend in chunks of attention_chunk_size (create_chunked_causal_mask)
    interval = c.int("no_rope_layer_interval", 4)
    rope = c.int_list("no_rope_layers") or [int((i + 1) % interval != 0) for i in range(n)]
    types = layer_types(c, lambda i: "chunked_attention" if rope[i] else "full_attention")
    chunk = None if c.data.get("attention_chunk_size", 8192) is None else c.int("attention_chunk_size", 8192)
    if c.data.get("moe_layers") is not None:
        moe_layers = set(c.int_list("moe_layers")) & set(range(n))  # an index past the depth names no layer
    else:
        step = c.int("interleave_moe_layer_step")
        moe_layers = set(range(step - 1, n, step))
    expert = gated(c)  # intermediate_size, hidden_act
    moe = {
        "kind": "moe",
        "n_experts": c.int("num_local_experts"),
        "top_k": c.int("num_experts_per_tok"),
        "expert": expert,
        "n_shared_experts": 1,
        "shared": dict(expert),
    }
    dense = gated(c, "intermediate_size_mlp") if len(moe_layers) < n else None
    layers = [
        {
            "attention": {**attn, "chunk": chunk} if types[i] == "chunked_attention" and chunk else attn,
            "ffn": moe if i in moe_layers else dense,
        }
        for i in range(n)
    ]
    for i, layer in enumerate(layers):
        if not rope[i]:  # a NoPE layer (Llama4TextAttention.use_rope): no rotary positions, the same parameters
            layer["attention"] = {**layer["attention"], "rope": False}
    return {**common(c, tie=False), **stack(layers), "norm": rms()}
