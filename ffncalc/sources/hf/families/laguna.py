"""Laguna (Poolside 2026): grouped-query attention with heads stated per layer, a softplus output gate,
sliding-window and global layers, and a mixture with a learned selection bias after a dense first layer."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, common, family, gated, layer_types, rms, stack, window

# LagunaAttention's softplus gate (g_proj); LagunaTopKRouter holds its weight and e_score_correction_bias (a
# parameter, not a buffer) in one module, mlp.gate.
LAGUNA_MODULES = ((r"self_attn\.g_proj$", "attn.g"), (r"mlp\.gate$", "ffn.router+correction_bias"))

# LagunaConfig.__post_init__'s rope_parameters when none are given: the rotated fraction of each head per
# layer type (LagunaRotaryEmbedding: int(head_dim · partial_rotary_factor), 1.0 where a type leaves it out).
ROTARY = {"full_attention": 0.5, "sliding_attention": 1.0}


def _per_layer(c: Config, key: str, n: int, allowed: set | None = None) -> list | None:
    value = c.data.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != n or (allowed is not None and not set(value) <= allowed):
        raise c.fail(key, f"expected {n} entries{', each one of ' + ', '.join(sorted(allowed)) if allowed else ''}, got {value!r}")
    return value


@family("laguna", layer_modules=LAGUNA_MODULES + MOE_MODULES)
def laguna(c: Config) -> dict:
    """LagunaConfig / LagunaDecoderLayer: Llama's pre-norm layer. LagunaAttention: num_attention_heads_per_layer
    (default num_attention_heads, 48, in every layer) query heads and num_key_value_heads (8) KV heads of head_dim
    (128), attention_bias (false) on q, k, v and o; q_norm and k_norm over head_dim; a bias-free g_proj whose
    softplus scales the heads' output before o, one gate per head (gating true or "per-head", the default) or
    one per feature (any other value). layer_types (default all "full_attention"): "sliding_attention" layers
    attend sliding_window (512) positions. Rotary over int(head_dim · partial_rotary_factor) features, per layer
    type from rope_parameters (default 0.5 global, 1.0 sliding). mlp_layer_types (default "dense" first, then
    "sparse"): a bias-free MLP of intermediate_size (8192), or LagunaSparseMoeBlock: a sigmoid router over
    num_experts (256) whose e_score_correction_bias is a parameter, num_experts_per_tok (8) SwiGLU experts of
    moe_intermediate_size (512), and one shared MLP of shared_expert_intermediate_size (512), ungated."""
    n = c.int("num_hidden_layers")
    heads = _per_layer(c, "num_attention_heads_per_layer", n) or [c.int("num_attention_heads", 48)] * n
    if not all(isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in heads):
        raise c.fail("num_attention_heads_per_layer", f"expected positive integers, got {heads!r}")
    kinds = layer_types(c, lambda i: "full_attention")
    mlp = _per_layer(c, "mlp_layer_types", n, {"dense", "sparse"}) or ["dense"] + ["sparse"] * (n - 1)
    head_dim, kv, bias = c.int("head_dim", 128), c.int("num_key_value_heads", 8), c.bool("attention_bias", False)
    gating = c.data.get("gating", True)
    gate = "head" if gating is True or gating == "per-head" else "element"
    table = c.data.get("rope_parameters")
    size = window(c, 512)

    def rotary(kind: str) -> int:
        if table is None:
            return int(head_dim * ROTARY.get(kind, 1.0))
        params = table.get(kind) if isinstance(table, dict) else None
        if not isinstance(params, dict):
            raise c.fail("rope_parameters", f"expected an entry for each layer type, none for {kind!r}")
        return int(head_dim * Config(params, c.text, c.source, start=c.start).float("partial_rotary_factor", 1.0))

    def attn(h: int, kind: str) -> dict:
        if kind not in ROTARY:
            raise c.fail("layer_types", f"unknown layer type {kind!r} (full_attention or sliding_attention)")
        out = {
            "n_heads": h,
            "n_kv_heads": kv,
            "head_dim": head_dim,
            "qkv_bias": bias,
            "o_bias": bias,
            "qk_norm": "head",
            "softplus_gate": gate,
            "rotary_dim": rotary(kind),
        }
        return {**out, "window": size} if kind == "sliding_attention" and size else out

    moe = {
        "kind": "moe",
        "n_experts": c.int("num_experts", 256),
        "top_k": c.int("num_experts_per_tok", 8),
        "expert": gated(c, width=c.int("moe_intermediate_size", 512)),
        "correction_bias": True,
        "n_shared_experts": 1,
        "shared": gated(c, width=c.int("shared_expert_intermediate_size", 512)),
    }
    dense = gated(c, width=c.int("intermediate_size", 8192))
    layers = [{"attention": attn(h, k), "ffn": moe if m == "sparse" else dense} for h, k, m in zip(heads, kinds, mlp)]
    return {**common(c, tie=False, context_default=131_072), **stack(layers), "norm": rms()}
