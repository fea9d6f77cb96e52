"""DeepSeek Sparse Attention: DeepSeek-V3.2 (deepseek_v32) and GLM-5 (glm_moe_dsa), DeepSeek-V3's layout with
an indexer in every attention (DeepSeek-V3.2-Exp technical report §2.1; GLM-5, arXiv:2602.15763)."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, family, gated
from .deepseek import MLA_MODULES, _deepseek

# DeepseekV32Indexer / GlmMoeDsaIndexer (self_attn.indexer), before the common names: its k_norm is not the
# attention's k_norm.
INDEXER_MODULES = (
    (r"indexer\.wq_b$", "attn.indexer.wq_b"),
    (r"indexer\.wk$", "attn.indexer.wk"),
    (r"indexer\.k_norm$", "attn.indexer.k_norm"),
    (r"indexer\.weights_proj$", "attn.indexer.weights_proj"),
)

# The config classes' defaults for the keys read here (transformers 5.23.0, configuration_deepseek_v32.py and
# configuration_glm_moe_dsa.py).
DEEPSEEK_V32 = {
    "vocab_size": 129280,
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "n_shared_experts": 1,
    "n_routed_experts": 256,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "qk_nope_head_dim": 128,
    "num_experts_per_tok": 8,
    "hidden_act": "silu",
    "max_position_embeddings": 163840,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "index_topk": 2048,
    "index_head_dim": 128,
    "index_n_heads": 64,
    "first_k_dense_replace": 3,
}
GLM_MOE_DSA = {
    "vocab_size": 154880,
    "hidden_size": 6144,
    "intermediate_size": 12288,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 78,
    "num_attention_heads": 64,
    "n_shared_experts": 1,
    "n_routed_experts": 256,
    "kv_lora_rank": 512,
    "q_lora_rank": 2048,
    "qk_rope_head_dim": 64,
    "v_head_dim": 256,
    "qk_nope_head_dim": 192,
    "num_experts_per_tok": 8,
    "hidden_act": "silu",
    "max_position_embeddings": 202752,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "index_topk": 2048,
    "index_head_dim": 128,
    "index_n_heads": 32,
    "first_k_dense_replace": 3,
}


def dsa_blocks(c: Config, defaults: dict) -> tuple[dict, list[str], dict, dict]:
    """The spec of ``_deepseek`` (every layer a mixture), the layers' MLP kinds, the MLPs by kind ("sparse": the
    mixture, "dense": a bias-free MLP of intermediate_size) and the attentions by indexer kind ("full": MLA with
    the indexer, "shared": without)."""
    n = c.int("num_hidden_layers")
    kinds = c.data.get("mlp_layer_types")
    if kinds is None:
        first = min(c.int("first_k_dense_replace", positive=False), n)
        kinds = ["dense"] * first + ["sparse"] * (n - first)
    if not isinstance(kinds, list) or len(kinds) != n or not set(kinds) <= {"dense", "sparse"}:
        raise c.fail("mlp_layer_types", f'expected {n} entries, each "dense" or "sparse", got {kinds!r}')
    # Every layer a MoE, to take _deepseek's mixture as it is; the dense MLP is DeepseekV32MLP (no bias).
    all_moe = Config(
        {**c.data, "first_k_dense_replace": 0, "moe_layer_freq": 1},
        c.text,
        c.source,
        start=c.start,
        wrapper=c.wrapper,
        towers=c.towers,
    )
    spec = _deepseek(all_moe, mlp_bias=False, defaults=defaults)
    ffns = {"sparse": spec["ffn"], "dense": gated(c)}
    indexer = {"index_n_heads": c.int("index_n_heads"), "index_head_dim": c.int("index_head_dim"), "index_topk": c.int("index_topk")}
    attentions = {"full": {**spec["attention"], **indexer}, "shared": spec["attention"]}
    return spec, kinds, ffns, attentions


def _dsa(c: Config, defaults: dict, indexers: list[str]) -> dict:
    """MLA with an indexer in the layers whose entry in ``indexers`` is "full" (none where "shared"); layer i's
    MLP is a MoE where mlp_layer_types[i] is "sparse", else a dense MLP of intermediate_size. transformers
    reads mlp_layer_types, or the first first_k_dense_replace layers dense and the rest sparse; it reads no
    moe_layer_freq for these types. The mixture is DeepSeek-V3's (``_deepseek``): a bias-free router whose
    e_score_correction_bias is a buffer, and n_shared_experts × moe_intermediate_size as one shared MLP."""
    spec, kinds, ffns, attentions = dsa_blocks(c, defaults)
    runs: list[list] = []  # runs of layers alike in both: [(mlp kind, indexer kind), repeat]
    for pair in zip(kinds, indexers):
        if runs and runs[-1][0] == pair:
            runs[-1][1] += 1
        else:
            runs.append([pair, 1])
    main_ffn = max(ffns, key=kinds.count)
    main_attention = max(attentions, key=indexers.count)
    spec.update(attention=attentions[main_attention], ffn=ffns[main_ffn])
    spec.pop("layers", None)
    if len(runs) > 1:
        spec["layers"] = [
            {
                "repeat": repeat,
                **({"ffn": ffns[f]} if f != main_ffn else {}),
                **({"attention": attentions[a]} if a != main_attention else {}),
            }
            for (f, a), repeat in runs
        ]
    return spec


@family("deepseek_v32", layer_modules=INDEXER_MODULES + MLA_MODULES + MOE_MODULES)
def deepseek_v32(c: Config) -> dict:
    """DeepseekV32Config / DeepseekV32DecoderLayer: DeepSeek-V3 with an indexer in every layer
    (DeepseekV32Indexer: wq_b, wk, k_norm, weights_proj; index_n_heads 64, index_head_dim 128 and index_topk
    2048 by default); the query is always low-rank (q_lora_rank 1536 by default)."""
    c = c.with_defaults({**DEEPSEEK_V32, "n_routed_experts": c.data.get("num_local_experts", 256)})
    return _dsa(c, DEEPSEEK_V32, ["full"] * c.int("num_hidden_layers"))


def glm_indexer_types(c: Config) -> list[str]:
    """GlmMoeDsaConfig.__post_init__: indexer_types as given; else index_topk_pattern ("F"/"S" per layer, or a
    list); else layer i is "full" when max(i - index_skip_topk_offset + 1, 0) % index_topk_freq == 0
    (defaults 2 and 1: every layer full), "shared" otherwise (it reuses the last full layer's top-k and
    holds no indexer: GlmMoeDsaAttention.indexer is None)."""
    n = c.int("num_hidden_layers")
    types = c.data.get("indexer_types")
    key = "indexer_types"
    if types is None and c.data.get("index_topk_pattern") is not None:
        key, pattern = "index_topk_pattern", c.data["index_topk_pattern"]
        types = [{"F": "full", "S": "shared"}.get(ch, ch) for ch in pattern] if isinstance(pattern, str) else pattern
    if types is None:
        freq = max(c.int("index_topk_freq", 1), 1)
        offset = c.int("index_skip_topk_offset", 2, positive=False)
        types = ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(n)]
    if not isinstance(types, list) or len(types) != n or not set(types) <= {"full", "shared"}:
        raise c.fail(key, f'expected {n} entries, each "full" or "shared", got {types!r}')
    return types


@family("glm_moe_dsa", layer_modules=INDEXER_MODULES + MLA_MODULES + MOE_MODULES)
def glm_moe_dsa(c: Config) -> dict:
    """GlmMoeDsaConfig / GlmMoeDsaDecoderLayer: GLM-5, DeepSeek-V3.2's attention and mixture (q_lora_rank
    2048, qk_nope_head_dim 192, v_head_dim 256, index_n_heads 32 by default), the indexer only in the layers
    indexer_types calls "full" (IndexShare: arXiv:2603.12201)."""
    c = c.with_defaults({**GLM_MOE_DSA, "n_routed_experts": c.data.get("num_local_experts", 256)})
    return _dsa(c, GLM_MOE_DSA, glm_indexer_types(c))
