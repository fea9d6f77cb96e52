"""MiniMax-M2 (MiniMax 2025): full attention with a norm over all heads' queries and keys, and a
sigmoid-routed mixture of SwiGLU experts."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, common, family, gated, rms


@family("minimax_m2", layer_modules=MOE_MODULES)
def minimax_m2(c: Config) -> dict:
    """MiniMaxM2Config / MiniMaxM2DecoderLayer: no biases; q_norm and k_norm are one RMSNorm each over all
    query and all key heads (MiniMaxM2Attention, whatever use_qk_norm says); head_dim defaults to 128 and
    num_key_value_heads to 8; rotary_dim (else rope_parameters' partial_rotary_factor) sets the rotated
    width. Every layer is a MiniMaxM2SparseMoeBlock: a bias-free router over num_local_experts
    (default 256), num_experts_per_tok (default 8) per token, experts of intermediate_size; its
    e_score_correction_bias is a buffer, not a parameter. shared_intermediate_size and the MTP modules
    are not built by MiniMaxM2ForCausalLM."""
    heads = c.int("num_attention_heads")
    head_dim = c.int("head_dim", 128)
    attention = {
        "n_heads": heads,
        "n_kv_heads": c.int("num_key_value_heads", 8),
        "head_dim": head_dim,
        "qkv_bias": False,
        "o_bias": False,
        "qk_norm": "full",
    }
    # MiniMaxM2Config.convert_rope_params_to_dict: partial_rotary_factor = rotary_dim / head_dim
    rotary = c.int("rotary_dim", None) if c.has("rotary_dim") else int(head_dim * c.rope_fraction(1.0))
    if rotary != head_dim:
        attention["rotary_dim"] = rotary
    return {
        **common(c, tie=False, context_default=196_608),
        "attention": attention,
        "ffn": {
            "kind": "moe",
            "n_experts": c.int("num_local_experts", c.int("num_experts", 256)),
            "top_k": c.int("num_experts_per_tok", 8),
            "expert": gated(c),
        },
        "norm": rms(),
    }
