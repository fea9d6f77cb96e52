"""DeepSeek-V4 (deepseek_v4): compressed attention in three layer kinds (sliding window alone, compressed sparse
with a lightning indexer, heavily compressed; blocks/csa.py), hash-routed mixtures in the first layers and top-k
mixtures after, and the residual as hc_mult streams joined by manifold-constrained hyper-connections
(parts/hyper.py)."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, common, family, gated, rms, stack

# DeepseekV4Attention (sinks held by self_attn itself), its compressor and the CSA compressor's indexer, before the
# common names (the compressor's gate_proj and kv_norm are not an MLP's or the attention's); the hyper-connections.
DEEPSEEK_V4_MODULES = (
    (r"compressor\.indexer\.kv_proj$", "attn.indexer.kv"),
    (r"compressor\.indexer\.gate_proj$", "attn.indexer.gate"),
    (r"compressor\.indexer\.kv_norm$", "attn.indexer.kv_norm"),
    (r"compressor\.indexer\.q_b_proj$", "attn.indexer.q_b"),
    (r"compressor\.indexer\.scorer\.weights_proj$", "attn.indexer.weights_proj"),
    (r"compressor\.indexer$", "attn.indexer.position_bias"),
    (r"compressor\.kv_proj$", "attn.compressor.kv"),
    (r"compressor\.gate_proj$", "attn.compressor.gate"),
    (r"compressor\.kv_norm$", "attn.compressor.kv_norm"),
    (r"compressor$", "attn.compressor.position_bias"),
    (r"self_attn\.q_a_proj$", "attn.q_a"),
    (r"self_attn\.q_a_norm$", "attn.q_a_norm"),
    (r"self_attn\.q_b_proj$", "attn.q_b"),
    (r"self_attn\.kv_proj$", "attn.kv"),
    (r"self_attn\.kv_norm$", "attn.kv_norm"),
    (r"self_attn\.o_a_proj$", "attn.o_a"),
    (r"self_attn\.o_b_proj$", "attn.o_b"),
    (r"^self_attn$", "attn.sinks"),
    (r"^attn_hc$", "hc.attn"),
    (r"^ffn_hc$", "hc.ffn"),
)
HC_HEAD = ((r"hc_head$", "hc.head"),)

# DeepseekV4Config's defaults for the keys read here (transformers 5.23.0, configuration_deepseek_v4.py).
DEEPSEEK_V4 = {
    "vocab_size": 129280,
    "hidden_size": 4096,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 43,
    "num_attention_heads": 64,
    "head_dim": 512,
    "q_lora_rank": 1024,
    "num_experts_per_tok": 6,
    "n_routed_experts": 256,
    "max_position_embeddings": 1048576,
    "hc_mult": 4,
    "hc_sinkhorn_iters": 20,
    "sliding_window": 128,
    "o_groups": 8,
    "o_lora_rank": 1024,
    "index_n_heads": 64,
    "index_head_dim": 128,
    "index_topk": 512,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
}
COMPRESS_RATES = {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128}
RATIO_TYPES = {0: "sliding_attention", 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}
HASH_LAYERS = 3  # DeepseekV4Config.default_num_hash_layers


def _types(c: Config, key: str, allowed: set[str], derived: list[str]) -> list[str]:
    """A per-layer list as stated, else as DeepseekV4Config.__post_init__ derives it; its first n entries."""
    n = c.int("num_hidden_layers")
    types = c.data.get(key)
    if types is None:
        types = derived
    if not isinstance(types, list) or len(types) < n or not set(types[:n]) <= allowed:
        raise c.fail(key, f"expected {n} entries, each one of {sorted(allowed)}, got {types!r}")
    return types[:n]


@family("deepseek_v4", layer_modules=DEEPSEEK_V4_MODULES + MOE_MODULES, top_modules=HC_HEAD)
def deepseek_v4(c: Config) -> dict:
    """DeepseekV4Config / DeepseekV4DecoderLayer: each sublayer reads the hc_mult (4) streams through its
    DeepseekV4HyperConnection (attn_hc, ffn_hc; hc_sinkhorn_iters 20) and its RMSNorm (input_layernorm,
    post_attention_layernorm); DeepseekV4HyperHead (hc_head) makes the final RMSNorm's input; lm_head untied.

    DeepseekV4Attention: 64 heads of head_dim 512 and one shared key-value head, q_lora_rank 1024, rotary on
    qk_rope_head_dim = head_dim × partial_rotary_factor (64 / 512) features, sinks, o_groups 8 of o_lora_rank 1024,
    sliding_window 128, all bias-free. layer_types (else the legacy compress_ratios, 0 / 4 / 128 per layer; else two
    heavily compressed layers, then compressed sparse and heavily compressed alternating from a heavily compressed
    one): "sliding_attention" has no compressor; "heavily_compressed_attention" DeepseekV4HCACompressor at
    compress_rates' 128 (legacy compress_rate_hca); "compressed_sparse_attention" DeepseekV4CSACompressor at 4
    (compress_rate_csa), overlapping, with DeepseekV4Indexer (index_n_heads 64, index_head_dim 128, index_topk 512).

    DeepseekV4SparseMoeBlock: n_routed_experts (256) fused experts of moe_intermediate_size (2048), num_experts_per_tok
    (6) per token, and one shared DeepseekV4MLP of moe_intermediate_size (n_shared_experts is not read); its router is
    a bias-free weight, DeepseekV4HashRouter (tid2eid, a buffer) in the layers mlp_layer_types calls "hash_moe"
    (else the first num_hash_layers, 3), DeepseekV4TopKRouter (e_score_correction_bias, a buffer) in the others.
    The checkpoint's multi-token-prediction layers (num_nextn_predict_layers) are not built."""
    c = c.with_defaults({**DEEPSEEK_V4, "n_routed_experts": c.data.get("num_local_experts", 256)})
    n = c.int("num_hidden_layers")
    rates = dict(COMPRESS_RATES)
    stated = c.data.get("compress_rates")
    if stated is not None:
        if not isinstance(stated, dict):
            raise c.fail("compress_rates", f"expected a mapping of layer type to rate, got {stated!r}")
        rates = dict(stated)  # as transformers takes it: the stated mapping in place of the default
    for key, kind in (("compress_rate_csa", "compressed_sparse_attention"), ("compress_rate_hca", "heavily_compressed_attention")):
        if c.data.get(key) is not None:
            rates[kind] = c.int(key)
    ratios = c.data.get("compress_ratios")
    if c.data.get("layer_types") is None and ratios is not None:
        if not isinstance(ratios, list) or not set(ratios) <= set(RATIO_TYPES):
            raise c.fail("compress_ratios", f"expected per-layer entries of 0, 4 or 128, got {ratios!r}")
        derived = [RATIO_TYPES[r] for r in ratios]
    else:
        derived = ["heavily_compressed_attention"] * min(n, 2) + [
            "compressed_sparse_attention" if i % 2 else "heavily_compressed_attention" for i in range(max(n - 2, 0))
        ]
    kinds = _types(c, "layer_types", set(RATIO_TYPES.values()), derived)
    hashed = c.int("num_hash_layers", HASH_LAYERS, positive=False)
    mlp_kinds = _types(c, "mlp_layer_types", {"hash_moe", "moe"}, ["hash_moe"] * min(n, hashed) + ["moe"] * max(0, n - hashed))

    head_dim = c.int("head_dim")
    if c.data.get("partial_rotary_factor") is not None:
        rope = int(head_dim * c.float("partial_rotary_factor", 0.125))
    elif c.data.get("qk_rope_head_dim") is not None:
        rope = int(head_dim * (c.int("qk_rope_head_dim") / head_dim))
    else:
        rope = int(head_dim * (64 / 512))
    base = {
        "kind": "csa",
        "n_heads": c.int("num_attention_heads"),
        "head_dim": head_dim,
        "q_lora_rank": c.int("q_lora_rank"),
        "o_groups": c.int("o_groups"),
        "o_lora_rank": c.int("o_lora_rank"),
        "window": c.int("sliding_window"),
        "rotary_dim": rope,
        "sinks": True,
    }
    for kind in set(kinds) - {"sliding_attention"}:
        if type(rates.get(kind)) is not int or rates[kind] < 1:
            raise c.fail("compress_rates", f"no positive compression rate for {kind}: {rates!r}")
    attentions = {
        "sliding_attention": base,
        "heavily_compressed_attention": {**base, "compress_rate": rates.get("heavily_compressed_attention")},
        "compressed_sparse_attention": {
            **base,
            "compress_rate": rates.get("compressed_sparse_attention"),
            "overlap": True,
            "index_n_heads": c.int("index_n_heads"),
            "index_head_dim": c.int("index_head_dim"),
            "index_topk": c.int("index_topk"),
        },
    }
    width = c.int("moe_intermediate_size")
    moe = {
        "kind": "moe",
        "n_experts": c.int("n_routed_experts"),
        "top_k": c.int("num_experts_per_tok"),
        "expert": gated(c, width=width),
        "n_shared_experts": 1,
        "shared": gated(c, width=width, bias=c.bool("mlp_bias", False)),
    }  # DeepseekV4MLP: bias=config.mlp_bias
    ffns = {"moe": moe, "hash_moe": {**moe, "hash_routed": True}}
    layers = [{"attention": attentions[a], "ffn": ffns[f]} for a, f in zip(kinds, mlp_kinds)]
    return {
        **common(c, tie=False, context_default=DEEPSEEK_V4["max_position_embeddings"]),
        **stack(layers),
        "norm": rms(),
        "hyper": {"streams": c.int("hc_mult"), "mixer": "mhc", "sinkhorn_iters": c.int("hc_sinkhorn_iters")},
    }
