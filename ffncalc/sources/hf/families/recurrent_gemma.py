"""RecurrentGemma (Botev et al. 2024, arXiv:2404.07839; Griffin, De et al. 2024, arXiv:2402.19427; transformers
5.23.0, models/recurrent_gemma): RG-LRU recurrent blocks and local attention in a repeating pattern."""

from __future__ import annotations

from ..config import Config, common, family, rms, stack

RECURRENT_GEMMA_MODULES = (
    (r"temporal_block\.linear_y$", "recurrent.linear_y"),
    (r"temporal_block\.linear_x$", "recurrent.linear_x"),
    (r"temporal_block\.linear_out$", "recurrent.linear_out"),
    (r"temporal_block\.conv_1d$", "recurrent.conv1d"),
    (r"temporal_block\.rg_lru$", "recurrent.rg_lru"),
    (r"temporal_block\.q_proj$", "attn.q"),
    (r"temporal_block\.k_proj$", "attn.k"),
    (r"temporal_block\.v_proj$", "attn.v"),
    (r"temporal_block\.o_proj$", "attn.o"),
    (r"mlp_block\.gate_proj$", "ffn.gate"),
    (r"mlp_block\.up_proj$", "ffn.up"),
    (r"mlp_block\.down_proj$", "ffn.down"),
    (r"(temporal|channel)_pre_norm$", "norms"),
)
BLOCK_TYPES = ("recurrent", "attention")


@family("recurrent_gemma", layer_modules=RECURRENT_GEMMA_MODULES, top_modules=((r"final_norm$", "final_norm"),))
def recurrent_gemma(c: Config) -> dict:
    """RecurrentGemmaConfig / RecurrentGemmaDecoderLayer: layer i's temporal_block is by block_types, repeated
    (default recurrent, recurrent, attention). RecurrentGemmaRecurrentBlock: linear_y and linear_x (hidden_size ->
    lru_width, default hidden_size, with biases), a depthwise conv_1d of conv1d_width (default 4) with a bias, the
    RG-LRU (RecurrentGemmaRglru: recurrent_param of lru_width, input and recurrent gates as num_attention_heads
    diagonal blocks with biases) and linear_out (with a bias). RecurrentGemmaAttention: q/k/v with attention_bias
    (default false), o_proj always with a bias; head_dim as the file states it, else hidden_size //
    num_attention_heads (RecurrentGemmaConfig.__post_init__ sets the quotient, then PreTrainedConfig.__post_init__
    sets a stated head_dim over it; the rotary width follows it too), num_key_value_heads defaults to the heads, a
    sliding window of attention_window_size (default 2048), rotary over partial_rotary_factor (default 0.5) of each
    head. RecurrentGemmaMlp: a gated MLP of intermediate_size // 2 (default 3 · 2560 // 2) with biases,
    hidden_activation (default gelu, tanh). RMSNorms (scaled by 1 + w: the same parameters) before each sublayer
    and at the end (final_norm); tied unless tie_word_embeddings is false. The embedding scale (a buffer) and the
    logits' soft cap are elementwise. RecurrentGemmaConfig states no context length:
    common()'s 2048 is only the default --seq-len, never a limit."""
    d, heads = c.int("hidden_size", 2560), c.int("num_attention_heads", 10)
    act = c.activation("hidden_activation", "gelu_pytorch_tanh")
    # RecurrentGemmaConfig: the quotient unless the file states head_dim (c.int refuses a null one)
    head_dim = c.int("head_dim") if "head_dim" in c.data else d // heads
    bias = c.bool("attention_bias", False)
    attention = {
        "kind": "mha",
        "n_heads": heads,
        "n_kv_heads": c.int("num_key_value_heads", heads),
        "head_dim": head_dim,
        "qkv_bias": bias,
        "o_bias": True,
        "window": c.int("attention_window_size", 2048),
    }
    rotary = int(head_dim * c.rope_fraction(0.5))
    if rotary != head_dim:
        attention["rotary_dim"] = rotary
    recurrent = {
        "kind": "rglru",
        "n_blocks": heads,
        "width": c.int("lru_width", d),
        "conv_kernel": c.int("conv1d_width", 4),
        "activation": act,
    }
    ffn = {"kind": "gated", "d_ff": c.int("intermediate_size", 3 * 2560) // 2, "activation": act, "bias": True}
    types = c.data.get("block_types", list(BLOCK_TYPES[:1] * 2 + BLOCK_TYPES[1:]))
    if not isinstance(types, list) or not types or any(t not in BLOCK_TYPES for t in types):
        raise c.fail("block_types", f"expected a list of {', '.join(BLOCK_TYPES)}; got {types!r}")
    n = c.int("num_hidden_layers", 26)
    mixers = {"recurrent": recurrent, "attention": attention}
    return {
        **common(c, tie=True),
        "norm": rms(),
        **stack([{"attention": mixers[types[i % len(types)]], "ffn": ffn} for i in range(n)]),
    }
