"""Step 3.5 (StepFun): the language model of Step3p7ForConditionalGeneration (Step3p7TextConfig, model_type step3p5):
query and key RMSNorms over each head, a sigmoid output gate per head, sliding-window layers with a head count of their
own, and a mixture of sigmoid-routed experts beside one shared expert after dense layers."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, layer_types, rms, stack, window


@family(
    "step3p5",
    layer_modules=((r"self_attn\.g_proj$", "attn.g"), (r"mlp\.gate$", "ffn.router"), (r"mlp\.shared_experts$", "ffn.shared"))
    + MOE_MODULES,
)
def step3p5(c: Config) -> dict:
    """Step3p7TextConfig / Step3p7DecoderLayer: Step3p7Attention's q, k, v and o with attention_bias (default false),
    q_norm and k_norm (RMSNorms of head_dim, shared by the heads), g_proj (no bias), one gate per head where gating
    (default true; else one per output feature), sigmoid(gate) ⊙ each head's output before o; layer_types (default:
    every layer full_attention), the sliding_attention layers over sliding_window keys with num_sliding_attention_heads
    heads (default: attention_other_setting's, else num_attention_heads; per_layer_config where the file states it);
    mlp_layer_types (default: dense before layer 3, sparse from it), a dense Step3p7MLP of intermediate_size, and
    Step3p7SparseMoeBlock: a bias-free sigmoid router over n_routed_experts (its e_score_correction_bias a buffer),
    num_experts_per_tok SwiGLU experts of moe_intermediate_size, and one shared Step3p7MLP of share_expert_dim;
    mlp_bias on the dense and shared MLPs. Gemma-style RMSNorms (1 + weight): the same parameters."""
    n = c.int("num_hidden_layers")
    bias = c.bool("attention_bias", False)
    per_head = c.data.get("gating", True) in (True, "per-head")
    base = {
        **attention(c, head_dim=128, qkv_bias=bias, o_bias=bias, qk_norm="head"),
        "softplus_gate": "head" if per_head else "element",
        "gate_activation": "sigmoid",
    }
    types = layer_types(c, lambda i: "full_attention")
    mlp_types = c.data.get("mlp_layer_types") or ["sparse" if i >= 3 else "dense" for i in range(n)]
    if not isinstance(mlp_types, list) or len(mlp_types) != n or not set(mlp_types) <= {"dense", "sparse"}:
        raise c.fail("mlp_layer_types", f"expected a list of {n} of dense and sparse, got {mlp_types!r}")
    overrides = c.data.get("per_layer_config") or {}
    if not isinstance(overrides, dict):
        raise c.fail("per_layer_config", f"expected an object of layer overrides, got {overrides!r}")
    # num_sliding_attention_heads, or the older files' attention_other_setting, or the layers' own (__post_init__)
    other = c.data.get("attention_other_setting")
    sliding_heads = base["n_heads"]
    if c.data.get("num_sliding_attention_heads") is not None:
        sliding_heads = c.int("num_sliding_attention_heads")
    elif isinstance(other, dict) and isinstance(other.get("num_attention_heads"), int):
        sliding_heads = other["num_attention_heads"]
    size = window(c, None)
    mlp_bias = c.bool("mlp_bias", False)
    moe = {
        "kind": "moe",
        "n_experts": c.int("n_routed_experts", 288),
        "top_k": c.int("num_experts_per_tok", 8),
        "expert": gated(c, width=c.int("moe_intermediate_size", 1280)),
        "n_shared_experts": 1,
        "shared": gated(c, width=c.int("share_expert_dim", 1280), bias=mlp_bias),
    }
    dense = gated(c, bias=mlp_bias)

    def attn(i: int, kind: str) -> dict:
        stated = overrides.get(str(i), overrides.get(i)) or {}
        heads = stated.get("num_attention_heads", sliding_heads if kind == "sliding_attention" else base["n_heads"])
        out = {**base, "n_heads": heads}
        if kind == "sliding_attention" and size is not None:
            out["window"] = size
        return out

    layers = [{"attention": attn(i, t), "ffn": moe if mlp_types[i] == "sparse" else dense} for i, t in enumerate(types)]
    return {**common(c, tie=False, context_default=128_000), **stack(layers), "norm": rms()}
