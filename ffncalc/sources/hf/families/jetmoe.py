"""JetMoE (Shen et al. 2024, "JetMoE: Reaching Llama2 Performance with 0.1M Dollars", arXiv:2404.07413;
transformers 5.23.0, models/jetmoe): a mixture of attention heads and a mixture of MLP experts in every layer."""

from __future__ import annotations

from ..config import Config, common, family, gated, rms

JETMOE_MODULES = (
    (r"self_attention\.experts\.router\.layer$", "attn.router"),
    (r"self_attention\.experts\.input_linear$", "attn.experts.q"),
    (r"self_attention\.experts\.output_linear$", "attn.experts.o"),
    (r"self_attention\.experts$", "attn.bias"),
    (r"self_attention\.kv_proj$", "attn.kv"),
    (r"mlp\.router\.layer$", "ffn.router"),
    (r"mlp\.(input|output)_linear$", "ffn.experts"),
    (r"^mlp$", "ffn.bias"),
)


@family("jetmoe", layer_modules=JETMOE_MODULES)
def jetmoe(c: Config) -> dict:
    """JetMoeConfig / JetMoeDecoderLayer: self_attention is JetMoeAttention, a mixture of attention heads
    (JetMoeMoA): a bias-free router over num_local_experts (default 8) experts, num_experts_per_tok (default 2) per
    token, each expert's query projection (hidden_size -> num_key_value_heads · kv_channels, defaults 16 and 128) and
    output projection (back, fused as JetMoeParallelExperts input_linear and output_linear), one bias of hidden_size
    on the combined output, and a shared bias-free kv_proj; num_attention_heads is set to num_key_value_heads ·
    num_experts_per_tok, full rotary over kv_channels. The MLP is JetMoeMoE: the same router over num_local_experts
    SwiGLU experts of intermediate_size (default 5632) with activation_function (default silu), the gate and up
    halves fused in input_linear, one bias of hidden_size on the output. The routers softmax the k chosen logits.
    RMSNorms before each sublayer and at the end; tied unless tie_word_embeddings is false."""
    experts, top_k = c.int("num_local_experts", 8), c.int("num_experts_per_tok", 2)
    moa = {
        "kind": "moa",
        "n_experts": experts,
        "top_k": top_k,
        "n_kv_heads": c.int("num_key_value_heads", 16),
        "head_dim": c.int("kv_channels", 128),
    }
    moe = {
        "kind": "moe",
        "n_experts": experts,
        "top_k": top_k,
        "output_bias": True,
        "expert": gated(c, act_key="activation_function", width=c.int("intermediate_size", 5632)),
    }
    return {**common(c, tie=True, context_default=4096), "attention": moa, "ffn": moe, "norm": rms()}
