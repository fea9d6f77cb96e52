"""ERNIE 4.5 mixtures (Baidu 2025): the 21B-A3B and 300B-A47B text models, as ernie4_5_moe."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, common, family, gated, layer_groups, rms

# Ernie4_5_MoeTopKRouter holds the router weight (mlp.gate) and, inside it, moe_statics.
ERNIE_MOE_MODULES = ((r"mlp\.gate\.moe_statics$", "ffn.correction_bias"),)


def _key(c: Config, name: str, alias: str) -> str:
    """Ernie4_5_MoeConfig.attribute_map: the alias, where stated, sets the attribute it names (and wins)."""
    return alias if c.has(alias) else name


def ernie_attention(c: Config, cls: str) -> dict:
    """ERNIE 4.5's attention (``cls``): num_attention_heads query heads, num_key_value_heads (default 4) key-value heads
    of a stated head_dim or hidden_size // heads, use_bias (default false) on q, k, v and o; a null head_dim or
    num_key_value_heads builds no model, so it is refused."""
    for key in ("head_dim", "num_key_value_heads"):
        if key in c.data and c.data[key] is None:
            raise c.fail(key, f"{cls} reads it as it is: null builds no model")
    bias = c.bool("use_bias", False)
    heads = c.int("num_attention_heads")
    return {
        "n_heads": heads,
        "n_kv_heads": c.int("num_key_value_heads", 4),
        "head_dim": c.int("head_dim", c.int("hidden_size") // heads),
        "qkv_bias": bias,
        "o_bias": bias,
    }


@family("ernie4_5_moe", layer_modules=ERNIE_MOE_MODULES + MOE_MODULES)
def ernie4_5_moe(c: Config) -> dict:
    """Ernie4_5_MoeConfig / Ernie4_5_MoeDecoderLayer: Llama's pre-norm layer; use_bias (default false) on q, k,
    v, o, on the dense and shared MLPs' projections and on the LM head, never on the routed experts; head_dim a
    stated head_dim or hidden_size // heads; num_key_value_heads defaults to 4 (a null head_dim or
    num_key_value_heads builds no model, so it is refused); tied by default.
    Layer i is an Ernie4_5_MoeSparseMoeBlock where (i + 1) % moe_layer_interval == 0 and moe_layer_start_index
    (default 1) <= i <= moe_layer_end_index (default -1: the last layer), else an Ernie4_5_MoeMLP of
    intermediate_size. The mixture: a bias-free router (Ernie4_5_MoeTopKRouter.weight) and its moe_statics, a
    per-expert score correction held as a parameter (1 × moe_num_experts), moe_num_experts (default 64; alias
    num_experts) SwiGLU experts of moe_intermediate_size (default 1536) fused as 3-D tensors, moe_k (default 6;
    alias num_experts_per_tok) per token, and one shared Ernie4_5_MoeMLP of moe_num_shared_experts (default 2) ×
    moe_intermediate_size, stated as one shared expert of that width (its biases, under use_bias, are those of
    one MLP). The multi-token-prediction weights a checkpoint may carry are not part of the class."""
    bias = c.bool("use_bias", False)
    attn = ernie_attention(c, "Ernie4_5_MoeAttention")
    n = c.int("num_hidden_layers")
    experts = c.int(_key(c, "moe_num_experts", "num_experts"), 64)
    start, interval = c.int("moe_layer_start_index", 1, positive=False), c.int("moe_layer_interval", 1)
    end = c.int("moe_layer_end_index", -1, positive=False)
    end = n - 1 if end == -1 else end  # Ernie4_5_MoeConfig.__post_init__
    width = c.int("moe_intermediate_size", 1536)
    moe = {
        "kind": "moe",
        "n_experts": experts,
        "top_k": c.int(_key(c, "moe_k", "num_experts_per_tok"), 6),
        "expert": gated(c, width=width),
        "correction_bias": True,
    }
    shared = c.int("moe_num_shared_experts", 2, positive=False)
    if shared:
        moe.update(n_shared_experts=1, shared=gated(c, width=shared * width, bias=bias))
    kinds = ["moe" if (i + 1) % interval == 0 and start <= i <= end else "dense" for i in range(n)]
    dense = gated(c, bias=bias, width=c.int("intermediate_size", 12288)) if "dense" in kinds else None
    ffn, layers = layer_groups(kinds, {"moe": moe, "dense": dense})
    return {
        **common(c, tie=True, context_default=131_072),
        "attention": attn,
        "ffn": ffn,
        **({"layers": layers} if layers else {}),
        "norm": rms(),
        "lm_head_bias": bias,
    }
