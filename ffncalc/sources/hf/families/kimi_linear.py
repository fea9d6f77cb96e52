"""Kimi Linear (Kimi Team 2025, arXiv:2510.26692): Kimi Delta Attention layers and multi-head latent attention
layers without positions, DeepSeek-V3's mixture of experts, as kimi_linear (transformers 5.23.0,
models/kimi_linear)."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, common, family, gated, rms
from .deepseek import MLA_MODULES
from .qwen3_next import runs

# KimiLinearDeltaAttention's modules (self_attn in a linear-attention layer), before the common names: its q_proj,
# k_proj, v_proj and o_proj are the common ones; b_proj and g_b_proj must not be taken for q_b_proj or kv_b_proj.
# dt_bias and A_log are Parameters of the forget gate itself, so transformers names them under "forget_gate".
KDA_MODULES = (
    (r"self_attn\.conv1d$", "attn.conv1d"),
    (r"forget_gate\.f_a_proj$", "attn.f_a"),
    (r"forget_gate\.f_b_proj$", "attn.f_b"),
    (r"forget_gate$", "attn.dt_bias+A_log"),
    (r"self_attn\.b_proj$", "attn.b"),
    (r"self_attn\.g_a_proj$", "attn.g_a"),
    (r"self_attn\.g_b_proj$", "attn.g_b"),
    (r"self_attn\.o_norm$", "attn.o_norm"),
)


def _alias(c: Config, key: str, alias: str, default):
    """KimiLinearConfig.attribute_map: a key and its alias name one attribute (the alias stores under the key)."""
    return c.int(key) if c.has(key) else c.int(alias, default, positive=False)


def layer_types(c: Config) -> list[str]:
    """KimiLinearConfig.__post_init__: layer_types as stated; else, where linear_attn_config lists both
    full_attn_layers and kda_layers (1-based), those layers as "full_attention" and "linear_attention"; else layer i
    is full attention when i > 0 and i % 4 == 0. KimiLinearDecoderLayer builds KimiLinearAttention for
    "full_attention" and KimiLinearDeltaAttention for anything else, a layer neither list names included."""
    n = c.int("num_hidden_layers")
    stated = c.data.get("layer_types")
    linear = c.data.get("linear_attn_config") or {}
    if stated is None and "full_attn_layers" in linear and "kda_layers" in linear:
        stated = [None] * n
        for key, kind in (("full_attn_layers", "full_attention"), ("kda_layers", "linear_attention")):
            for layer in linear[key]:
                if not isinstance(layer, int) or not 1 <= layer <= n:
                    raise c.fail("linear_attn_config", f"{key}: expected layer numbers 1..{n}, got {layer!r}")
                stated[layer - 1] = kind
    if stated is None:
        return ["full_attention" if i and i % 4 == 0 else "linear_attention" for i in range(n)]
    if not isinstance(stated, list) or len(stated) != n:
        raise c.fail("layer_types", f"expected a list of {n} layer types, got {stated!r}")
    return ["full_attention" if t == "full_attention" else "linear_attention" for t in stated]


def mlp_layer_types(c: Config) -> list[str]:
    """KimiLinearConfig.__post_init__: mlp_layer_types as stated, else the first first_k_dense_replace layers
    (default 1) "dense" and the rest "sparse"."""
    n = c.int("num_hidden_layers")
    kinds = c.data.get("mlp_layer_types")
    if kinds is None:
        first = c.int("first_k_dense_replace", 1, positive=False)
        return ["dense" if i < first else "sparse" for i in range(n)]
    if not isinstance(kinds, list) or len(kinds) != n:
        raise c.fail("mlp_layer_types", f"expected {n} entries, got {kinds!r}")
    return ["sparse" if k == "sparse" else "dense" for k in kinds]


@family("kimi_linear", layer_modules=KDA_MODULES + MLA_MODULES + MOE_MODULES)
def kimi_linear(c: Config) -> dict:
    """KimiLinearConfig / KimiLinearDecoderLayer: self_attn is KimiLinearDeltaAttention (kind kda: q_proj, k_proj,
    v_proj of linear_num_heads × linear_head_dim, default 32 × 128, a bias-free depthwise conv1d of
    linear_conv_kernel_dim 4 over the three, b_proj, the forget gate's f_a_proj, f_b_proj, dt_bias and A_log, the
    output gate's g_a_proj and g_b_proj, KimiLinearRMSNormGated over head_dim, o_proj; linear_attn_config's
    num_heads, head_dim and short_conv_kernel_size override the three keys) or, by layer_types,
    KimiLinearAttention: DeepSeek-V2's multi-head latent attention (q_lora_rank null by default: a full-rank q_proj;
    kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128; attention_bias on q_a, kv_a and
    o), with no rotary at all (KimiLinearModel has no rotary embedding: NoPE, so positions none). The MLP is
    KimiLinearMoE where mlp_layer_types says "sparse" (a bias-free router whose e_score_correction_bias is a
    buffer, num_experts (default 256) SwiGLU experts of moe_intermediate_size (1024) fused as 3-D tensors,
    num_experts_per_token (8) per token, one shared KimiLinearMLP of num_shared_experts (1) ×
    moe_intermediate_size, stated as that many shared experts), else KimiLinearMLP of intermediate_size (9216).
    attribute_map: model_max_length is max_position_embeddings, num_experts num_local_experts, num_experts_per_token
    num_experts_per_tok, num_shared_experts n_shared_experts. Norms before each sublayer and a final one; lm_head is
    never tied: KimiLinearForCausalLM declares no tied weights (_tied_weights_keys is empty), so tie_word_embeddings
    changes nothing."""
    c = c.with_defaults({"vocab_size": 163_840, "hidden_size": 2304, "num_hidden_layers": 27})
    linear = c.data.get("linear_attn_config") or {}
    if not isinstance(linear, dict):
        raise c.fail("linear_attn_config", f"expected an object, got {linear!r}")
    inner = Config({**c.data, **linear}, c.text, c.source, start=c.start)
    kda = {
        "kind": "kda",
        "n_heads": inner.int("num_heads") if "num_heads" in linear else c.int("linear_num_heads", 32),
        "head_dim": inner.int("head_dim") if "head_dim" in linear else c.int("linear_head_dim", 128),
        "conv_kernel": (
            inner.int("short_conv_kernel_size") if "short_conv_kernel_size" in linear else c.int("linear_conv_kernel_dim", 4)
        ),
        "activation": c.activation("hidden_act", "silu"),
    }
    q_rank = c.data.get("q_lora_rank")  # null by default: a full-rank query
    mla = {
        "kind": "mla",
        "n_heads": c.int("num_attention_heads", 32),
        "q_lora_rank": None if q_rank is None else c.int("q_lora_rank"),
        "kv_lora_rank": c.int("kv_lora_rank", 512),
        "qk_nope_head_dim": c.int("qk_nope_head_dim", 128),
        "qk_rope_head_dim": c.int("qk_rope_head_dim", 64),
        "v_head_dim": c.int("v_head_dim", 128),
        "bias": c.bool("attention_bias", False),
    }
    width = c.int("moe_intermediate_size", 1024)
    moe = {
        "kind": "moe",
        "n_experts": _alias(c, "num_experts", "num_local_experts", 256),
        "top_k": _alias(c, "num_experts_per_token", "num_experts_per_tok", 8),
        "expert": gated(c, width=width),
    }
    shared = _alias(c, "num_shared_experts", "n_shared_experts", 1)
    if shared:
        moe.update(n_shared_experts=shared, shared=gated(c, width=width))
    blocks = {"linear_attention": kda, "full_attention": mla, "sparse": moe, "dense": gated(c, width=c.int("intermediate_size", 9216))}
    mixer, ffn, layers = runs(list(zip(layer_types(c), mlp_layer_types(c))), blocks)
    context = c.int("model_max_length") if c.has("model_max_length") else c.int("max_position_embeddings", 1_048_576)
    return {
        **common(c, tie=False),
        "context_length": context,
        "tie_embeddings": False,
        "positions": "none",
        "attention": blocks[mixer],
        "ffn": blocks[ffn],
        "norm": rms(),
        **({"layers": layers} if layers else {}),
    }
