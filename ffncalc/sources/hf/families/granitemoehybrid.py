"""IBM Granite 4.0-H (2025): Mamba-2 layers and a few attention layers without positions, every layer followed by a
shared SwiGLU MLP and, where the model has experts, a mixture of SwiGLU experts beside it, as granitemoehybrid
(transformers 5.23.0, models/granitemoehybrid)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms, stack
from .bamba import mamba_mixer

# GraniteMoeHybridDecoderLayer's modules: mamba (GraniteMoeHybridMambaLayer, Mamba2Mixer's modules; dt_bias, A_log
# and D are Parameters of the mixer itself, one fused component) or self_attn; block_sparse_moe (a router's weight
# and fused 3-D experts) where num_local_experts > 0; shared_mlp (GraniteMoeHybridMLP: input_linear holds gate and
# up, output_linear is down), which is the mixture's shared expert or, without experts, the layer's whole MLP: one
# fused component either way, against our shared expert or our gate, up and down.
GRANITE_HYBRID_MODULES = (
    (r"^mamba\.in_proj$", "mixer.in_proj"),
    (r"^mamba\.conv1d$", "mixer.conv1d"),
    (r"^mamba$", "mixer.dt_bias+A_log+D"),
    (r"^mamba\.norm$", "mixer.norm"),
    (r"^mamba\.out_proj$", "mixer.out_proj"),
    (r"^shared_mlp\.(input|output)_linear$", "ffn.shared+gate+up+down"),
    (r"^block_sparse_moe\.router$", "ffn.router"),
    (r"^block_sparse_moe\.experts$", "ffn.experts"),
)
LEGACY = {"mamba": "linear_attention", "attention": "full_attention"}  # transformers' remap_legacy_layer_types


@family("granitemoehybrid", layer_modules=GRANITE_HYBRID_MODULES)
def granitemoehybrid(c: Config) -> dict:
    """GraniteMoeHybridConfig / GraniteMoeHybridDecoderLayer: input_layernorm, then GraniteMoeHybridMambaLayer where
    the layer type is linear_attention (mamba, the legacy name; layer_types, alias layers_block_type, defaults to
    every layer) and GraniteMoeHybridAttention otherwise, then post_attention_layernorm and the FFN:
    GraniteMoeHybridMoE (a bias-free router over num_local_experts (default 8) SwiGLU experts of intermediate_size
    (11008), num_experts_per_tok (2) per token, softmax over the chosen logits) plus shared_mlp, a SwiGLU
    GraniteMoeHybridMLP of shared_intermediate_size (1024), added to it; with num_local_experts 0 the layer has
    shared_mlp alone. The mixer: BambaMixer's keys and defaults (128 heads, state 256, 1 group, kernel 4,
    mamba_proj_bias on in_proj and out_proj, mamba_conv_bias; d_inner = mamba_expand · hidden_size). The attention:
    attention_bias (default false) on q/k/v/o, KV heads as many as query heads by default, head_dim hidden_size /
    heads unless stated, rotary positions only where position_embedding_type is "rope" (default null: none). A
    final norm; lm_head tied only with tie_word_embeddings (default false). embedding_multiplier,
    attention_multiplier, residual_multiplier and logits_scaling are constant scalars, not parameters."""
    n = c.int("num_hidden_layers", 32)
    key = "layer_types" if c.data.get("layer_types") is not None else "layers_block_type"
    types = c.data.get(key)
    if types is None:
        types = ["linear_attention"] * n
    elif not isinstance(types, list) or len(types) != n or not all(isinstance(t, str) for t in types):
        raise c.fail(key, f"expected a list of {n} layer types, got {types!r}")
    types = [LEGACY.get(t, t) for t in types]
    bias = c.bool("attention_bias", False)
    attn = {"kind": "mha", **attention(c, qkv_bias=bias, o_bias=bias)}
    mixer = mamba_mixer(c)
    shared = gated(c, width=c.int("shared_intermediate_size", 1024))
    experts = c.int("num_local_experts", 8, positive=False)
    ffn = (
        shared
        if not experts
        else {
            "kind": "moe",
            "n_experts": experts,
            "top_k": c.int("num_experts_per_tok", 2),
            "expert": gated(c, width=c.int("intermediate_size", 11008)),
            "n_shared_experts": 1,
            "shared": shared,
        }
    )
    layers = [{"attention": mixer if t == "linear_attention" else attn, "ffn": ffn} for t in types]
    rope = c.data.get("position_embedding_type") == "rope"
    return {**common(c, tie=False), "positions": "rotary" if rope else "none", **stack(layers), "norm": rms()}
