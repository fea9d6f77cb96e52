"""Beam (Reflection 2026): sliding-window layers with rotary positions and global layers without, a biased
sigmoid output gate in every attention, norms before and after each sublayer, and group-routed mixtures after
dense layers, set per layer by mlp_layer_types."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, layer_types, rms, stack, window


@family("beam", layer_modules=((r"self_attn\.gate_proj$", "attn.g"), (r"self_attn$", "attn.g_bias")) + MOE_MODULES)
def beam(c: Config) -> dict:
    """BeamConfig / BeamDecoderLayer: four RMSNorms a layer, input_layernorm before attention and
    post_attention_layernorm on its output, pre_feedforward_layernorm before the FFN and
    post_feedforward_layernorm on its output; each residual add scales both sides by constants of the layer's
    depth (no parameter). BeamAttention (Qwen3-MoE's): attention_bias (default false) on q, k, v and o; an RMSNorm
    over head_dim shared by every query head and one by every key head; head_dim defaults to 128,
    num_key_value_heads to 8; a bias-free gate_proj of the layer's input, one gate per output feature, plus
    gate_bias, one learned bias per head, sigmoid(gate) ⊙ the heads' output before o. layer_types default: every
    sixth layer and the last global, the others sliding over sliding_window keys (default 512). A layer type
    whose rope_parameters entry is null takes no rotary positions (by default the global layers; their queries
    are scaled by position instead, no parameter). mlp_layer_types default: three dense BeamMLPs of
    intermediate_size (default 20480), then BeamMoE: a bias-free sigmoid router (BeamTopKRouter.weight; its
    e_score_correction_bias is a buffer; n_group and topk_group choose groups first, no parameter) over
    num_experts (default 256), num_experts_per_tok (default 8) of SwiGLU experts of moe_intermediate_size
    (default 2560), no shared expert. final_logit_softcapping acts on the logits only."""
    n = c.int("num_hidden_layers")
    bias = c.bool("attention_bias", False)
    full = {
        **attention(c, head_dim=128, kv_heads=8, qkv_bias=bias, o_bias=bias, qk_norm="head"),
        "softplus_gate": "element",
        "gate_activation": "sigmoid",
        "gate_bias": True,
    }
    size = window(c, 512)

    def default_type(i: int) -> str:
        return "full_attention" if i == n - 1 or not (i + 1) % 6 else "sliding_attention"

    types = layer_types(c, default_type)
    kinds = c.data.get("mlp_layer_types") or ["dense"] * min(3, n) + ["sparse"] * (n - min(3, n))
    if not isinstance(kinds, list) or len(kinds) != n or any(t not in ("dense", "sparse") for t in kinds):
        raise c.fail("mlp_layer_types", f"expected a list of {n} of dense and sparse, got {kinds!r}")
    table = c.data.get("rope_parameters")
    if not isinstance(table, dict) or not any(k in table for k in ("sliding_attention", "full_attention")):
        table = {"sliding_attention": {}, "full_attention": None}  # BeamConfig.__post_init__'s
    moe = {
        "kind": "moe",
        "n_experts": c.int("num_experts", 256),
        "top_k": c.int("num_experts_per_tok", 8),
        "expert": gated(c, width=c.int("moe_intermediate_size", 2560)),
    }
    ffns = {"sparse": moe, "dense": gated(c, width=c.int("intermediate_size", 20480))}

    def attn(kind: str) -> dict:
        out = dict(full)
        if kind == "sliding_attention" and size is not None:
            out["window"] = size
        if table.get(kind) is None:
            out["rope"] = False
        return out

    layers = [{"attention": attn(t), "ffn": ffns[m]} for t, m in zip(types, kinds)]
    return {**common(c, tie=False, context_default=8192), **stack(layers), "norm": rms(per_layer=4)}
