"""FalconMamba (TII 2024, arXiv:2410.05355): Mamba (v1) with weightless RMSNorms on dt, B and C inside the mixer."""

from __future__ import annotations

from ..config import Config, common, family, rms
from .mamba import MAMBA_MODULES, mamba_mixer


@family(
    "falcon_mamba",
    layer_modules=MAMBA_MODULES + ((r"^norm$", "norms"),),
    top_modules=((r"embeddings$", "embed"), (r"norm_f$", "final_norm")),
)
def falcon_mamba(c: Config) -> dict:
    """FalconMambaConfig / FalconMambaForCausalLM: MambaConfig's keys and defaults (intermediate_size as stated, else
    expand · hidden; time_step_rank "auto" = ⌈hidden / 16⌉), one FalconMambaRMSNorm before the mixer, a final
    norm_f, lm_head tied unless tie_word_embeddings is false (default true). FalconMambaMixer is MambaMixer with
    FalconMambaWeightlessRMSNorm on dt (time_step_rank features), B and C (state_size each) after x_proj: no
    parameters (their ``weight`` is a non-persistent buffer of ones, d_inner, state and state elements, which the
    kernel path reads and the torch path does not), elementwise work only (bcdt_norm)."""
    return {
        **common(c, tie=True),
        "positions": "none",
        "attention": mamba_mixer(c, bcdt_norm=True),
        "ffn": {"kind": "none"},
        "norm": rms(per_layer=1),
    }
