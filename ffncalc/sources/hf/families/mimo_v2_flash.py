"""MiMo-V2-Flash (Xiaomi 2025): sliding-window and global layers with their own KV heads, value heads narrower
than query and key heads, attention sinks on the sliding-window layers, and a mixture after one dense layer."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, common, family, gated, layer_types, rms, stack, window


def _rotary(c: Config, kind: str, head_dim: int) -> int:
    """int(head_dim · partial_rotary_factor) of this layer type's rope_parameters (MiMoV2FlashRotaryEmbedding;
    0.334 where the key or the whole table is absent, as MiMoV2FlashConfig.__post_init__ fills it)."""
    table = c.data.get("rope_parameters")
    params = table.get(kind) if isinstance(table, dict) else None
    factor = params.get("partial_rotary_factor", 0.334) if isinstance(params, dict) else 0.334
    return int(head_dim * factor)


@family("mimo_v2_flash", layer_modules=((r"self_attn$", "attn.sinks"),) + MOE_MODULES)
def mimo_v2_flash(c: Config) -> dict:
    """MiMoV2FlashConfig / MiMoV2FlashDecoderLayer: Llama's pre-norm layer. MiMoV2FlashAttention: query and key
    heads of head_dim (default 192), value heads of v_head_dim (default 128), so o reads heads × v_head_dim;
    attention_bias (default false) on q, k and v, never on o; sliding-window layers have twice
    num_key_value_heads (default 4) and a learned sink logit per head (sinks), global layers neither.
    layer_types default: global at layer 0 and every sixth layer, sliding-window elsewhere, of sliding_window
    positions (default 129; a stated sliding_window_size w makes it w + 1). Rotary over int(head_dim ·
    partial_rotary_factor) features of each head, per layer type (default 0.334). mlp_layer_types default: a
    dense MiMoV2FlashMLP of intermediate_size first, then MiMoV2FlashMoE: a bias-free sigmoid router over
    n_routed_experts (default 256; its e_score_correction_bias is a buffer), num_experts_per_tok (default 8) of
    SwiGLU experts of moe_intermediate_size (default 2048), no shared expert. The MTP modules a checkpoint may
    carry (model.mtp) are not built."""
    n = c.int("num_hidden_layers")
    heads, kv = c.int("num_attention_heads"), c.int("num_key_value_heads", 4)
    head_dim, v_head_dim = c.int("head_dim", 192), c.int("v_head_dim", 128)
    bias = c.bool("attention_bias", False)
    size = c.int("sliding_window_size") + 1 if c.has("sliding_window_size") else window(c, 129)
    types = layer_types(c, lambda i: "full_attention" if i == 0 or not (i + 1) % 6 else "sliding_attention")
    mlp = c.data.get("mlp_layer_types") or ["dense"] + ["sparse"] * (n - 1)
    if not isinstance(mlp, list) or len(mlp) != n or any(t not in ("dense", "sparse") for t in mlp):
        raise c.fail("mlp_layer_types", f"expected a list of {n} of dense and sparse, got {mlp!r}")
    dense = gated(c)
    moe = {
        "kind": "moe",
        "n_experts": c.int("n_routed_experts", 256),
        "top_k": c.int("num_experts_per_tok", 8),
        "expert": gated(c, width=c.int("moe_intermediate_size", 2048)),
    }

    def attn(kind: str) -> dict:
        swa = kind == "sliding_attention"
        out = {
            "n_heads": heads,
            "n_kv_heads": 2 * kv if swa else kv,
            "head_dim": head_dim,
            "v_head_dim": v_head_dim,
            "qkv_bias": bias,
            "o_bias": False,
            "rotary_dim": _rotary(c, kind, head_dim),
        }
        return {**out, "window": size, "sinks": True} if swa else out

    layers = [{"attention": attn(t), "ffn": moe if m == "sparse" else dense} for t, m in zip(types, mlp)]
    return {**common(c, tie=False, context_default=131_072), **stack(layers), "norm": rms()}
