"""LFM2 and LFM2-MoE (Liquid AI 2025, "LFM2 Technical Report", arXiv:2511.23404): gated short-convolution layers and
a few grouped-query attention layers, every one followed by a SwiGLU MLP or, in LFM2-MoE past its first dense
layers, a sigmoid-routed mixture of SwiGLU experts, as lfm2 and lfm2_moe (transformers 5.23.0, models/lfm2 and
models/lfm2_moe)."""

from __future__ import annotations

from ..config import Config, attention, common, family, rms, stack

# Lfm2DecoderLayer's modules: conv (Lfm2ShortConv: in_proj, conv, out_proj) or self_attn (q_proj, k_proj, v_proj,
# out_proj, q_layernorm and k_layernorm over head_dim), feed_forward (Lfm2MLP: w1 the gate, w3 the up projection, w2
# the down projection; Lfm2MoeSparseMoeBlock: gate, the router's weight, and experts, fused 3-D gate_up_proj and
# down_proj), operator_norm and ffn_norm. Lfm2Model's final norm is named embedding_norm, though it comes last.
LFM2_MODULES = (
    (r"^conv\.in_proj$", "conv.in_proj"),
    (r"^conv\.conv$", "conv.conv"),
    (r"^conv\.out_proj$", "conv.out_proj"),
    (r"^self_attn\.out_proj$", "attn.o"),
    (r"^self_attn\.q_layernorm$", "attn.q_norm"),
    (r"^self_attn\.k_layernorm$", "attn.k_norm"),
    (r"^feed_forward\.w1$", "ffn.gate"),
    (r"^feed_forward\.w3$", "ffn.up"),
    (r"^feed_forward\.w2$", "ffn.down"),
    (r"^feed_forward\.gate$", "ffn.router"),
    (r"^feed_forward\.experts$", "ffn.experts"),
    (r"^(operator_norm|ffn_norm)$", "norms"),
)
TOP_MODULES = ((r"embedding_norm$", "final_norm"),)


def mlp_width(c: Config) -> int:
    """Lfm2MLP's width: intermediate_size (block_ff_dim, an older key, replaces it; default 12288); with
    block_auto_adjust_ff_dim (default true) int(2/3 of it), then, where block_ffn_dim_multiplier is not null (default
    1.0), int(multiplier times that) rounded up to a multiple of block_multiple_of (default 256)."""
    width = c.int("block_ff_dim") if c.has("block_ff_dim") else c.int("intermediate_size", 12288)
    if c.bool("block_auto_adjust_ff_dim", True):
        width = int(2 * width / 3)
        if c.data.get("block_ffn_dim_multiplier", 1.0) is not None:
            width = int(c.float("block_ffn_dim_multiplier", 1.0) * width)
            multiple = c.int("block_multiple_of", 256)
            width = multiple * ((width + multiple - 1) // multiple)
    return width


def tied(c: Config) -> bool:
    """tie_word_embeddings (default true); an older key, tie_embedding, replaces it where present."""
    return c.bool("tie_embedding", True) if c.has("tie_embedding") else c.bool("tie_word_embeddings", True)


def mixers(c: Config, types: list[str]) -> list[dict]:
    """Per layer: Lfm2ShortConv where the layer type is "conv", Lfm2Attention otherwise (any other name). The
    attention: no bias on q/k/v/out_proj, head_dim as stated or hidden_size / heads, 8 KV heads by default, an
    RMSNorm over head_dim shared by every head on queries and keys, rotary over all of each head. The convolution:
    kernel conv_L_cache (default 3), conv_bias (default false) on in_proj, the convolution and out_proj."""
    attn = {"kind": "mha", **attention(c, qk_norm="head", kv_heads=8)}
    conv = {"kind": "short_conv", "conv_kernel": c.int("conv_L_cache", 3), "bias": c.bool("conv_bias", False)}
    return [conv if t == "conv" else attn for t in types]


@family("lfm2", layer_modules=LFM2_MODULES, top_modules=TOP_MODULES)
def lfm2(c: Config) -> dict:
    """Lfm2Config / Lfm2DecoderLayer: operator_norm, then Lfm2ShortConv or Lfm2Attention by layer_types (when
    absent: attention in the layers of full_attn_idxs, every layer when that is absent too), then ffn_norm and a
    bias-free SwiGLU Lfm2MLP of ``mlp_width``. RMSNorms with a weight; a final norm (embedding_norm); lm_head tied
    unless tie_word_embeddings (or tie_embedding) is false."""
    n = c.int("num_hidden_layers", 32)
    types = c.data.get("layer_types")
    if types is None:
        idxs = c.data.get("full_attn_idxs")
        attn = set(range(n)) if idxs is None else set(c.int_list("full_attn_idxs"))
        types = ["full_attention" if i in attn else "conv" for i in range(n)]
    elif not isinstance(types, list) or len(types) != n or not all(isinstance(t, str) for t in types):
        raise c.fail("layer_types", f"expected a list of {n} layer types, got {types!r}")
    mlp = {"kind": "gated", "d_ff": mlp_width(c), "activation": "silu", "bias": False}
    layers = [{"attention": m, "ffn": mlp} for m in mixers(c, types)]
    return {**common(c, tie=True, context_default=128_000), "tie_embeddings": tied(c), **stack(layers), "norm": rms()}


@family("lfm2_moe", layer_modules=LFM2_MODULES, top_modules=TOP_MODULES)
def lfm2_moe(c: Config) -> dict:
    """Lfm2MoeConfig / Lfm2MoeDecoderLayer: LFM2's layers (layer_types is required: the config class derives none),
    with a bias-free SwiGLU Lfm2MoeMLP of intermediate_size (default 7168, not adjusted) in the first
    num_dense_layers (default 2) and Lfm2MoeSparseMoeBlock in the rest: a bias-free router (gate.weight; sigmoid
    scores where the spec counts a softmax; expert_bias, with use_expert_bias, is a buffer) over num_experts (32)
    SwiGLU experts of moe_intermediate_size (1792) fused as 3-D gate_up_proj and down_proj, num_experts_per_tok (4)
    per token, no shared expert. lm_head tied unless tie_word_embeddings (or tie_embedding) is false."""
    n = c.int("num_hidden_layers", 32)
    types = c.data.get("layer_types")
    if not isinstance(types, list) or len(types) != n or not all(isinstance(t, str) for t in types):
        raise c.fail("layer_types", f"expected a list of {n} layer types, got {types!r}")
    dense = {"kind": "gated", "d_ff": c.int("intermediate_size", 7168), "activation": "silu", "bias": False}
    moe = {
        "kind": "moe",
        "n_experts": c.int("num_experts", 32),
        "top_k": c.int("num_experts_per_tok", 4),
        "expert": {"kind": "gated", "d_ff": c.int("moe_intermediate_size", 1792), "activation": "silu", "bias": False},
    }
    first = c.int("num_dense_layers", 2, positive=False)
    layers = [{"attention": m, "ffn": dense if i < first else moe} for i, m in enumerate(mixers(c, types))]
    return {**common(c, tie=True, context_default=128_000), "tie_embeddings": tied(c), **stack(layers), "norm": rms()}
