"""HY-V4 (Tencent 2026): DeepSeek-V3.2's latent attention and indexer (shared across layers as GLM-5's IndexShare)
with attention sinks and a sigmoid gate on every output feature, one dense layer first and then DeepSeek-style
mixtures, and the residual as hc_mult streams joined by HY-V4's hyper-connections (parts/hyper.py)."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, family
from .deepseek import MLA_MODULES
from .dsa import INDEXER_MODULES, _dsa

# HYV4Attention's own parameters (sinks is held by self_attn itself), and the hyper-connections: attn_hc and
# ffn_hc (fn, base, scale each) in every layer, hc_head (hc_fn, hc_base, hc_scale) before the final norm.
HY_V4_MODULES = (
    (r"self_attn\.gate_proj$", "attn.gate"),
    (r"^self_attn$", "attn.sinks"),
    (r"^attn_hc$", "hc.attn"),
    (r"^ffn_hc$", "hc.ffn"),
)
HC_HEAD = ((r"hc_head$", "hc.head"),)

# HYV4Config's defaults for the keys read here (transformers 5.23.0, configuration_hy_v4.py).
HY_V4 = {
    "vocab_size": 120832,
    "hidden_size": 2816,
    "intermediate_size": 6912,
    "moe_intermediate_size": 768,
    "num_hidden_layers": 34,
    "num_attention_heads": 32,
    "n_shared_experts": 1,
    "n_routed_experts": 256,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_rope_head_dim": 64,
    "v_head_dim": 256,
    "qk_nope_head_dim": 192,
    "num_experts_per_tok": 8,
    "hidden_act": "silu",
    "max_position_embeddings": 262144,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "index_topk": 2048,
    "index_head_dim": 128,
    "index_n_heads": 16,
    "hc_mult": 4,
    "first_k_dense_replace": 1,
}


def _indexer_types(c: Config) -> list[str]:
    """HYV4Config.__post_init__: indexer_types as given, else layer 0 and every fourth from layer 1 "full" (their
    own HYV4Indexer), the others "shared" (no indexer: they reuse the last full layer's top-k)."""
    n = c.int("num_hidden_layers")
    types = c.data.get("indexer_types")
    if types is None:
        types = ["full" if i == 0 or (i - 1) % 4 == 0 else "shared" for i in range(n)]
    if not isinstance(types, list) or len(types) != n or not set(types) <= {"full", "shared"}:
        raise c.fail("indexer_types", f'expected {n} entries, each "full" or "shared", got {types!r}')
    return types


@family("hy_v4", layer_modules=HY_V4_MODULES + INDEXER_MODULES + MLA_MODULES + MOE_MODULES, top_modules=HC_HEAD)
def hy_v4(c: Config) -> dict:
    """HYV4Config / HYV4DecoderLayer: each sublayer reads the hc_mult (4) streams through its HYV4HyperConnection
    (attn_hc, ffn_hc) and its RMSNorm (input_layernorm, post_attention_layernorm), and its output is added back to
    every stream; HYV4HyperHead (hc_head) makes the final RMSNorm's input. HYV4Attention: DeepSeek-V2's MLA with a
    low-rank query always (q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 192, qk_rope_head_dim 64,
    v_head_dim 256, 32 heads; attention_bias false on q_a, kv_a and o), a learned sink logit per head, and a
    bias-free gate_proj (hidden -> heads × v_head_dim) whose sigmoid scales the heads' output before o_proj;
    HYV4Indexer (DeepSeek-V3.2's: index_n_heads 16, index_head_dim 128, index_topk 2048) in the layers
    indexer_types calls "full". mlp_layer_types (default: one "dense" layer, then "sparse"): a bias-free MLP of
    intermediate_size (6912), or HYV4MoE: a bias-free sigmoid router over n_routed_experts (256; its
    e_score_correction_bias a buffer), num_experts_per_tok (8) fused experts of moe_intermediate_size (768) and one
    shared MLP of moe_intermediate_size × n_shared_experts (1). lm_head untied; the checkpoint's mtp_layers are not
    built."""
    c = c.with_defaults({**HY_V4, "n_routed_experts": c.data.get("num_local_experts", 256)})
    n = c.int("num_hidden_layers")
    kinds = c.data.get("mlp_layer_types") or ["dense"] * min(1, n) + ["sparse"] * max(n - 1, 0)
    c = c.with_defaults({})
    c.data["mlp_layer_types"] = kinds
    spec = _dsa(c, HY_V4, _indexer_types(c))
    extra = {"sinks": True, "feature_gate": True}
    spec["attention"] = {**spec["attention"], **extra}
    for group in spec.get("layers", []):
        if "attention" in group:
            group["attention"] = {**group["attention"], **extra}
    spec["hyper"] = {"streams": c.int("hc_mult"), "mixer": "ihc"}
    spec.pop("mtp_layers", None)
    return spec
