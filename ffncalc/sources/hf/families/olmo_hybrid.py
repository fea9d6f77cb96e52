"""OLMo Hybrid (Ai2 2026): Gated DeltaNet layers with a softmax-attention layer every fourth, every layer followed by
a SwiGLU MLP, on OLMo 2's attention (query and key norms over all heads), as olmo_hybrid (transformers 5.23.0,
models/olmo_hybrid)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms
from .qwen3_next import runs

# OlmoHybridGatedDeltaNet's modules: separate q_proj, k_proj, v_proj and g_proj (the output gate) where Qwen3-Next
# fuses them in in_proj_qkvz, a_proj and b_proj for its in_proj_ba, o_proj for its out_proj, o_norm for its gated
# norm (each pair or group is our one component, the same shapes and products); dt_bias and A_log are Parameters
# of the mixer itself, named under the module "linear_attn". Listed before the common names, which would read
# linear_attn.q_proj as attention's.
OLMO_HYBRID_MODULES = (
    (r"^linear_attn\.[qkvg]_proj$", "linear_attn.in_proj_qkvz"),
    (r"^linear_attn\.[ab]_proj$", "linear_attn.in_proj_ba"),
    (r"^linear_attn\.conv1d$", "linear_attn.conv1d"),
    (r"^linear_attn$", "linear_attn.dt_bias+A_log"),
    (r"^linear_attn\.o_norm$", "linear_attn.norm"),
    (r"^linear_attn\.o_proj$", "linear_attn.out_proj"),
)


def layer_types(c: Config) -> list[str]:
    """OlmoHybridConfig.__post_init__: layer_types as stated, or else linear attention with full attention in every
    layer i where i % 4 == 3 (the last layer full when that leaves none). OlmoHybridModel builds the Gated DeltaNet
    layer where the type is "linear_attention" and the attention layer for any other name."""
    n = c.int("num_hidden_layers")
    stated = c.data.get("layer_types")
    if stated is None:
        types = ["full_attention" if i % 4 == 3 else "linear_attention" for i in range(n)]
        if "full_attention" not in types:
            types[-1] = "full_attention"
        return types
    if not isinstance(stated, list) or len(stated) != n or not all(isinstance(t, str) for t in stated):
        raise c.fail("layer_types", f"expected a list of {n} layer types, got {stated!r}")
    return ["linear_attention" if t == "linear_attention" else "full_attention" for t in stated]


def rotary(c: Config) -> bool:
    """OlmoHybridModel builds its rotary embedding only where rope_parameters has a rope_theta: the config class
    fills rope_parameters with rope_theta 10000 when it is absent or null, so positions are off only where
    rope_theta is stated null (at the top level or in rope_parameters), as the released checkpoints state it."""
    nested = c.data.get("rope_parameters")
    if isinstance(nested, dict) and "rope_theta" in nested:
        return nested["rope_theta"] is not None
    return not ("rope_theta" in c.data and c.data["rope_theta"] is None)


@family("olmo_hybrid", layer_modules=OLMO_HYBRID_MODULES)
def olmo_hybrid(c: Config) -> dict:
    """OlmoHybridConfig / OlmoHybridForCausalLM: OlmoHybridLinearAttentionDecoderLayer (input_layernorm before
    OlmoHybridGatedDeltaNet, post_attention_layernorm before the MLP) or OlmoHybridAttentionDecoderLayer (OLMo 2's
    post_attention_layernorm and post_feedforward_layernorm after each sublayer: two RMSNorms of hidden_size
    either way, counted with the first kind's placement) by ``layer_types``, every layer with a bias-free SwiGLU
    OlmoHybridMLP of intermediate_size (default 11008). The attention: num_attention_heads 30, num_key_value_heads
    as many, head_dim as stated or hidden_size / heads, attention_bias (default false) on q, k, v and o, q_norm and
    k_norm over all heads' width, rotary over the whole head in the attention layers only (``rotary``). The Gated
    DeltaNet: linear_num_key_heads and linear_num_value_heads (default num_attention_heads), linear_key_head_dim
    (default int(0.75 · hidden_size / key heads)), linear_value_head_dim (default twice that), bias-free
    projections, a bias-free convolution of linear_conv_kernel_dim (4) with hidden_act, β doubled where
    linear_allow_neg_eigval (default true), a gated RMSNorm over the value head. A final norm; lm_head untied
    unless tie_word_embeddings. Defaults: vocab 100352, hidden 3840, 32 layers, context 65536."""
    c = c.with_defaults({"vocab_size": 100_352, "hidden_size": 3840, "num_hidden_layers": 32, "num_attention_heads": 30})
    heads, hidden = c.int("num_attention_heads"), c.int("hidden_size")
    key_heads = c.int("linear_num_key_heads", heads)
    key_dim = c.int("linear_key_head_dim") if c.has("linear_key_head_dim") else int(0.75 * hidden / key_heads)
    gdn = {
        "kind": "gated_deltanet",
        "n_key_heads": key_heads,
        "key_head_dim": key_dim,
        "n_value_heads": c.int("linear_num_value_heads", heads),
        "value_head_dim": c.int("linear_value_head_dim", 2 * key_dim),
        "conv_kernel": c.int("linear_conv_kernel_dim", 4),
        "conv_bias": False,
        "activation": c.activation("hidden_act", "silu"),
        "neg_eigval": c.bool("linear_allow_neg_eigval", True),
    }
    bias = c.bool("attention_bias", False)
    attn = {"kind": "mha", **attention(c, qkv_bias=bias, o_bias=bias, qk_norm="full")}
    blocks = {"linear_attention": gdn, "full_attention": attn, "mlp": gated(c, width=c.int("intermediate_size", 11008))}
    mixer, ffn, layers = runs([(t, "mlp") for t in layer_types(c)], blocks)
    return {
        **common(c, tie=False, context_default=65_536),
        "positions": "rotary" if rotary(c) else "none",
        "attention": blocks[mixer],
        "ffn": blocks[ffn],
        "norm": rms(),
        **({"layers": layers} if layers else {}),
    }
