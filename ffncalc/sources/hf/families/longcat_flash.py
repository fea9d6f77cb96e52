"""LongCat-Flash (Meituan LongCat Team, LongCat-Flash Technical Report, arXiv:2509.01322): shortcut-connected MoE
layers of two MLA attention sublayers and two dense SwiGLU MLPs, with a mixture of routed and zero-computation
(identity) experts beside the first MLP."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, family, gated, layer_groups, rms
from .deepseek import MLA_MODULES

# Inside LongcatFlashDecoderLayer i: self_attn.j, mlps.j, input_layernorm.j and post_attention_layernorm.j are our
# layer 2i + j; the shortcut mixture (mlp) is our layer 2i, beside mlps.0.
SUBLAYERS = (r"^(?:self_attn|mlps|input_layernorm|post_attention_layernorm)\.(\d+)(?:\.|$)", 2)
LONGCAT_MODULES = (
    (r"self_attn\.\d+\.o_proj$", "attn.o"),
    (r"mlps\.0\.", "ffn.shared"),
    (r"mlps\.1\.gate_proj$", "ffn.gate"),
    (r"mlps\.1\.up_proj$", "ffn.up"),
    (r"mlps\.1\.down_proj$", "ffn.down"),
    (r"mlp\.router\.classifier$", "ffn.router"),
    (r"(input_layernorm|post_attention_layernorm)\.\d+$", "norms"),
)


@family("longcat_flash", layer_modules=LONGCAT_MODULES + MLA_MODULES + MOE_MODULES, sublayers=SUBLAYERS)
def longcat_flash(c: Config) -> dict:
    """LongcatFlashConfig / LongcatFlashDecoderLayer: each of num_layers (default 28) transformers layers is two of
    ours, as its attention sublayers are (their cache layers 2i and 2i + 1; num_hidden_layers = 2 · num_layers, and a
    config stating num_hidden_layers sets num_layers to half of it). Our layer 2i: input_layernorm[0],
    self_attn[0], post_attention_layernorm[0], then mlps[0] and the mixture (mlp) on the same normed input; our layer
    2i + 1: input_layernorm[1], self_attn[1], post_attention_layernorm[1], mlps[1]. The mixture's output is added to
    the residual stream after mlps[1] rather than after mlps[0] (the shortcut): the same tensors and the same work,
    so the mixture is stated as one with mlps[0] as its shared expert. RMSNorms before each sublayer.

    LongcatFlashMLA: DeepSeek-V3's latent attention with a low-rank query always (q_lora_rank, default 1536;
    kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, 64 heads; attention_bias on q_a,
    kv_a and o, default false), its query scaled by √(hidden_size / q_lora_rank) after q_b and its normed latent by
    √(hidden_size / kv_lora_rank). mlps: SwiGLU of ffn_hidden_size (default 12288), bias-free.

    LongcatFlashMoE: a router (classifier, d -> n_routed_experts + zero_expert_num, bias router_bias if the config
    states it, default none; e_score_correction_bias a buffer) picks moe_topk (default 12) of n_routed_experts
    (default 512) SwiGLU experts of expert_ffn_hidden_size (default 2048) and zero_expert_num (default 256) identity
    experts, which return their input. LongcatFlashExperts holds gate_up_proj for every router output, identity
    experts included (never read), and down_proj for the routed experts only. Active parameters and FLOPs take
    every one of a token's moe_topk choices to be a routed expert: the most a token computes (the model's own
    average is lower: LongCat-Flash reports 18.6B to 31.3B active, about 27B on average)."""
    if c.has("num_hidden_layers"):  # LongcatFlashConfig's setter: num_layers = num_hidden_layers // 2
        layers = c.int("num_hidden_layers") // 2
        if not layers:
            raise c.fail("num_hidden_layers", "LongcatFlashConfig halves it into num_layers, which would be 0")
    else:
        layers = c.int("num_layers", 28)
    nope, rope = c.int("qk_nope_head_dim", 128), c.int("qk_rope_head_dim", 64)
    if c.has("qk_head_dim") and c.int("qk_head_dim") != nope + rope:
        raise c.fail("qk_head_dim", f"LongcatFlashMLA splits each query head into qk_nope_head_dim + qk_rope_head_dim = {nope + rope}")
    bias = c.bool("attention_bias", False)
    attention = {
        "kind": "mla",
        "n_heads": c.int("num_attention_heads", 64),
        "q_lora_rank": c.int("q_lora_rank", 1536),
        "kv_lora_rank": c.int("kv_lora_rank", 512),
        "qk_nope_head_dim": nope,
        "qk_rope_head_dim": rope,
        "v_head_dim": c.int("v_head_dim", 128),
        "bias": bias,
        "query_scale": True,
    }
    dense = gated(c, "ffn_hidden_size", width=c.int("ffn_hidden_size", 12288))
    routed = c.int("n_routed_experts", 512, positive=False)
    if not routed:
        raise c.fail("n_routed_experts", "a mixture of identity experts alone (no gate_up_proj) is not read")
    identity = c.int("zero_expert_num", 256, positive=False)
    moe = {
        "kind": "moe",
        "n_experts": routed,
        "top_k": c.int("moe_topk", 12),
        "expert": gated(c, width=c.int("expert_ffn_hidden_size", 2048)),
        "n_shared_experts": 1,
        "shared": dense,
        "router_bias": c.bool("router_bias", False),
        "identity_experts": identity,
        "identity_gate_up": bool(identity),
    }
    ffn, groups = layer_groups(["moe", "dense"] * layers, {"moe": moe, "dense": dense})
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size", 131072),
        "d_model": c.int("hidden_size", 6144),
        "n_layers": 2 * layers,
        "context_length": c.int("max_position_embeddings", 131072),
        "positions": "rotary",
        "tie_embeddings": c.bool("tie_word_embeddings", False),
        "attention": attention,
        "ffn": ffn,
        **({"layers": groups} if groups else {}),
        "norm": rms(),
    }
