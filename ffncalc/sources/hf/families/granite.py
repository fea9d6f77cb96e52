"""IBM Granite 3.0/3.1 mixtures (GraniteMoe)."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, rms

# GraniteMoeMoE names its router block_sparse_moe.router; GraniteMoeSharedMLP is shared_mlp (input_linear
# holds gate and up, output_linear is down).
GRANITE_MODULES = ((r"block_sparse_moe\.router$", "ffn.router"), (r"shared_mlp\.", "ffn.shared"))


def _granite_moe(c: Config) -> dict:
    """GraniteMoe(Shared)DecoderLayer: Llama's pre-norm layer whose MLP is GraniteMoeMoE: a bias-free
    router (GraniteMoeTopKRouter.weight) over num_local_experts (default 8) SwiGLU experts of
    intermediate_size (default 11008), fused as 3-D gate_up_proj and down_proj tensors (GraniteMoeExperts),
    num_experts_per_tok (default 2) per token. embedding_multiplier, attention_multiplier,
    residual_multiplier and logits_scaling are constant scalars, not parameters."""
    bias = c.bool("attention_bias", False)
    moe = {"kind": "moe", "n_experts": c.int("num_local_experts", 8), "top_k": c.int("num_experts_per_tok", 2),
           "expert": gated(c, width=c.int("intermediate_size", 11008))}
    return {**common(c, tie=False), "attention": attention(c, qkv_bias=bias, o_bias=bias), "norm": rms(),
            "ffn": moe}


@family("granitemoe",
        layer_modules=GRANITE_MODULES + MOE_MODULES)
def granitemoe(c: Config) -> dict:
    """GraniteMoeConfig / GraniteMoeAttention: q/k/v/o bias from attention_bias (default false)."""
    return _granite_moe(c)
