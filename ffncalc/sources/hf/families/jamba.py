"""Jamba (AI21 2024, arXiv:2403.19887): Mamba (v1) layers with an attention layer every few, and a mixture of
experts in place of the MLP every other layer."""

from __future__ import annotations

import math

from ..config import Config, family, gated, rms, stack

# JambaAttentionDecoderLayer / JambaMambaDecoderLayer: self_attn or mamba (JambaMambaMixer: A_log and D are
# Parameters of the mixer itself, one fused component), feed_forward (JambaMLP, or JambaSparseMoeBlock: a router
# and fused experts), input_layernorm and pre_ff_layernorm; JambaModel's final_layernorm.
JAMBA_MODULES = (
    (r"^mamba\.in_proj$", "mixer.in_proj"),
    (r"^mamba\.conv1d$", "mixer.conv1d"),
    (r"^mamba\.x_proj$", "mixer.x_proj"),
    (r"^mamba\.dt_proj$", "mixer.dt_proj"),
    (r"^mamba\.dt_layernorm$", "mixer.dt_norm"),
    (r"^mamba\.b_layernorm$", "mixer.b_norm"),
    (r"^mamba\.c_layernorm$", "mixer.c_norm"),
    (r"^mamba$", "mixer.A_log+D"),
    (r"^mamba\.out_proj$", "mixer.out_proj"),
    (r"^feed_forward\.router$", "ffn.router"),
    (r"^feed_forward\.experts$", "ffn.experts"),
    (r"^feed_forward\.gate_proj$", "ffn.gate"),
    (r"^feed_forward\.up_proj$", "ffn.up"),
    (r"^feed_forward\.down_proj$", "ffn.down"),
    (r"^pre_ff_layernorm$", "norms"),
)


@family("jamba", layer_modules=JAMBA_MODULES, top_modules=((r"final_layernorm$", "final_norm"),))
def jamba(c: Config) -> dict:
    """JambaConfig / JambaForCausalLM: every key has a default (vocab_size 65536, hidden_size 4096,
    intermediate_size 14336, 32 layers, 32 heads, 8 KV heads, max_position_embeddings 262144, untied). Layer i is
    JambaAttention (q/k/v/o without bias, no positional encoding; head_dim as stated, else hidden_size //
    num_attention_heads, floored) where i % attn_layer_period (8) == attn_layer_offset (4), else JambaMambaMixer:
    d_inner mamba_expand (2) · hidden, mamba_d_state 16, mamba_d_conv 4, mamba_dt_rank ("auto": ⌈hidden / 16⌉),
    mamba_conv_bias (true), mamba_proj_bias (false) on in_proj and out_proj, hidden_act after the convolution, and
    RMSNorms with a weight on dt, B and C (dt_layernorm, b_layernorm, c_layernorm). Its FFN is JambaSparseMoeBlock
    (a router without bias, num_experts 16 SwiGLU experts, num_experts_per_tok 2) where i % expert_layer_period (2)
    == expert_layer_offset (1) and num_experts > 1, else a SwiGLU JambaMLP; input_layernorm and pre_ff_layernorm in
    every layer, a final_layernorm."""
    d, n = c.int("hidden_size", 4096), c.int("num_hidden_layers", 32)
    heads = c.int("num_attention_heads", 32)
    kv = c.int("num_key_value_heads", heads if "num_key_value_heads" in c.data else 8)
    rank = c.data.get("mamba_dt_rank", "auto")
    rank = math.ceil(d / 16) if rank in ("auto", None) else c.int("mamba_dt_rank")
    # JambaAttention.head_dim: getattr(config, "head_dim", hidden_size // num_attention_heads): JambaConfig declares
    # no head_dim, so a config.json that states one sets it; else the floored quotient (q/k/v to heads × head_dim,
    # o back to hidden_size, whether or not the heads divide it)
    head_dim = c.int("head_dim") if c.has("head_dim") else (d // heads if d % heads else None)
    attn = {"kind": "mha", "n_heads": heads, "n_kv_heads": kv, **({"head_dim": head_dim} if head_dim else {})}
    mixer = {
        "kind": "mamba",
        "d_inner": c.int("mamba_expand", 2) * d,
        "state_size": c.int("mamba_d_state", 16),
        "conv_kernel": c.int("mamba_d_conv", 4),
        "time_step_rank": rank,
        "use_bias": c.bool("mamba_proj_bias", False),
        "use_conv_bias": c.bool("mamba_conv_bias", True),
        "activation": c.activation("hidden_act", "silu"),
        "bcdt_norm": True,
        "bcdt_weights": True,
    }
    mlp = gated(c, width=c.int("intermediate_size", 14336))
    experts = c.int("num_experts", 16)
    moe = {"kind": "moe", "n_experts": experts, "top_k": c.int("num_experts_per_tok", 2), "expert": mlp}
    attn_period, attn_offset = c.int("attn_layer_period", 8), c.int("attn_layer_offset", 4, positive=False)
    moe_period, moe_offset = c.int("expert_layer_period", 2), c.int("expert_layer_offset", 1, positive=False)
    layers = [
        {
            "attention": attn if i % attn_period == attn_offset else mixer,
            "ffn": moe if experts > 1 and i % moe_period == moe_offset else mlp,
        }
        for i in range(n)
    ]
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size", 65536),
        "d_model": d,
        "n_layers": n,
        "context_length": c.int("max_position_embeddings", 262144),
        "positions": "none",
        "tie_embeddings": c.bool("tie_word_embeddings", False),
        **stack(layers),
        "norm": rms(),
    }
