"""Nemotron-H (NVIDIA 2025, arXiv:2504.03624; Nemotron Nano 2, Nemotron 3 Nano): a hybrid stack whose every
layer is one block alone, a Mamba-2 mixer, attention, a squared-ReLU MLP or a mixture of such MLPs, as
nemotron_h (transformers 5.23.0, models/nemotron_h)."""

from __future__ import annotations

from ..config import Config, common, family, rms, stack
from .mamba2 import MAMBA2_MODULES

# hybrid_override_pattern's characters (NemotronHConfig._pattern_to_list), and the names layers_block_type uses
PATTERN = {"M": "linear_attention", "E": "moe", "*": "full_attention", "-": "mlp"}
LEGACY = {"mamba": "linear_attention", "attention": "full_attention"}  # remap_legacy_layer_types
KINDS = ("linear_attention", "full_attention", "mlp", "moe")

# NemotronHBlock holds its one block as "mixer", whatever it is: Mamba-2's modules (dt_bias, A_log and D are
# Parameters of the mixer itself, one fused component), attention's projections, an MLP's, or a NemotronHMoE's
# router (gate, a weight and a buffer), fused experts (3-D up_proj and down_proj) and shared_experts.
NEMOTRON_H_MODULES = MAMBA2_MODULES + (
    (r"^norm$", "norms"),
    (r"^mixer\.o_proj$", "attn.o"),
    (r"^mixer\.up_proj$", "ffn.up"),
    (r"^mixer\.down_proj$", "ffn.down"),
    (r"^mixer\.gate$", "ffn.router"),
    (r"^mixer\.experts$", "ffn.experts"),
    (r"^mixer\.shared_experts\b", "ffn.shared"),
)


def block_types(c: Config) -> list[str]:
    """NemotronHConfig.__post_init__: layers_block_type (or layer_types, its attribute_map alias) as stated, with
    the legacy names mamba and attention remapped; else hybrid_override_pattern, one character a layer; else
    the class's default [linear_attention, moe, full_attention, mlp]. num_hidden_layers is ignored: the
    number of layers is the list's length."""
    key = next((k for k in ("layers_block_type", "layer_types") if c.data.get(k) is not None), None)
    if key is not None:
        stated = c.data[key]
        if not isinstance(stated, list) or not stated or not all(isinstance(t, str) for t in stated):
            raise c.fail(key, f"expected a list of layer types, got {stated!r}")
        types = [LEGACY.get(t, t) for t in stated]
        if any(t not in KINDS for t in types):
            raise c.fail(key, f"each entry must be one of {', '.join(KINDS)} (or mamba, attention); got {stated!r}")
        return types
    pattern = c.data.get("hybrid_override_pattern")
    if pattern is None:
        return ["linear_attention", "moe", "full_attention", "mlp"]
    if not isinstance(pattern, str) or not pattern or any(ch not in PATTERN for ch in pattern):
        raise c.fail("hybrid_override_pattern", f"expected a string of M, E, * and -, got {pattern!r}")
    return [PATTERN[ch] for ch in pattern]


def legacy_int(c: Config, key: str, old: str, default: int) -> int:
    """NemotronHConfig.__post_init__ takes a legacy key (mamba_n_groups, mamba_d_conv) over the new one."""
    return c.int(old) if c.has(old) else c.int(key, default)


def legacy_bool(c: Config, key: str, old: str, default: bool) -> bool:
    return c.bool(old, default) if c.has(old) else c.bool(key, default)


@family("nemotron_h", layer_modules=NEMOTRON_H_MODULES, top_modules=((r"embeddings$", "embed"), (r"norm_f$", "final_norm")))
def nemotron_h(c: Config) -> dict:
    """NemotronHConfig / NemotronHForCausalLM, NemotronHBlock: one NemotronHRMSNorm (a weight) before the layer's one
    block (mixer) by block_types: NemotronHMamba2Mixer (mamba_num_heads of mamba_head_dim, default 128 × 64;
    ssm_state_size 128, n_groups 8, conv_kernel 4; use_bias (default false, not mamba_proj_bias) on in_proj and
    out_proj, use_conv_bias (default true), mamba_hidden_act silu), NemotronHAttention (q/k/v/o with no bias whatever
    attention_bias says, num_attention_heads 32, num_key_value_heads 8, head_dim 128 (attention_head_dim, an older
    remote-code key, is not read), and no positions at all: the model applies no rotary, so positions none),
    NemotronHMLP (up_proj, down_proj, mlp_hidden_act relu2, mlp_bias, of intermediate_size 21504) or NemotronHMoE: a
    bias-free router (NemotronHTopkRouter.weight, sigmoid scores where the spec counts a softmax;
    e_score_correction_bias is a buffer) over n_routed_experts (default 8) non-gated experts of moe_intermediate_size
    (7688) fused as 3-D up_proj and down_proj with no bias, num_experts_per_tok (2) per token, and one shared
    NemotronHMLP of moe_shared_expert_intermediate_size (7688) whatever n_shared_experts says. A final norm_f.
    lm_head is never tied: NemotronHForCausalLM declares no tied weights, so tie_word_embeddings changes nothing.
    moe_latent_size (fc1_latent_proj and fc2_latent_proj around experts that work in the latent width) has no spec
    form: such a config is refused. The multi-token-prediction layers (num_nextn_predict_layers) are not part of
    NemotronHForCausalLM."""
    if c.data.get("moe_latent_size") is not None:
        raise c.fail(
            "moe_latent_size",
            "latent MoE projections (NemotronHMoE.fc1_latent_proj and fc2_latent_proj: "
            "hidden -> latent before the experts, latent -> hidden after them, experts "
            "of latent width) have no spec form yet",
        )
    types = block_types(c)
    mixer = {
        "kind": "mamba2",
        "n_heads": c.int("mamba_num_heads", 128),
        "head_dim": c.int("mamba_head_dim", 64),
        "state_size": c.int("ssm_state_size", 128),
        "n_groups": legacy_int(c, "n_groups", "mamba_n_groups", 8),
        "conv_kernel": legacy_int(c, "conv_kernel", "mamba_d_conv", 4),
        "use_bias": c.bool("use_bias", False),
        "use_conv_bias": legacy_bool(c, "use_conv_bias", "mamba_conv_bias", True),
        "activation": c.activation("mamba_hidden_act", "silu"),
    }
    heads = c.int("num_attention_heads", 32)
    attn = {
        "kind": "mha",
        "n_heads": heads,
        "n_kv_heads": c.int("num_key_value_heads", 8 if "num_key_value_heads" not in c.data else heads),
        "head_dim": c.int("head_dim", 128),
        "qkv_bias": False,
        "o_bias": False,
    }
    act, mlp_bias = c.activation("mlp_hidden_act", "relu2"), c.bool("mlp_bias", False)
    mlp = {"kind": "dense", "d_ff": c.int("intermediate_size", 21504), "activation": act, "bias": mlp_bias}
    # attribute_map: num_local_experts is n_routed_experts under another name
    experts = c.int("n_routed_experts") if c.has("n_routed_experts") else c.int("num_local_experts", 8)
    moe = {
        "kind": "moe",
        "n_experts": experts,
        "top_k": c.int("num_experts_per_tok", 2),
        "expert": {"kind": "dense", "d_ff": c.int("moe_intermediate_size", 7688), "activation": act, "bias": False},
        "n_shared_experts": 1,
        "shared": {"kind": "dense", "d_ff": c.int("moe_shared_expert_intermediate_size", 7688), "activation": act, "bias": mlp_bias},
    }
    none = {"kind": "none"}
    layer = {
        "linear_attention": {"attention": mixer, "ffn": none},
        "full_attention": {"attention": attn, "ffn": none},
        "mlp": {"attention": none, "ffn": mlp},
        "moe": {"attention": none, "ffn": moe},
    }
    n = len(types)
    base = common(c.with_defaults({"num_hidden_layers": n}), tie=False, context_default=4096)
    return {
        **base,
        "n_layers": n,
        "tie_embeddings": False,
        "positions": "none",
        **stack([layer[t] for t in types]),
        "norm": rms(per_layer=1),
    }
