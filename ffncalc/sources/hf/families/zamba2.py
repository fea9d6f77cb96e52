"""Zamba2 (Zyphra 2024, arXiv:2411.15242): Mamba-2 layers, some of which also run one of num_mem_blocks weight-shared
transformer blocks on the hidden state and the input embeddings, as zamba2 (transformers 5.23.0, models/zamba2)."""

from __future__ import annotations

from ..config import Config, common, family, rms
from .zamba import hybrid_stack

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
    (r"^(mamba_decoder\.)?mamba\.in_proj$", "mixer.in_proj"),
    (r"^(mamba_decoder\.)?mamba\.conv1d$", "mixer.conv1d"),
    (r"^(mamba_decoder\.)?mamba$", "mixer.dt_bias+A_log+D"),
    (r"^(mamba_decoder\.)?mamba\.norm$", "mixer.norm"),
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


@family("zamba2", layer_modules=ZAMBA2_MODULES, top_modules=((r"final_layernorm$", "final_norm"),))
def zamba2(c: Config) -> dict:
    """Zamba2Config / Zamba2ForCausalLM: layers by layers_block_type (default 54, a hybrid layer every sixth or so,
    9 in all), each a Zamba2MambaDecoderLayer: an RMSNorm (input_layernorm) and Zamba2MambaMixer, a Mamba-2 mixer of
    n_mamba_heads (8) heads of mamba_expand · hidden_size / heads (expand 2), mamba_d_state 64, mamba_ngroups 1,
    mamba_d_conv 4, a convolution bias always (use_conv_bias is not read), add_bias_linear (default false) on in_proj
    and out_proj. A hybrid layer also runs a shared transformer block (blocks/zamba_shared.py) on [x; embeddings]:
    num_mem_blocks (1) blocks in turn (the i-th hybrid layer runs block i mod num_mem_blocks, tied to that block's
    first layer where tie_word_embeddings, else a block of its own); attention of num_attention_heads (32),
    num_key_value_heads (default: as many) of attention_head_dim (alias head_dim; default 2 · hidden_size / heads) on
    2 · hidden_size inputs, no bias; rotary positions only with use_mem_rope (default false); a gated MLP of
    intermediate_size (default 4 · hidden_size) with hidden_act (gelu), add_bias_linear on its projections; per entry
    of hybrid_layer_ids (default: the hybrid layers), adapters of adapter_rank (128) on the MLP's gate and up
    projection, and on q, k and v with use_shared_attention_adapter (default false), held by the block the entry falls
    to; and the layer's own linear d -> d, whose output is added to the Mamba layer's input. A final RMSNorm; lm_head
    tied by default. use_long_context sets max_position_embeddings to 16384. mamba_headdim, attention_hidden_size,
    attention_head_dim and hybrid_layer_ids are derived unless the file states them."""
    types = block_types(c)
    hybrids = [i for i, t in enumerate(types) if t == "hybrid"]
    hidden, heads = c.int("hidden_size", 2560), c.int("n_mamba_heads", 8)
    expand = c.int("mamba_expand", 2)
    # Zamba2Config.__post_init__ derives mamba_headdim, attention_hidden_size, attention_head_dim and hybrid_layer_ids,
    # but a value the file states (as save_pretrained writes them) is set after it and wins
    head_dim = c.int("mamba_headdim", expand * hidden // heads)
    if heads * head_dim != expand * hidden:  # Zamba2MambaMixer views its d_inner = mamba_expand · hidden as heads
        raise c.fail(
            "mamba_headdim" if c.has("mamba_headdim") else "n_mamba_heads",
            f"{heads} heads of {head_dim} do not make mamba_expand · hidden_size = {expand * hidden}: "
            "transformers' forward cannot run it",
        )
    bias = c.bool("add_bias_linear", False)
    mixer = {
        "kind": "mamba2",
        "n_heads": heads,
        "head_dim": head_dim,
        "state_size": c.int("mamba_d_state", 64),
        "n_groups": c.int("mamba_ngroups", 1),
        "conv_kernel": c.int("mamba_d_conv", 4),
        "use_bias": bias,
        "use_conv_bias": True,
        "activation": "silu",
    }
    width = c.int("attention_hidden_size", 2 * hidden)
    if width != 2 * hidden and hybrids:  # the block's input is the concatenation [x; e]
        raise c.fail(
            "attention_hidden_size",
            f"must be 2 · hidden_size = {2 * hidden} (the hidden state and the embeddings concatenated), got {width}",
        )
    n_heads, blocks = c.int("num_attention_heads", 32), c.int("num_mem_blocks", 1)
    # Zamba2Attention and Zamba2MLP hold an adapter for each entry p of hybrid_layer_ids with p mod num_mem_blocks
    # their block_id (an Identity for the others), and the k-th hybrid layer, block k mod num_mem_blocks, runs the
    # adapter of its own layer's entry (layer_dic: the last one listing it)
    ids = hybrids if c.data.get("hybrid_layer_ids") is None else c.data["hybrid_layer_ids"]
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise c.fail("hybrid_layer_ids", f"expected a list of layer indices, got {ids!r}")
    slot = {layer: p for p, layer in enumerate(ids)}
    for k, layer in enumerate(hybrids):
        if layer not in slot or slot[layer] % blocks != k % blocks:
            raise c.fail(
                "hybrid_layer_ids",
                f"hybrid layer {layer} (block {k % blocks}) is "
                + ("not listed" if layer not in slot else f"listed at {slot[layer]}, another block's adapter")
                + ": transformers' forward cannot run it",
            )
    block = {
        "kind": "zamba_transformer",
        "n_heads": n_heads,
        "n_kv_heads": c.int("num_key_value_heads", n_heads),
        "head_dim": c.int("attention_head_dim", 2 * hidden // n_heads),
        "d_ff": c.int("intermediate_size", 4 * hidden),
        "activation": c.activation("hidden_act", "gelu"),
        "mlp_bias": bias,
        "attention_adapters": c.bool("use_shared_attention_adapter", False),
        "mlp_adapters": True,
        "adapter_rank": c.int("adapter_rank", 128),
    }
    # Zamba2Model.get_layers ties each hybrid layer's shared_transformer to that of the first layer of its block through
    # _tied_weights_keys, which PreTrainedModel.get_expanded_tied_weights_keys applies only with tie_word_embeddings:
    # untied, each hybrid layer holds a block of its own, with all the adapters of its block_id
    tied = c.bool("tie_word_embeddings", True)
    names = [f"block{k % blocks if tied else k}" for k in range(len(hybrids))]
    held = [sum(p % blocks == k % blocks for p in range(len(ids))) for k in range(len(hybrids))]
    shared = {name: {**block, **({"adapter_sets": held[k]} if held[k] != names.count(name) else {})} for k, name in enumerate(names)}
    none = {"kind": "none"}
    uses = iter(names)
    out = hybrid_stack([{"attention": mixer, "ffn": none, "shared": next(uses) if t == "hybrid" else None} for t in types])
    context = 16384 if c.bool("use_long_context", False) else c.int("max_position_embeddings", 4096)
    base = common(c.with_defaults({"num_hidden_layers": len(types), "hidden_size": hidden, "vocab_size": 32000}), tie=True)
    return {
        **base,
        "n_layers": len(types),
        "context_length": context,
        "positions": "rotary" if c.bool("use_mem_rope", False) else "none",
        **out,
        "norm": rms(per_layer=1),
        "shared_blocks": shared or None,
    }
