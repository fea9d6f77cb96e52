"""Zamba2 (Zyphra 2024, arXiv:2411.15242): Mamba-2 layers, some of which also run one of num_mem_blocks weight-shared
transformer blocks on the hidden state and the input embeddings, as zamba2 (transformers 5.23.0, models/zamba2)."""

from __future__ import annotations

from ..config import Config, common, family, rms, stack

LEGACY = {"mamba": "linear_attention"}  # remap_legacy_layer_types
KINDS = ("linear_attention", "hybrid")

# Zamba2MambaDecoderLayer: mamba (Zamba2MambaMixer; dt_bias, A_log and D are Parameters of the mixer itself, one
# fused component) and input_layernorm; a hybrid layer (Zamba2HybridLayer) holds it as mamba_decoder, its own
# linear, and shared_transformer (Zamba2AttentionDecoderLayer, tied to the first layer of its block): self_attn with
# the adapter lists (one Sequential of two Linears per hybrid layer, nn.Identity where the slot is another block's),
# feed_forward (Zamba2MLP: gate_up_proj fused, down_proj, gate_up_proj_adapter_list), input_layernorm, pre_ff_layernorm.
ZAMBA2_MODULES = (
    (r"^shared_transformer\.input_layernorm$", "shared.input_norm"),
    (r"^shared_transformer\.pre_ff_layernorm$", "shared.pre_ff_norm"),
    (r"^shared_transformer\.self_attn\.q_proj$", "shared.attn.q"),
    (r"^shared_transformer\.self_attn\.k_proj$", "shared.attn.k"),
    (r"^shared_transformer\.self_attn\.v_proj$", "shared.attn.v"),
    (r"^shared_transformer\.self_attn\.o_proj$", "shared.attn.o"),
    (r"^shared_transformer\.self_attn\.linear_q_adapter_list\.\d+\.0$", "shared.attn.q_adapter.down"),
    (r"^shared_transformer\.self_attn\.linear_q_adapter_list\.\d+\.1$", "shared.attn.q_adapter.up"),
    (r"^shared_transformer\.self_attn\.linear_k_adapter_list\.\d+\.0$", "shared.attn.k_adapter.down"),
    (r"^shared_transformer\.self_attn\.linear_k_adapter_list\.\d+\.1$", "shared.attn.k_adapter.up"),
    (r"^shared_transformer\.self_attn\.linear_v_adapter_list\.\d+\.0$", "shared.attn.v_adapter.down"),
    (r"^shared_transformer\.self_attn\.linear_v_adapter_list\.\d+\.1$", "shared.attn.v_adapter.up"),
    (r"^shared_transformer\.feed_forward\.gate_up_proj$", "shared.ffn.gate+up"),
    (r"^shared_transformer\.feed_forward\.gate_up_proj_adapter_list\.\d+\.0$", "shared.ffn.adapter.down"),
    (r"^shared_transformer\.feed_forward\.gate_up_proj_adapter_list\.\d+\.1$", "shared.ffn.adapter.up"),
    (r"^shared_transformer\.feed_forward\.down_proj$", "shared.ffn.down"),
    (r"^linear$", "shared.linear"),
    (r"^(mamba_decoder\.)?mamba\.in_proj$", "mixer.in_proj"), (r"^(mamba_decoder\.)?mamba\.conv1d$", "mixer.conv1d"),
    (r"^(mamba_decoder\.)?mamba$", "mixer.dt_bias+A_log+D"), (r"^(mamba_decoder\.)?mamba\.norm$", "mixer.norm"),
    (r"^(mamba_decoder\.)?mamba\.out_proj$", "mixer.out_proj"),
    (r"^(mamba_decoder\.)?input_layernorm$", "norms"),
)


def default_types() -> list[str]:
    """Zamba2Config.__post_init__'s layers_block_type when none is stated (54 layers, 9 hybrid)."""
    m, h = "linear_attention", "hybrid"
    return [m] + ([m] * 5 + [h]) * 7 + [m] * 4 + [h] + [m] * 3 + [h] + [m] * 2


def block_types(c: Config) -> list[str]:
    stated = c.data.get("layers_block_type", c.data.get("layer_types"))  # attribute_map: layer_types
    if stated is None:
        return default_types()
    if not isinstance(stated, list) or not stated or not all(isinstance(t, str) for t in stated):
        raise c.fail("layers_block_type", f"expected a list of layer types, got {stated!r}")
    types = [LEGACY.get(t, t) for t in stated]
    if any(t not in KINDS for t in types):
        raise c.fail("layers_block_type", f"each entry must be one of {', '.join(KINDS)} (or mamba); got {stated!r}")
    return types


@family("zamba2",
        layer_modules=ZAMBA2_MODULES,
        top_modules=((r"final_layernorm$", "final_norm"),))
def zamba2(c: Config) -> dict:
    """Zamba2Config / Zamba2ForCausalLM: layers by layers_block_type (default 54, a hybrid layer every sixth or so,
    9 in all), each a Zamba2MambaDecoderLayer: an RMSNorm (input_layernorm) and Zamba2MambaMixer, a Mamba-2 mixer of
    n_mamba_heads (8) heads of mamba_expand · hidden_size / heads (expand 2), mamba_d_state 64, mamba_ngroups 1,
    mamba_d_conv 4, a convolution bias always (use_conv_bias is not read), add_bias_linear (default false) on in_proj
    and out_proj. A hybrid layer also runs a shared transformer block (blocks/zamba_shared.py) on [x; embeddings]:
    num_mem_blocks (1) blocks in turn (the i-th hybrid layer runs block i mod num_mem_blocks, tied to that block's
    first layer); attention of num_attention_heads (32), num_key_value_heads (default: as many) of head_dim 2 ·
    hidden_size / heads on 2 · hidden_size inputs, no bias; rotary positions only with use_mem_rope (default false);
    a gated MLP of intermediate_size (default 4 · hidden_size) with hidden_act (gelu), add_bias_linear on its
    projections; per hybrid layer, adapters of adapter_rank (128) on the MLP's gate and up projection, and on q, k
    and v with use_shared_attention_adapter (default false), held by the block; and the layer's own linear d -> d,
    whose output is added to the Mamba layer's input. A final RMSNorm; lm_head tied by default. use_long_context
    sets max_position_embeddings to 16384."""
    types = block_types(c)
    hidden, heads = c.int("hidden_size", 2560), c.int("n_mamba_heads", 8)
    expand = c.int("mamba_expand", 2)
    if (expand * hidden) % heads:
        raise c.fail("n_mamba_heads", f"{heads} heads do not divide mamba_expand · hidden_size = {expand * hidden}")
    bias = c.bool("add_bias_linear", False)
    mixer = {"kind": "mamba2", "n_heads": heads, "head_dim": expand * hidden // heads,
             "state_size": c.int("mamba_d_state", 64), "n_groups": c.int("mamba_ngroups", 1),
             "conv_kernel": c.int("mamba_d_conv", 4), "use_bias": bias, "use_conv_bias": True, "activation": "silu"}
    n_heads = c.int("num_attention_heads", 32)
    block = {"kind": "zamba_transformer", "n_heads": n_heads,
             "n_kv_heads": c.int("num_key_value_heads", n_heads), "head_dim": 2 * hidden // n_heads,
             "d_ff": c.int("intermediate_size", 4 * hidden), "activation": c.activation("hidden_act", "gelu"),
             "mlp_bias": bias, "attention_adapters": c.bool("use_shared_attention_adapter", False),
             "mlp_adapters": True, "adapter_rank": c.int("adapter_rank", 128)}
    blocks = c.int("num_mem_blocks", 1)
    none = {"kind": "none"}
    layers, hybrid = [], 0
    for t in types:
        layer = {"attention": mixer, "ffn": none}
        if t == "hybrid":
            layer["shared"] = f"block{hybrid % blocks}"
            hybrid += 1
        layers.append(layer)
    out = stack([{"shared": None, **layer} for layer in layers])
    if hybrid and "layers" not in out:  # every layer hybrid: one group that states it
        out["layers"] = [{"repeat": len(types), "shared": "block0"}]
    context = 16384 if c.bool("use_long_context", False) else c.int("max_position_embeddings", 4096)
    base = common(c.with_defaults({"num_hidden_layers": len(types), "hidden_size": hidden, "vocab_size": 32000}),
                  tie=True)
    return {**base, "n_layers": len(types), "context_length": context,
            "positions": "rotary" if c.bool("use_mem_rope", False) else "none", **out, "norm": rms(per_layer=1),
            "shared_blocks": {f"block{i}": block for i in range(min(blocks, hybrid))} or None}
