"""Falcon-H1 (TII 2025, "Falcon-H1: A Family of Hybrid-Head Language Models", arXiv:2507.22448): every layer runs
grouped-query attention and a Mamba-2 mixer side by side on one normed input, their outputs summed, then a SwiGLU
MLP, as falcon_h1 (transformers 5.23.0, models/falcon_h1)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms

# FalconH1DecoderLayer's modules: mamba (FalconH1Mixer: in_proj, conv1d, out_proj, norm where mamba_rms_norm; dt_bias,
# A_log and D are Parameters of the mixer itself, one fused component) and self_attn (q/k/v/o_proj), both read by
# our parallel block (mixers.mixer.*, mixers.attn.*); feed_forward (FalconH1MLP: gate_proj, up_proj, down_proj),
# input_layernorm and pre_ff_layernorm; FalconH1Model's final_layernorm. mamba.mup_vector is a buffer.
FALCON_H1_MODULES = (
    (r"^mamba\.in_proj$", "mixers.mixer.in_proj"),
    (r"^mamba\.conv1d$", "mixers.mixer.conv1d"),
    (r"^mamba$", "mixers.mixer.dt_bias+A_log+D"),
    (r"^mamba\.norm$", "mixers.mixer.norm"),
    (r"^mamba\.out_proj$", "mixers.mixer.out_proj"),
    (r"^self_attn\.q_proj$", "mixers.attn.q"),
    (r"^self_attn\.k_proj$", "mixers.attn.k"),
    (r"^self_attn\.v_proj$", "mixers.attn.v"),
    (r"^self_attn\.o_proj$", "mixers.attn.o"),
    (r"^feed_forward\.gate_proj$", "ffn.gate"),
    (r"^feed_forward\.up_proj$", "ffn.up"),
    (r"^feed_forward\.down_proj$", "ffn.down"),
    (r"^(input_layernorm|pre_ff_layernorm)$", "norms"),
)


def falcon_h1_mixer(c: Config) -> dict:
    """FalconH1Mixer: d_inner is mamba_d_ssm (default 1024; null: int(mamba_expand · hidden_size), expand default
    2), split into mamba_n_heads (default 128) of mamba_d_head ("auto": d_inner / heads; FalconH1Config requires
    heads · head_dim = d_inner); mamba_d_state 256, mamba_n_groups 1, mamba_d_conv 4; mamba_proj_bias (default
    false) on in_proj only, projectors_bias (default false) on out_proj; mamba_conv_bias (default true); hidden_act
    after the convolution. The gated RMSNorm (FalconH1RMSNormGated, a weight over d_inner in mamba_n_groups groups;
    mamba_norm_before_gate orders norm and gate, the same work either way) only where mamba_rms_norm (default
    false); without it out_proj reads y ⊙ silu(z)."""
    hidden, heads = c.int("hidden_size", 4096), c.int("mamba_n_heads", 128)
    if "mamba_d_ssm" in c.data and c.data["mamba_d_ssm"] is None:
        inner = c.int("mamba_expand", 2) * hidden
    else:
        inner = c.int("mamba_d_ssm", 1024)
    head = c.data.get("mamba_d_head", "auto")
    head_dim = inner // heads if head in ("auto", None) else c.int("mamba_d_head")
    if heads * head_dim != inner:
        raise c.fail(
            "mamba_d_head",
            f"mamba_n_heads · mamba_d_head = {heads * head_dim} must equal the mixer's "
            f"width {inner} (mamba_d_ssm, or mamba_expand · hidden_size)",
        )
    return {
        "kind": "mamba2",
        "n_heads": heads,
        "head_dim": head_dim,
        "state_size": c.int("mamba_d_state", 256),
        "n_groups": c.int("mamba_n_groups", 1),
        "conv_kernel": c.int("mamba_d_conv", 4),
        "use_bias": c.bool("mamba_proj_bias", False),
        "out_bias": c.bool("projectors_bias", False),
        "use_conv_bias": c.bool("mamba_conv_bias", True),
        "activation": c.activation("hidden_act", "silu"),
        "gated_norm": c.bool("mamba_rms_norm", False),
    }


@family("falcon_h1", layer_modules=FALCON_H1_MODULES, top_modules=((r"final_layernorm$", "final_norm"),))
def falcon_h1(c: Config) -> dict:
    """FalconH1Config / FalconH1DecoderLayer: input_layernorm, then FalconH1Mixer (``falcon_h1_mixer``) and
    FalconH1Attention on the same normed input, summed (a parallel block), then pre_ff_layernorm and a SwiGLU
    FalconH1MLP of intermediate_size (default 14336, mlp_bias default false, hidden_act). The attention:
    num_attention_heads 32, num_key_value_heads 8 (null: one per query head), head_dim as stated or hidden_size /
    heads, attention_bias (default false) on q, k, v and o, rotary over the whole head. Every layer is the same
    (layers_block_type is "hybrid" throughout). A final final_layernorm; lm_head tied only with
    tie_word_embeddings (default false). The µP multipliers (embedding, lm_head, key, attention in/out, ssm
    in/out, the mlp and ssm multiplier lists, held as the mixer's mup_vector buffer) scale activations by
    constants: no parameters."""
    c = c.with_defaults({"vocab_size": 128_000, "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32})
    bias = c.bool("attention_bias", False)
    attn = {"kind": "mha", **attention(c, qkv_bias=bias, o_bias=bias, kv_heads=8)}
    mixers = {"kind": "parallel", "mixers": [attn, falcon_h1_mixer(c)]}
    mlp = gated(c, bias=c.bool("mlp_bias", False), width=c.int("intermediate_size", 14336))
    return {**common(c, tie=False, context_default=8192), "attention": mixers, "ffn": mlp, "norm": rms()}
