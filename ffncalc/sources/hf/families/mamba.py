"""Mamba (Gu & Dao 2023, arXiv:2312.00752): every layer one RMSNorm and a Mamba (v1) mixer, no FFN, no positions."""

from __future__ import annotations

import math

from ..config import Config, common, family, rms

# MambaMixer's modules. A_log and D are Parameters of the mixer itself, so transformers names them under the
# module "mixer": one fused component against our two.
MAMBA_MODULES = (
    (r"^mixer\.in_proj$", "mixer.in_proj"),
    (r"^mixer\.conv1d$", "mixer.conv1d"),
    (r"^mixer\.x_proj$", "mixer.x_proj"),
    (r"^mixer\.dt_proj$", "mixer.dt_proj"),
    (r"^mixer$", "mixer.A_log+D"),
    (r"^mixer\.out_proj$", "mixer.out_proj"),
)


def mamba_mixer(c: Config, *, bcdt_norm: bool = False) -> dict:
    """The mamba block from MambaConfig's keys and defaults: intermediate_size as stated, else int(expand · hidden)
    (MambaConfig.__post_init__ sets it only where absent; expand 2); time_step_rank an integer or "auto" (the
    default), ⌈hidden / 16⌉; state_size 16, conv_kernel 4, use_bias false, use_conv_bias true, hidden_act silu."""
    d = c.int("hidden_size")
    expand = c.data.get("expand", 2)
    if isinstance(expand, bool) or not isinstance(expand, (int, float)) or expand <= 0:
        raise c.fail("expand", f"expected a positive number, got {expand!r}")
    inner = c.int("intermediate_size") if c.has("intermediate_size") else int(expand * d)
    rank = c.data.get("time_step_rank", "auto")
    rank = math.ceil(d / 16) if rank in ("auto", None) else c.int("time_step_rank")
    return {
        "kind": "mamba",
        "d_inner": inner,
        "state_size": c.int("state_size", 16),
        "conv_kernel": c.int("conv_kernel", 4),
        "time_step_rank": rank,
        "use_bias": c.bool("use_bias", False),
        "use_conv_bias": c.bool("use_conv_bias", True),
        "activation": c.activation("hidden_act", "silu"),
        "bcdt_norm": bcdt_norm,
    }


@family(
    "mamba", layer_modules=MAMBA_MODULES + ((r"^norm$", "norms"),), top_modules=((r"embeddings$", "embed"), (r"norm_f$", "final_norm"))
)
def mamba(c: Config) -> dict:
    """MambaConfig / MambaForCausalLM, MambaBlock: one MambaRMSNorm (a weight) before the mixer, a final norm_f;
    MambaMixer (in_proj, a depthwise conv1d, x_proj without bias, dt_proj with a bias, A_log (d_inner, state), D,
    out_proj); no positions; lm_head tied to the embedding unless tie_word_embeddings is false (default true).
    MambaConfig states no context length: common()'s 2048 is only the default --seq-len, never a limit."""
    return {**common(c, tie=True), "positions": "none", "attention": mamba_mixer(c), "ffn": {"kind": "none"}, "norm": rms(per_layer=1)}
