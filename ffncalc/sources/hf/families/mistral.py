"""Mistral 7B (Jiang et al. 2023) and Mixtral (Jiang et al. 2024)."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, rms


@family("mistral")
def mistral(c: Config) -> dict:
    """MistralConfig / MistralAttention: Llama's shapes, no biases anywhere, head_dim may be stated; when absent,
    8 KV heads and a context of 4096 × 32 (MistralConfig's defaults)."""
    return {**common(c, tie=False, context_default=4096 * 32), "attention": attention(c, kv_heads=8), "ffn": gated(c),
            "norm": rms()}


@family("mixtral",
        layer_modules=MOE_MODULES)
def mixtral(c: Config) -> dict:
    """MixtralConfig / MixtralSparseMoeBlock: Mistral's attention (8 KV heads and a context of 4096 × 32 when
    absent), a bias-free router over num_local_experts (default 8) SwiGLU experts, num_experts_per_tok
    (default 2) per token."""
    return {**common(c, tie=False, context_default=4096 * 32), "attention": attention(c, kv_heads=8), "norm": rms(),
            "ffn": {"kind": "moe", "n_experts": c.int("num_local_experts", 8), "top_k": c.int("num_experts_per_tok", 2),
                    "expert": gated(c)}}
