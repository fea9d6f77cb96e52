"""Bamba (IBM, Princeton, CMU, UIUC 2024): Mamba-2 layers with a few attention layers, every layer followed by a
SwiGLU MLP, as bamba (transformers 5.23.0, models/bamba)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms, stack

# BambaDecoderLayer's modules: mamba (BambaMixer; dt_bias, A_log and D are Parameters of the mixer itself, one fused
# component) or self_attn, feed_forward (BambaMLP: gate_proj, up_proj, down_proj), input_layernorm and
# pre_ff_layernorm; BambaModel's final_layernorm.
BAMBA_MODULES = (
    (r"^mamba\.in_proj$", "mixer.in_proj"),
    (r"^mamba\.conv1d$", "mixer.conv1d"),
    (r"^mamba$", "mixer.dt_bias+A_log+D"),
    (r"^mamba\.norm$", "mixer.norm"),
    (r"^mamba\.out_proj$", "mixer.out_proj"),
    (r"^feed_forward\.gate_proj$", "ffn.gate"),
    (r"^feed_forward\.up_proj$", "ffn.up"),
    (r"^feed_forward\.down_proj$", "ffn.down"),
    (r"^pre_ff_layernorm$", "norms"),
)


def mamba_mixer(c: Config) -> dict:
    """BambaMixer from the mamba_* keys with BambaConfig's defaults (GraniteMoeHybridConfig and FalconH1Config use
    the same names): mamba_n_heads 128 of mamba_d_head ("auto": mamba_expand · hidden_size / heads), mamba_d_state
    256, mamba_n_groups 1, mamba_d_conv 4, mamba_proj_bias (default false) on in_proj and out_proj, mamba_conv_bias
    (default true); the convolution's activation is hidden_act. d_inner is int(mamba_expand · hidden_size), which
    BambaConfig.validate_architecture requires to equal heads · head_dim."""
    hidden, heads, expand = c.int("hidden_size"), c.int("mamba_n_heads", 128), c.int("mamba_expand", 2)
    head = c.data.get("mamba_d_head", "auto")
    head_dim = expand * hidden // heads if head in ("auto", None) else c.int("mamba_d_head")
    return {
        "kind": "mamba2",
        "n_heads": heads,
        "head_dim": head_dim,
        "expand": expand,
        "state_size": c.int("mamba_d_state", 256),
        "n_groups": c.int("mamba_n_groups", 1),
        "conv_kernel": c.int("mamba_d_conv", 4),
        "use_bias": c.bool("mamba_proj_bias", False),
        "use_conv_bias": c.bool("mamba_conv_bias", True),
        "activation": c.activation("hidden_act", "silu"),
    }


@family("bamba", layer_modules=BAMBA_MODULES, top_modules=((r"final_layernorm$", "final_norm"),))
def bamba(c: Config) -> dict:
    """BambaConfig / BambaDecoderLayer: input_layernorm, then BambaAttention where the layer is in
    attn_layer_indices (default none) and BambaMixer (Mamba-2) elsewhere, then pre_ff_layernorm and a SwiGLU
    BambaMLP of intermediate_size (default 14336, mlp_bias default false). The mixer: mamba_n_heads (default 128)
    of mamba_d_head ("auto": mamba_expand · hidden_size / heads), mamba_d_state 256, mamba_n_groups 1, mamba_d_conv
    4, mamba_proj_bias (default false) on in_proj and out_proj, mamba_conv_bias (default true), hidden_act after
    the convolution. BambaAttention: attention_bias (default false) on q, k, v and o; 8 KV heads by default; head_dim
    hidden_size / heads unless stated; rotary positions on half of each head (BambaConfig hardcodes
    partial_rotary_factor 0.5; attn_rotary_emb is not read). A final final_layernorm; lm_head tied only with
    tie_word_embeddings (default false). mamba_dt_rank is not read."""
    n = c.int("num_hidden_layers", 32)
    attn_layers = set(c.int_list("attn_layer_indices"))
    bias = c.bool("attention_bias", False)
    attn = {"kind": "mha", **attention(c, qkv_bias=bias, o_bias=bias, rotary=0.5, kv_heads=8)}
    mlp = gated(c, bias=c.bool("mlp_bias", False), width=c.int("intermediate_size", 14336))
    mixer = mamba_mixer(c)
    layers = [{"attention": attn if i in attn_layers else mixer, "ffn": mlp} for i in range(n)]
    return {**common(c, tie=False, context_default=262_144), **stack(layers), "norm": rms()}
