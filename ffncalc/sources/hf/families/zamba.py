"""Zamba (Zyphra 2024, arXiv:2405.16712): multi-head Mamba (v1) layers, some of which also run one weight-shared
transformer block on the hidden state and the input embeddings, as zamba (transformers 5.23.0, models/zamba)."""

from __future__ import annotations

import math

from ..config import Config, common, family, rms, stack

LEGACY = {"mamba": "linear_attention"}  # remap_legacy_layer_types
KINDS = ("linear_attention", "hybrid")

# ZambaMambaDecoderLayer: mamba (ZambaMambaMixer: x_proj_weight, dt_proj_weight, dt_proj_bias, A_log and D are
# Parameters of the mixer itself, one fused component) and input_layernorm; a hybrid layer (ZambaHybridLayer) holds
# it as mamba_decoder, its own linear, and shared_transf (ZambaAttentionDecoderLayer, tied to the first hybrid
# layer's): self_attn (q_proj, k_proj, v_proj, o_proj), feed_forward (ZambaMLP: gate_proj, up_proj, down_proj),
# input_layernorm, pre_ff_layernorm.
ZAMBA_MODULES = (
    (r"^shared_transf\.input_layernorm$", "shared.input_norm"),
    (r"^shared_transf\.pre_ff_layernorm$", "shared.pre_ff_norm"),
    (r"^shared_transf\.self_attn\.q_proj$", "shared.attn.q"),
    (r"^shared_transf\.self_attn\.k_proj$", "shared.attn.k"),
    (r"^shared_transf\.self_attn\.v_proj$", "shared.attn.v"),
    (r"^shared_transf\.self_attn\.o_proj$", "shared.attn.o"),
    (r"^shared_transf\.feed_forward\.gate_proj$", "shared.ffn.gate"),
    (r"^shared_transf\.feed_forward\.up_proj$", "shared.ffn.up"),
    (r"^shared_transf\.feed_forward\.down_proj$", "shared.ffn.down"),
    (r"^linear$", "shared.linear"),
    (r"^(mamba_decoder\.)?mamba\.in_proj$", "mixer.in_proj"),
    (r"^(mamba_decoder\.)?mamba\.conv1d$", "mixer.conv1d"),
    (r"^(mamba_decoder\.)?mamba$", "mixer.x_proj+dt_proj+A_log+D"),
    (r"^(mamba_decoder\.)?mamba\.out_proj$", "mixer.out_proj"),
    (r"^(mamba_decoder\.)?input_layernorm$", "norms"),
)


def block_types(c: Config, n_layers: int) -> list[str]:
    """layers_block_type (alias layer_types) as stated, or ZambaConfig.__post_init__'s: two Mamba layers, a hybrid
    one, then a hybrid layer where i % attn_layer_period == attn_layer_offset for the remaining i (76 layers, 13
    hybrid at the defaults)."""
    stated = c.data.get("layers_block_type", c.data.get("layer_types"))
    if stated is None:
        if n_layers < 3:  # the default types are 3 at least: transformers refuses any other count
            raise c.fail("num_hidden_layers", f"the default layers_block_type has 3 layers at least, got {n_layers}")
        period, offset = c.int("attn_layer_period", 6), c.int("attn_layer_offset", 4, positive=False)
        m, h = "linear_attention", "hybrid"
        return [m, m, h] + [h if i % period == offset else m for i in range(n_layers - 3)]
    if not isinstance(stated, list) or not stated or not all(isinstance(t, str) for t in stated):
        raise c.fail("layers_block_type", f"expected a list of layer types, got {stated!r}")
    types = [LEGACY.get(t, t) for t in stated]
    if any(t not in KINDS for t in types):
        raise c.fail("layers_block_type", f"each entry must be one of {', '.join(KINDS)} (or mamba); got {stated!r}")
    if len(types) != n_layers:  # PreTrainedConfig.validate_layer_type
        raise c.fail("num_hidden_layers", f"{n_layers} layers, but layers_block_type states {len(types)}")
    return types


def hybrid_stack(layers: list[dict]) -> dict:
    """stack() of layers that may run a shared block ("shared"): a shared block is a layer group's, never the
    model's, so every run of layers that runs one states it, whichever layers are the most."""
    out = stack(layers)
    shared = out.pop("shared", None)
    if shared is not None:
        out["layers"] = [{**group, "shared": group.get("shared", shared)} for group in out.get("layers", [{"repeat": len(layers)}])]
    return out


@family("zamba", layer_modules=ZAMBA_MODULES, top_modules=((r"final_layernorm$", "final_norm"),))
def zamba(c: Config) -> dict:
    """ZambaConfig / ZambaForCausalLM: layers by layers_block_type (default from num_hidden_layers 76,
    attn_layer_period 6 and attn_layer_offset 4), each a ZambaMambaDecoderLayer: an RMSNorm (input_layernorm) and
    ZambaMambaMixer, a Mamba (v1) mixer of d_inner = mamba_expand (2) · hidden_size (3712) split into n_mamba_heads
    (2) heads, each with its own x_proj and dt_proj (blocks/mamba.py, n_heads); mamba_d_state 16, mamba_d_conv 4,
    mamba_dt_rank "auto" (⌈hidden_size / 16⌉), hidden_mamba_act silu after the convolution, mamba_conv_bias (true)
    and mamba_proj_bias (false, on in_proj and out_proj). A hybrid layer also runs the one shared transformer block
    (blocks/zamba_shared.py) on [x; embeddings]: attention of num_attention_heads (16), num_key_value_heads (16) of
    attention_head_dim (default 2 · hidden_size / heads) on attention_hidden_size = 2 · hidden_size inputs, no bias
    and no positions; a gated MLP of intermediate_size (14848) with hidden_act (gelu), no bias; no adapters; and the
    layer's own linear d -> d, added to the Mamba layer's input. A final RMSNorm; lm_head tied by default, and with it
    the block (untied, each hybrid layer has its own)."""
    hidden = c.int("hidden_size", 3712)
    types = block_types(c, c.int("num_hidden_layers", 76))
    heads, expand = c.int("n_mamba_heads", 2), c.int("mamba_expand", 2)
    if (expand * hidden) % heads:
        raise c.fail("n_mamba_heads", f"{heads} heads do not divide mamba_expand · hidden_size = {expand * hidden}")
    rank = c.data.get("mamba_dt_rank", "auto")
    rank = math.ceil(hidden / 16) if rank == "auto" else c.int("mamba_dt_rank")
    mixer = {
        "kind": "mamba",
        "n_heads": heads,
        "d_inner": expand * hidden,
        "state_size": c.int("mamba_d_state", 16),
        "conv_kernel": c.int("mamba_d_conv", 4),
        "time_step_rank": rank,
        "use_bias": c.bool("mamba_proj_bias", False),
        "use_conv_bias": c.bool("mamba_conv_bias", True),
        "activation": c.activation("hidden_mamba_act", "silu"),
    }
    width = c.int("attention_hidden_size", 2 * hidden)
    # the block's input is the concatenation [x; e]: any other width cannot run (no block, no width: Mamba layers only)
    if width != 2 * hidden and "hybrid" in types:
        raise c.fail(
            "attention_hidden_size",
            f"must be 2 · hidden_size = {2 * hidden} (the hidden state and the embeddings concatenated), got {width}",
        )
    n_heads = c.int("num_attention_heads", 16)
    head_key = "attention_head_dim" if c.data.get("attention_head_dim") is not None else "head_dim"
    block = {
        "kind": "zamba_transformer",
        "n_heads": n_heads,
        "n_kv_heads": c.int("num_key_value_heads", 16),
        "head_dim": c.int(head_key, 2 * hidden // n_heads),
        "d_ff": c.int("intermediate_size", 14848),
        "activation": c.activation("hidden_act", "gelu"),
    }
    none = {"kind": "none"}
    # ZambaModel ties every hybrid layer's shared_transf to the first one's through its _tied_weights_keys, which
    # PreTrainedModel.get_expanded_tied_weights_keys applies only with tie_word_embeddings: untied, each hybrid layer
    # holds a block of its own
    tied = c.bool("tie_word_embeddings", True)
    names = ["block" if tied else f"block{i}" for i in range(types.count("hybrid"))]
    uses = iter(names)
    layers = [{"attention": mixer, "ffn": none, "shared": next(uses) if t == "hybrid" else None} for t in types]
    out = hybrid_stack(layers)
    base = common(
        c.with_defaults({"num_hidden_layers": len(types), "hidden_size": hidden, "vocab_size": 32000}), tie=True, context_default=4096
    )
    return {
        **base,
        "n_layers": len(types),
        "positions": "none",
        **out,
        "norm": rms(per_layer=1),
        "shared_blocks": {name: block for name in names} or None,
    }
