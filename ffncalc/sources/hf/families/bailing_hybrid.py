"""Ling 3.0's hybrid (inclusionAI, bailing_hybrid): Kimi Delta Attention layers with full-rank gates and a gated
multi-head latent attention layer every sixth, DeepSeek-V3's grouped mixture of experts after the first dense
layers, as bailing_hybrid (transformers 5.23.0, models/bailing_hybrid)."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, common, family, gated, rms
from .deepseek import MLA_MODULES
from .kimi_linear import _alias
from .qwen3_next import runs

# BailingHybridDeltaAttention's modules (self_attn in a linear-attention layer), before the common names: its
# q_proj, k_proj, v_proj and o_proj are the common ones; g_proj is the output gate (in an attention layer, the
# per-head gate: attn.g either way); dt_bias and A_log are Parameters of the forget gate itself, named under
# "forget_gate".
BAILING_MODULES = (
    (r"self_attn\.conv1d$", "attn.conv1d"),
    (r"forget_gate\.f_proj$", "attn.f"),
    (r"forget_gate$", "attn.dt_bias+A_log"),
    (r"self_attn\.b_proj$", "attn.b"),
    (r"self_attn\.g_proj$", "attn.g"),
    (r"self_attn\.o_norm$", "attn.o_norm"),
)


def types(c: Config, key: str, pattern, kinds: tuple[str, str]) -> list[str]:
    """A per-layer list as stated (``kinds[0]`` where the entry says so, ``kinds[1]`` for any other), else
    ``pattern(i)``, as BailingHybridConfig.__post_init__ derives it."""
    n = c.int("num_hidden_layers")
    stated = c.data.get(key)
    if stated is None:
        return [pattern(i) for i in range(n)]
    if not isinstance(stated, list) or len(stated) != n or not all(isinstance(t, str) for t in stated):
        raise c.fail(key, f"expected a list of {n} layer types, got {stated!r}")
    return [kinds[0] if t == kinds[0] else kinds[1] for t in stated]


def _key(c: Config, key: str, fallback: str, default: int) -> int:
    """BailingHybridConfig.__post_init__ sets linear_head_dim, linear_num_heads and linear_conv_kernel_dim from
    head_dim, num_attention_heads and short_conv_kernel_size; a config.json that states them (as save_pretrained
    writes them) sets them after that, so the stated key wins."""
    return c.int(key) if c.has(key) else c.int(fallback, default)


@family("bailing_hybrid", layer_modules=BAILING_MODULES + MLA_MODULES + MOE_MODULES)
def bailing_hybrid(c: Config) -> dict:
    """BailingHybridConfig / BailingHybridDecoderLayer: input_layernorm, then BailingHybridAttention where layer_types
    says "full_attention" (default: every layer_group_size-th layer, 6) and BailingHybridDeltaAttention otherwise,
    then post_attention_layernorm and the MLP. The delta attention is Kimi Delta Attention (kind kda) of
    linear_num_heads × linear_head_dim (num_attention_heads 32 × head_dim 128, ``_key``), a bias-free depthwise
    conv1d of linear_conv_kernel_dim (short_conv_kernel_size, 4) with hidden_act, b_proj, a forget gate of f_proj
    straight to H·head_dim with dt_bias and A_log (with kda_safe_gate, default true, the bounded decay
    kda_lower_bound · sigmoid), g_proj straight to H·head_dim and a sigmoid-gated RMSNorm over head_dim (full_gates:
    no low-rank pairs). The attention: multi-head latent attention with a full-rank q_proj (no bias), kv_lora_rank
    512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, attention_bias (default false) on
    kv_a_proj_with_mqa and o_proj, rotary over qk_rope_head_dim, and g_proj, one sigmoid gate per head. The MLP by
    mlp_layer_types (default: dense for the first first_k_dense_replace layers, 2): BailingHybridMLP of
    intermediate_size (6144), or BailingHybridMoE: a bias-free router (sigmoid scores, grouped top-k over n_group
    groups; e_score_correction_bias is a buffer) over num_experts (512) SwiGLU experts of moe_intermediate_size (768)
    fused as 3-D tensors, num_experts_per_token (8) per token, and one shared BailingHybridMLP of num_shared_experts
    (1) × moe_intermediate_size, stated as that many shared experts. attribute_map: model_max_length is
    max_position_embeddings (262144), num_experts num_local_experts, num_experts_per_token num_experts_per_tok,
    num_shared_experts n_shared_experts. A final norm; lm_head is never tied: BailingHybridForCausalLM declares no tied
    weights (_tied_weights_keys is empty), so tie_word_embeddings changes nothing. The multi-token-prediction layers
    (num_nextn_predict_layers) are not part of BailingHybridForCausalLM."""
    c = c.with_defaults({"vocab_size": 157_184, "hidden_size": 2560, "num_hidden_layers": 42})
    heads = c.int("num_attention_heads", 32)
    kda = {
        "kind": "kda",
        "n_heads": _key(c, "linear_num_heads", "num_attention_heads", 32),
        "head_dim": _key(c, "linear_head_dim", "head_dim", 128),
        "conv_kernel": _key(c, "linear_conv_kernel_dim", "short_conv_kernel_size", 4),
        "activation": c.activation("hidden_act", "silu"),
        "full_gates": True,
        "safe_gate": c.bool("kda_safe_gate", True),
    }
    mla = {
        "kind": "mla",
        "n_heads": heads,
        "kv_lora_rank": c.int("kv_lora_rank", 512),
        "qk_nope_head_dim": c.int("qk_nope_head_dim", 128),
        "qk_rope_head_dim": c.int("qk_rope_head_dim", 64),
        "v_head_dim": c.int("v_head_dim", 128),
        "bias": c.bool("attention_bias", False),
        "head_gate": True,
    }
    width = c.int("moe_intermediate_size", 768)
    moe = {
        "kind": "moe",
        "n_experts": _alias(c, "num_experts", "num_local_experts", 512),
        "top_k": _alias(c, "num_experts_per_token", "num_experts_per_tok", 8),
        "expert": gated(c, width=width),
    }
    shared = _alias(c, "num_shared_experts", "n_shared_experts", 1)
    if shared:
        moe.update(n_shared_experts=shared, shared=gated(c, width=width))
    group = c.int("layer_group_size", 6)
    first = c.int("first_k_dense_replace", 2, positive=False)
    mixers = types(
        c,
        "layer_types",
        lambda i: "full_attention" if (i + 1) % group == 0 else "linear_attention",
        ("full_attention", "linear_attention"),
    )
    ffns = types(c, "mlp_layer_types", lambda i: "dense" if i < first else "sparse", ("sparse", "dense"))
    blocks = {"linear_attention": kda, "full_attention": mla, "sparse": moe, "dense": gated(c, width=c.int("intermediate_size", 6144))}
    mixer, ffn, layers = runs(list(zip(mixers, ffns)), blocks)
    context = c.int("model_max_length") if c.has("model_max_length") else c.int("max_position_embeddings", 262_144)
    return {
        **common(c, tie=False),
        "context_length": context,
        "tie_embeddings": False,
        "attention": blocks[mixer],
        "ffn": blocks[ffn],
        "norm": rms(),
        **({"layers": layers} if layers else {}),
    }
