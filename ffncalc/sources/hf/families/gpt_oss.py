"""gpt-oss (OpenAI 2025): attention sinks, biased projections and a biased mixture of biased SwiGLU experts."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, common, family, layer_types, rms, stack, window


@family("gpt_oss", layer_modules=((r"mlp\.router$", "ffn.router"), (r"self_attn$", "attn.sinks")) + MOE_MODULES)
def gpt_oss(c: Config) -> dict:
    """GptOssConfig / GptOssDecoderLayer: attention_bias (default true) on q, k, v and o; one learned sink
    logit per head (GptOssAttention.sinks); a router with a bias (GptOssTopKRouter) over num_local_experts
    (default 128) experts, num_experts_per_tok (default 4) per token, whose fused gate_up_proj and
    down_proj carry biases (GptOssExperts); head_dim defaults to 64 and num_key_value_heads to 8.
    Sliding-window layers (layer_types; by default every other layer from the first) attend sliding_window
    keys (default 128) and hold the same parameters."""
    heads = c.int("num_attention_heads")
    kv = c.int("num_key_value_heads", 8)
    head_dim = c.int("head_dim", 64)
    bias = c.bool("attention_bias", True)
    # GptOssExperts applies its own clamped gate, (up + 1) · gate · σ(1.702 · gate): SiLU's form, whatever hidden_act
    expert = {"kind": "gated", "d_ff": c.int("intermediate_size"), "activation": "silu", "bias": True}
    full = {"n_heads": heads, "n_kv_heads": kv, "head_dim": head_dim, "qkv_bias": bias, "o_bias": bias, "sinks": True}
    ffn = {
        "kind": "moe",
        "n_experts": c.int("num_local_experts", c.int("num_experts", 128)),
        "top_k": c.int("num_experts_per_tok", 4),
        "expert": expert,
        "router_bias": True,
    }
    size = window(c, 128)
    types = layer_types(c, lambda i: "sliding_attention" if (i + 1) % 2 else "full_attention")  # GptOssConfig
    layers = [{"attention": {**full, "window": size} if t == "sliding_attention" else full, "ffn": ffn} for t in types]
    return {**common(c, tie=False, context_default=131_072), **stack(layers), "norm": rms()}
