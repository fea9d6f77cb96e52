"""Mamba-2 (Dao & Gu 2024, arXiv:2405.21060): every layer one RMSNorm and a Mamba-2 mixer, no FFN, no positions."""

from __future__ import annotations

from ..config import Config, common, family, rms

# Mamba2Mixer's modules. dt_bias, A_log and D are Parameters of the mixer itself, so transformers names them
# under the module "mixer": one fused component against our three.
MAMBA2_MODULES = (
    (r"^mixer\.in_proj$", "mixer.in_proj"),
    (r"^mixer\.conv1d$", "mixer.conv1d"),
    (r"^mixer$", "mixer.dt_bias+A_log+D"),
    (r"^mixer\.norm$", "mixer.norm"),
    (r"^mixer\.out_proj$", "mixer.out_proj"),
)


def mamba2_mixer(
    c: Config,
    *,
    heads: str = "num_heads",
    head_dim: str = "head_dim",
    state: str = "state_size",
    groups: str = "n_groups",
    kernel: str = "conv_kernel",
    bias: str = "use_bias",
    conv_bias: str = "use_conv_bias",
    act: str = "hidden_act",
    defaults: dict | None = None,
) -> dict:
    """The mamba2 block from a config's Mamba2Mixer keys (their names and defaults vary by family). d_inner is
    heads · head_dim, as Mamba2Mixer's num_heads · head_dim (Mamba2Config requires it equal expand · hidden)."""
    dv = {"heads": 128, "head_dim": 64, "state": 128, "groups": 8, "kernel": 4, **(defaults or {})}
    return {
        "kind": "mamba2",
        "n_heads": c.int(heads, dv["heads"]),
        "head_dim": c.int(head_dim, dv["head_dim"]),
        "state_size": c.int(state, dv["state"]),
        "n_groups": c.int(groups, dv["groups"]),
        "conv_kernel": c.int(kernel, dv["kernel"]),
        "use_bias": c.bool(bias, False),
        "use_conv_bias": c.bool(conv_bias, True),
        "activation": c.activation(act, "silu"),
    }


@family(
    "mamba2",
    layer_modules=MAMBA2_MODULES + ((r"^norm$", "norms"),),
    top_modules=((r"embeddings$", "embed"), (r"norm_f$", "final_norm")),
)
def mamba2(c: Config) -> dict:
    """Mamba2Config / Mamba2ForCausalLM, Mamba2Block: one Mamba2RMSNorm (a weight) before the mixer, a final norm_f;
    Mamba2Mixer with the config class's defaults (128 heads of 64, state 128, 8 groups, kernel 4, no in/out bias, a
    conv bias, silu); no positions; lm_head untied unless tie_word_embeddings. Mamba2Config states no context
    length: common()'s 2048 is only the default --seq-len, never a limit."""
    return {
        **common(c, tie=False),
        "positions": "none",
        "attention": mamba2_mixer(c),
        "ffn": {"kind": "none"},
        "norm": rms(per_layer=1),
    }
