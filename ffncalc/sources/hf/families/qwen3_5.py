"""Qwen3.5 and Qwen3.5-MoE (transformers 5.23.0, models/qwen3_5 and models/qwen3_5_moe): Qwen3-Next's hybrid of
Gated DeltaNet and gated full-attention layers, as the language model of a multimodal checkpoint. A qwen3_5 or
qwen3_5_moe config.json is read through its text_config (qwen3_5_text, qwen3_5_moe_text)."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated, rms
from .qwen3_next import gated_deltanet, layer_types, runs

# Qwen3_5GatedDeltaNet: Qwen3NextGatedDeltaNet with its two fused input projections split in four Linears,
# in_proj_qkv (2·key_dim + value_dim) and in_proj_z (value_dim) for in_proj_qkvz, in_proj_b and in_proj_a
# (num_v_heads each) for in_proj_ba: the same shapes and products, so each pair is our one component. dt_bias
# and A_log are Parameters of the mixer itself, named under the module "linear_attn".
QWEN3_5_MODULES = (
    (r"^linear_attn\.in_proj_(qkv|z)$", "linear_attn.in_proj_qkvz"),
    (r"^linear_attn\.in_proj_[ab]$", "linear_attn.in_proj_ba"),
    (r"^linear_attn\.conv1d$", "linear_attn.conv1d"),
    (r"^linear_attn$", "linear_attn.dt_bias+A_log"),
    (r"^linear_attn\.norm$", "linear_attn.norm"),
    (r"^linear_attn\.out_proj$", "linear_attn.out_proj"),
)

# The config classes' defaults: a wrapper's text_config may state only what differs from them.
QWEN3_5_TEXT = {
    "vocab_size": 248_320,
    "hidden_size": 4096,
    "intermediate_size": 12_288,
    "num_hidden_layers": 32,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "max_position_embeddings": 32_768,
    "tie_word_embeddings": False,
}
QWEN3_5_MOE_TEXT = {
    "vocab_size": 248_320,
    "hidden_size": 2048,
    "num_hidden_layers": 40,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "max_position_embeddings": 32_768,
    "tie_word_embeddings": False,
    "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512,
    "num_experts_per_tok": 8,
    "num_experts": 256,
}


def gated_attention(c: Config) -> dict:
    """Qwen3_5Attention (Qwen3NextAttention): q_proj doubled, each head's query and a gate whose sigmoid scales the
    head's output, whatever attn_output_gate says (the class reads no such key); attention_bias on q/k/v/o; an
    RMSNorm over head_dim on each query and key head; rotary over partial_rotary_factor of each head (0.25 by
    default, in rope_parameters or at the top level; the interleaved M-RoPE sections split that same width)."""
    bias = c.bool("attention_bias", False)
    return {"kind": "mha", **attention(c, qkv_bias=bias, o_bias=bias, qk_norm="head", rotary=c.rope_fraction(0.25)), "gate": True}


def hybrid(c: Config, ffn: dict) -> dict:
    """The stack: linear_attn or self_attn by layer_types (or every full_attention_interval-th layer full, 4 by
    default), the same FFN in every layer; two Qwen3_5RMSNorms a layer and a final one (1 + w: an RMSNorm's
    parameters); lm_head untied unless tie_word_embeddings."""
    blocks = {"linear_attention": gated_deltanet(c), "full_attention": gated_attention(c), "ffn": ffn}
    mixer, kind, layers = runs([(t, "ffn") for t in layer_types(c)], blocks)
    return {
        **common(c, tie=False, context_default=32768),
        "attention": blocks[mixer],
        "ffn": blocks[kind],
        "norm": rms(),
        **({"layers": layers} if layers else {}),
    }


@family("qwen3_5_text", layer_modules=QWEN3_5_MODULES)
def qwen3_5_text(c: Config) -> dict:
    """Qwen3_5TextConfig / Qwen3_5DecoderLayer: Gated DeltaNet (Qwen3_5GatedDeltaNet, in_proj_qkv/z/b/a) or gated
    full attention by layer_types, every layer with a gated MLP of intermediate_size (Qwen3_5MLP; the config class
    has no MoE keys). Defaults: Qwen3_5TextConfig's (head_dim 256, 4 KV heads, GDN 16 QK heads and 32 V heads of
    128, kernel 4). The checkpoint's mtp.* and model.visual.* tensors are not in the causal LM."""
    c = c.with_defaults(QWEN3_5_TEXT)
    return hybrid(c, gated(c))


@family("qwen3_5_moe_text", layer_modules=QWEN3_5_MODULES + MOE_MODULES)
def qwen3_5_moe_text(c: Config) -> dict:
    """Qwen3_5MoeTextConfig / Qwen3_5MoeDecoderLayer: Qwen3.5's mixers, and in every layer Qwen3_5MoeSparseMoeBlock:
    a bias-free softmax top-k router (Qwen3_5MoeTopKRouter, a weight of num_experts × hidden), num_experts fused
    experts of moe_intermediate_size and one shared expert of shared_expert_intermediate_size scaled by
    sigmoid(shared_expert_gate(x)). The config class deletes mlp_only_layers, decoder_sparse_step and
    intermediate_size, so a config's mlp_only_layers is not read: no layer is dense. Defaults:
    Qwen3_5MoeTextConfig's (256 experts, top 8, 512 wide; 2 KV heads)."""
    c = c.with_defaults(QWEN3_5_MOE_TEXT)
    moe = {
        "kind": "moe",
        "n_experts": c.int("num_experts"),
        "top_k": c.int("num_experts_per_tok"),
        "expert": gated(c, width=c.int("moe_intermediate_size")),
        "n_shared_experts": 1,
        "shared_gate": True,
        "shared": gated(c, width=c.int("shared_expert_intermediate_size")),
    }
    return hybrid(c, moe)
