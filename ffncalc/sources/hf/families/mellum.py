"""Mellum 2 (JetBrains 2026): Qwen3-MoE's attention and routed experts, with sliding-window and global layers and
dense or mixture layers each set per layer."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, layer_types, rms, stack, window


@family("mellum", layer_modules=MOE_MODULES)
def mellum(c: Config) -> dict:
    """MellumConfig / MellumDecoderLayer: norms before each sublayer. MellumAttention (Qwen3-MoE's): attention_bias
    (default false) on q, k, v and o; an RMSNorm over head_dim shared by every query head and one by every key
    head; head_dim defaults to 128; rotary positions turn every feature of each head (rope_parameters per layer
    type change only their frequencies). layer_types default: every layer global; a sliding_attention
    layer attends sliding_window keys (default 1024). mlp_layer_types default: every layer sparse, a
    MellumSparseMoeBlock: a bias-free router over num_experts (default 64), num_experts_per_tok (default 8) of
    SwiGLU experts of moe_intermediate_size (default 896), no shared expert; a dense layer is a MellumMLP of
    intermediate_size (default 7168). The multi-token-prediction layer a checkpoint may carry (mtp.*,
    num_mtp_layers) is not part of MellumForCausalLM."""
    n = c.int("num_hidden_layers")
    bias = c.bool("attention_bias", False)
    base = attention(c, head_dim=128, qkv_bias=bias, o_bias=bias, qk_norm="head")
    types = layer_types(c, lambda i: "full_attention")
    kinds = c.data.get("mlp_layer_types") or ["sparse"] * n
    if not isinstance(kinds, list) or len(kinds) != n or any(t not in ("dense", "sparse") for t in kinds):
        raise c.fail("mlp_layer_types", f"expected a list of {n} of dense and sparse, got {kinds!r}")
    moe = {
        "kind": "moe",
        "n_experts": c.int("num_experts", c.int("num_local_experts", 64)),
        "top_k": c.int("num_experts_per_tok", 8),
        "expert": gated(c, width=c.int("moe_intermediate_size", 896)),
    }
    ffns = {"sparse": moe, "dense": gated(c, width=c.int("intermediate_size", 7168))}
    size = window(c, 1024)

    def attn(kind: str) -> dict:
        return {**base, "window": size} if kind == "sliding_attention" and size is not None else base

    layers = [{"attention": attn(t), "ffn": ffns[m]} for t, m in zip(types, kinds)]
    return {**common(c, tie=False, context_default=131_072), **stack(layers), "norm": rms()}
