"""Mistral 7B (Jiang et al. 2023) and Mixtral (Jiang et al. 2024)."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, rms, window


@family("mistral")
def mistral(c: Config) -> dict:
    """MistralConfig / MistralAttention: Llama's shapes, no biases anywhere, head_dim may be stated; when absent,
    8 KV heads, a context of 4096 × 32 and a sliding window of 4096 (MistralConfig's defaults; a null
    sliding_window attends every key, MistralModel's create_causal_mask)."""
    return {
        **common(c, tie=False, context_default=4096 * 32),
        "attention": {**attention(c, kv_heads=8), "window": window(c, 4096)},
        "ffn": gated(c),
        "norm": rms(),
    }


@family("mixtral", layer_modules=MOE_MODULES)
def mixtral(c: Config) -> dict:
    """MixtralConfig / MixtralSparseMoeBlock: Mistral's attention (8 KV heads, a context of 4096 × 32 and no
    sliding window when absent), a bias-free router over num_local_experts (default 8) SwiGLU experts,
    num_experts_per_tok (default 2) per token."""
    return {
        **common(c, tie=False, context_default=4096 * 32),
        "attention": {**attention(c, kv_heads=8), "window": window(c, None)},
        "norm": rms(),
        "ffn": {
            "kind": "moe",
            "n_experts": c.int("num_local_experts", 8),
            "top_k": c.int("num_experts_per_tok", 2),
            "expert": gated(c),
        },
    }
