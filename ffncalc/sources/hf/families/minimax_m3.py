"""MiniMax-M3 (transformers 5.23.0, models/minimax_m3_vl): the language model of the multimodal MiniMax-M3,
grouped-query attention with a block-sparse lightning indexer in some layers and a sigmoid-routed mixture with
a shared expert, or a dense MLP, by layer."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, common, family, rms, stack

# MiniMaxM3VLIndexer (self_attn.indexer), before the common names: its q_proj, k_proj and norms are not the
# attention's. A dense layer's MiniMaxM3VLDenseMLP fuses gate and up in one Linear.
MINIMAX_M3_MODULES = (
    (r"indexer\.q_proj$", "attn.indexer.q"),
    (r"indexer\.k_proj$", "attn.indexer.k"),
    (r"indexer\.q_norm$", "attn.indexer.q_norm"),
    (r"indexer\.k_norm$", "attn.indexer.k_norm"),
    (r"^mlp\.gate_up_proj$", "ffn.gate+up"),
)

# MiniMaxM3VLTextConfig's defaults: a wrapper's text_config may state only what differs from them.
MINIMAX_M3_TEXT = {
    "vocab_size": 200_064,
    "hidden_size": 6144,
    "intermediate_size": 3072,
    "num_hidden_layers": 60,
    "num_attention_heads": 64,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "max_position_embeddings": 524_288,
    "tie_word_embeddings": False,
    "num_experts_per_tok": 4,
    "dense_intermediate_size": 12_288,
    "shared_intermediate_size": 3072,
    "index_n_heads": 4,
    "index_head_dim": 128,
    "index_block_size": 128,
    "index_topk_blocks": 16,
    "index_local_blocks": 1,
}
# The legacy sparse_attention_config keys, which override the flat ones (MiniMaxM3VLTextConfig.__post_init__).
LEGACY_INDEX_KEYS = {
    "index_n_heads": "sparse_num_index_heads",
    "index_head_dim": "sparse_index_dim",
    "index_block_size": "sparse_block_size",
    "index_topk_blocks": "sparse_topk_blocks",
    "index_local_blocks": "sparse_local_block",
}


def _per_layer(c: Config, key: str, legacy: str, values: dict, default: str) -> list[str]:
    """layer_types or mlp_layer_types as stated; else from a legacy per-layer list of flags (true: the first
    kind of ``values``); else ``default`` in every layer."""
    n = c.int("num_hidden_layers")
    kinds = c.data.get(key)
    flags = legacy_flags(c, legacy, n) if kinds is None else None
    if flags is not None:
        first, second = values
        kinds = [first if flag else second for flag in flags]
    if kinds is None:
        kinds = [default] * n
    if not isinstance(kinds, list) or len(kinds) != n or not set(kinds) <= set(values):
        raise c.fail(key, f"expected {n} entries, each one of {', '.join(values)}; got {kinds!r}")
    return kinds


def legacy_flags(c: Config, key: str, n: int) -> list | None:
    """sparse_attention_config.sparse_attention_freq (key "sparse_attention_freq") or moe_layer_freq."""
    if key == "sparse_attention_freq":
        sparse = c.data.get("sparse_attention_config") or {}
        flags = sparse.get(key) if isinstance(sparse, dict) else None
    else:
        flags = c.data.get(key)
    if flags is not None and not isinstance(flags, list):
        raise c.fail(key, f"expected a list of {n} per-layer flags, got {flags!r}")
    return flags


@family("minimax_m3_vl_text", layer_modules=MINIMAX_M3_MODULES + MOE_MODULES)
def minimax_m3_vl_text(c: Config) -> dict:
    """MiniMaxM3VLTextConfig / MiniMaxM3VLDecoderLayer: MiniMaxM3VLAttention, q/k/v/o without bias, a Gemma-style
    RMSNorm (1 + w, zero-initialised: an RMSNorm's parameters) over head_dim on each query and key head (head_dim
    128, 64 heads, 4 KV heads by default), rotary over rope_parameters' partial_rotary_factor of each head (the
    rotary_dim key is not read by the model); in the layers layer_types calls "minimax_m3_sparse" (else from
    sparse_attention_config.sparse_attention_freq; none by default) a MiniMaxM3VLIndexer (q_proj, k_proj, q_norm,
    k_norm; index_n_heads 4 × index_head_dim 128, blocks of index_block_size 128, index_topk_blocks 16, of which
    index_local_blocks 1; sparse_attention_config's sparse_* keys override these). The MLP by mlp_layer_types
    (else moe_layer_freq; every layer "sparse" by default): MiniMaxM3VLSparseMoeBlock, a bias-free sigmoid router
    over num_local_experts (128) whose e_score_correction_bias is a buffer, num_experts_per_tok (4) fused experts
    of intermediate_size (3072) and one shared expert of shared_intermediate_size (3072, its gate and up fused);
    or MiniMaxM3VLDenseMLP of dense_intermediate_size (12288). Every gate is SwiGLU-OAI, computed inline
    ((up + 1) · g · σ(1.702 g), clamped): SiLU's form, whatever hidden_act says (the config sets it to silu)."""
    c = c.with_defaults(MINIMAX_M3_TEXT)
    sparse = c.data.get("sparse_attention_config") or {}
    if not isinstance(sparse, dict):
        raise c.fail("sparse_attention_config", f"expected an object, got {sparse!r}")
    legacy = {flat: sparse[old] for flat, old in LEGACY_INDEX_KEYS.items() if old in sparse}  # these win
    c = Config({**c.data, **legacy}, c.text, c.source, start=c.start, wrapper=c.wrapper, towers=c.towers)
    heads = c.int("num_attention_heads")
    head_dim = c.int("head_dim")
    full = {
        "kind": "mha",
        "n_heads": heads,
        "n_kv_heads": c.int("num_key_value_heads", heads),
        "head_dim": head_dim,
        "qkv_bias": False,
        "o_bias": False,
        "qk_norm": "head",
    }
    rotary = int(head_dim * c.rope_fraction(1.0))
    if rotary != head_dim:
        full["rotary_dim"] = rotary
    indexed = {**full, "kind": "block_sparse", **{k: c.int(k) for k in LEGACY_INDEX_KEYS}}
    silu = {"activation": "silu", "bias": False}
    moe = {
        "kind": "moe",
        "n_experts": c.int("num_local_experts", c.int("num_experts", 128)),
        "top_k": c.int("num_experts_per_tok"),
        "expert": {"kind": "gated", "d_ff": c.int("intermediate_size"), **silu},
        "n_shared_experts": 1,
        "shared": {"kind": "gated", "d_ff": c.int("shared_intermediate_size"), **silu},
    }
    dense = {"kind": "gated", "d_ff": c.int("dense_intermediate_size"), **silu}
    attentions, ffns = {"minimax_m3_sparse": indexed, "full_attention": full}, {"sparse": moe, "dense": dense}
    mixers = _per_layer(c, "layer_types", "sparse_attention_freq", attentions, "full_attention")
    mlps = _per_layer(c, "mlp_layer_types", "moe_layer_freq", ffns, "sparse")
    layers = [{"attention": attentions[a], "ffn": ffns[f]} for a, f in zip(mixers, mlps)]
    return {**common(c, tie=False, context_default=524_288), **stack(layers), "norm": rms()}
