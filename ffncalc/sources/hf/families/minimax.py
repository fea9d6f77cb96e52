"""MiniMax-Text-01 (MiniMax 2025, arXiv:2501.08313; transformers 5.23.0, models/minimax): lightning attention layers
interleaved with softmax attention layers, a mixture of experts in every layer."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, layer_types, rms, stack, window

# MiniMaxLightningAttention's modules (its decay rates are buffers: slope_rate, query/key/diagonal_decay)
LIGHTNING_MODULES = (
    (r"self_attn\.qkv_proj$", "attn.qkv"),
    (r"self_attn\.norm$", "attn.norm"),
    (r"self_attn\.output_gate$", "attn.output_gate"),
    (r"self_attn\.out_proj$", "attn.out"),
)
MIXERS = ("full_attention", "linear_attention")


@family("minimax", layer_modules=LIGHTNING_MODULES + MOE_MODULES)
def minimax(c: Config) -> dict:
    """MiniMaxConfig / MiniMaxDecoderLayer: self_attn is MiniMaxLightningAttention or MiniMaxAttention by
    layer_types (default: full attention on even layers, lightning on odd ones). MiniMaxAttention: bias-free q/k/v/o,
    num_key_value_heads (default 8), head_dim (default hidden_size // num_attention_heads), full rotary, the
    sliding_window if one is stated (default none). MiniMaxLightningAttention: a bias-free qkv_proj (3 · heads ·
    head_dim) under hidden_act, blocks of block_size (default 256), an RMSNorm with a weight over all heads, a sigmoid
    output_gate and out_proj, all bias-free. MiniMaxSparseMoeBlock in every layer: a bias-free router over
    num_local_experts (default 8) SwiGLU experts of intermediate_size (default 14336), num_experts_per_tok (default 2)
    per token. RMSNorms before each sublayer (the residual branch starts from the normalised input and is scaled by
    the *_alpha_factor and *_beta_factor keys, elementwise work not counted here) and at the end; untied."""
    heads = c.int("num_attention_heads", 32)
    head_dim = c.int("head_dim", None) or c.int("hidden_size", 4096) // heads
    full = {"kind": "mha", **attention(c, head_dim=head_dim, kv_heads=8), "window": window(c, None)}
    lightning = {
        "kind": "lightning",
        "n_heads": heads,
        "head_dim": head_dim,
        "activation": c.activation("hidden_act", "silu"),
        "chunk_size": c.int("block_size", 256),
    }
    moe = {
        "kind": "moe",
        "n_experts": c.int("num_local_experts", 8),
        "top_k": c.int("num_experts_per_tok", 2),
        "expert": gated(c, width=c.int("intermediate_size", 14336)),
    }
    kinds = layer_types(c, lambda i: "full_attention" if (i + 1) % 2 else "linear_attention")
    if any(k not in MIXERS for k in kinds):
        raise c.fail("layer_types", f"expected each of {', '.join(MIXERS)}; got {kinds!r}")
    mixers = {"full_attention": full, "linear_attention": lightning}
    return {
        **common(c, tie=False, context_default=4096 * 32),
        "norm": rms(),
        **stack([{"attention": mixers[k], "ffn": moe} for k in kinds]),
    }
