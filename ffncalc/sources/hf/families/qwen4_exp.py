"""Qwen4-Exp (transformers 5.23.0, models/qwen4_exp): Qwen3.5-MoE's hybrid of Gated DeltaNet and gated attention,
the attention over the keys QSA's block indexer selects, every layer's residual as hc_count streams joined by a
gated low-rank hyper-connection (parts/hyper.py) in place of the norms. A qwen4_exp config.json is read through
its text_config (qwen4_exp_text)."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, attention, common, family, gated
from .qwen3_5 import QWEN3_5_MODULES
from .qwen3_next import gated_deltanet, runs

# Qwen4ExpTextQSAIndexer (self_attn.indexer), and the hyper-connections: Qwen4ExpTextGatedResidual before each
# sublayer (attn_hyper_connection, mlp_hyper_connection) and at the end (hyper_connection_mixer, without inject).
SITES = (("attn_hyper_connection", "hc.attn"), ("mlp_hyper_connection", "hc.ffn"))
PARTS = (("hc_norm", "norm"), ("input_mix_weight_down", "down"), ("input_mix_weight_up", "up"), ("block_inject_weight", "inject"))
QWEN4_EXP_MODULES = (
    (r"indexer\.index_qk_proj$", "attn.indexer.qk"),
    (r"indexer\.q_layernorm$", "attn.indexer.q_norm"),
    (r"indexer\.k_layernorm$", "attn.indexer.k_norm"),
    *((rf"^{site}\.{part}$", f"{name}.{ours}") for site, name in SITES for part, ours in PARTS),
)
MIXER_MODULES = tuple((rf"hyper_connection_mixer\.{part}$", f"hc.head.{ours}") for part, ours in PARTS[:3])

# Qwen4ExpTextConfig's defaults for the keys read here; the QSA keys have none (the config class refuses a config
# without them: scripts/hf_defaults.py states them).
QWEN4_EXP_TEXT = {
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
    "num_experts_per_tok": 10,
    "num_experts": 512,
    "hc_count": 4,
    "hc_lowrank": 320,
}
MIXERS = ("linear_attention", "indexed_attention")


def _layer_types(c: Config) -> list[str]:
    """Qwen4ExpTextConfig.__post_init__: layer_types as stated ("full_attention" read as "indexed_attention"), else
    every full_attention_interval-th layer (4) indexed attention and the others linear attention."""
    n = c.int("num_hidden_layers")
    types = c.data.get("layer_types")
    if types is None:
        interval = c.int("full_attention_interval", 4)
        types = ["linear_attention" if (i + 1) % interval else "indexed_attention" for i in range(n)]
    if not isinstance(types, list) or len(types) != n:
        raise c.fail("layer_types", f"expected a list of {n} layer types, got {types!r}")
    types = ["indexed_attention" if t == "full_attention" else t for t in types]
    if not set(types) <= set(MIXERS):
        raise c.fail("layer_types", f"expected each of {', '.join(MIXERS)}, got {types!r}")
    return types


@family("qwen4_exp_text", layer_modules=QWEN4_EXP_MODULES + QWEN3_5_MODULES + MOE_MODULES, top_modules=MIXER_MODULES)
def qwen4_exp_text(c: Config) -> dict:
    """Qwen4ExpTextConfig / Qwen4ExpTextDecoderLayer: no norms around the sublayers and no final norm; each sublayer
    reads the hc_count (4) streams through a Qwen4ExpTextGatedResidual (an RMSNorm over each stream, weight
    hc_count × hidden, a low-rank mixer of hc_lowrank (320), block_inject_weight), and hyper_connection_mixer makes
    lm_head's input. linear_attn (Qwen4ExpTextGatedDeltaNet: Qwen3.5's, its gated norm's activation
    output_gate_type or hidden_act, which changes no count) or self_attn by layer_types (every fourth layer
    "indexed_attention" by default): Qwen3.5's gated attention (q_proj doubled, a per-head q_norm and k_norm,
    attention_bias, rotary over partial_rotary_factor of each head, 1 where rope_parameters leave it out) with
    Qwen4ExpTextQSAIndexer (indexer_n_heads, indexer_head_dim, indexer_budget, indexer_compress_ratio;
    indexer_kv_heads must be 1). Every layer's FFN is Qwen3.5-MoE's (a bias-free softmax router over num_experts
    (512), num_experts_per_tok (10) fused experts of moe_intermediate_size (512), one shared expert of
    shared_expert_intermediate_size (512) scaled by sigmoid(shared_expert_gate(x))). lm_head untied. Per-layer
    n-gram embeddings (ple_layer_ids) are not read."""
    c = c.with_defaults(QWEN4_EXP_TEXT)
    if c.data.get("ple_layer_ids"):
        raise c.fail("ple_layer_ids", "per-layer hashed n-gram embeddings (PLE) are not read yet")
    types = _layer_types(c)
    blocks = {"linear_attention": gated_deltanet(c)}
    if "indexed_attention" in types:
        if c.int("indexer_kv_heads") != 1:
            raise c.fail("indexer_kv_heads", "Qwen4-Exp's QSA indexer has one key head")
        bias = c.bool("attention_bias", False)
        blocks["indexed_attention"] = {
            "kind": "qsa",
            **attention(c, qkv_bias=bias, o_bias=bias, qk_norm="head", rotary=c.rope_fraction(1.0)),
            "gate": True,
            "index_n_heads": c.int("indexer_n_heads"),
            "index_head_dim": c.int("indexer_head_dim"),
            "index_budget": c.int("indexer_budget"),
            "index_block_size": c.int("indexer_compress_ratio"),
        }
    blocks["ffn"] = {
        "kind": "moe",
        "n_experts": c.int("num_experts"),
        "top_k": c.int("num_experts_per_tok"),
        "expert": gated(c, width=c.int("moe_intermediate_size")),
        "n_shared_experts": 1,
        "shared_gate": True,
        "shared": gated(c, width=c.int("shared_expert_intermediate_size")),
    }
    mixer, kind, layers = runs([(t, "ffn") for t in types], blocks)
    return {
        **common(c, tie=False, context_default=32768),
        "attention": blocks[mixer],
        "ffn": blocks[kind],
        "norm": {"kind": "rmsnorm", "per_layer": 0, "final": False},
        **({"layers": layers} if layers else {}),
        "hyper": {"streams": c.int("hc_count"), "mixer": "gated", "rank": c.int("hc_lowrank")},
    }
