"""Phi-2 and Phi-3 (Microsoft)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms, window


@family(
    "phi",
    layer_modules=(
        (r"self_attn\.dense$", "attn.o"),
        (r"mlp\.fc1$", "ffn.up"),
        (r"mlp\.fc2$", "ffn.down"),
        (r"q_layernorm$", "attn.q_norm"),
        (r"k_layernorm$", "attn.k_norm"),
    ),
    top_modules=((r"final_layernorm$", "final_norm"),),
)
def phi(c: Config) -> dict:
    """PhiConfig / PhiDecoderLayer: one LayerNorm per layer shared by attention and MLP in parallel;
    q/k/v and dense with biases; fc1/fc2 with biases; lm_head with a bias; partial rotary (default 0.5);
    qk_layernorm adds a LayerNorm over head_dim on queries and keys."""
    return {
        **common(c, tie=False),
        "attention": attention(
            c, qkv_bias=True, o_bias=True, qk_norm="head" if c.bool("qk_layernorm", False) else "none", rotary=c.rope_fraction(0.5)
        ),
        "ffn": {
            "kind": "dense",
            "d_ff": c.int("intermediate_size"),
            "bias": True,
            "activation": c.activation("hidden_act", "gelu_new"),
        },
        "norm": {"kind": "layernorm", "per_layer": 1, "final": True},
        "parallel": True,
        "lm_head_bias": True,
    }


@family("phi3", layer_modules=((r"qkv_proj$", "attn.q+k+v"), (r"mlp\.gate_up_proj$", "ffn.gate+up")))
def phi3(c: Config) -> dict:
    """Phi3Config / Phi3Attention, Phi3MLP: fused qkv_proj and gate_up_proj, no biases; the same parameters
    as separate q/k/v and gate/up; sliding_window (default none) bounds every layer's keys."""
    return {
        **common(c, tie=False),
        "attention": {**attention(c, rotary=c.rope_fraction(1.0)), "window": window(c, None)},
        "ffn": gated(c),
        "norm": rms(),
    }
