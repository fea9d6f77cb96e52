"""Mistral Large 4's language model (mistral_large4_text): DeepSeek-V3.2's sparse latent attention with no query
latent, learned softmax scalings and no rotary part in every fourth layer, DeepSeek-V3's mixture (transformers 5.23.0,
models/mistral_large4)."""

from __future__ import annotations

from ..config import MOE_MODULES, Config, family, gated
from .deepseek import MLA_MODULES, _deepseek
from .dsa import INDEXER_MODULES, glm_indexer_types

# MistralLarge4TextAttention.softmax_scaling and MistralLarge4TextIndexer's q_input_norm and softmax_scaling, before
# the common names.
SCALING_MODULES = (
    (r"indexer\.q_input_norm$", "attn.indexer.q_input_norm"),
    (r"indexer\.softmax_scaling$", "attn.indexer.softmax_scaling"),
    (r"self_attn\.softmax_scaling$", "attn.softmax_scaling"),
)

# MistralLarge4TextConfig's defaults for the keys read here (configuration_mistral_large4.py).
MISTRAL_LARGE4_TEXT = {
    "vocab_size": 204800,
    "hidden_size": 6144,
    "intermediate_size": 24576,
    "moe_intermediate_size": 6144,
    "num_hidden_layers": 72,
    "num_attention_heads": 64,
    "n_shared_experts": 1,
    "n_routed_experts": 128,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "qk_nope_head_dim": 64,
    "num_experts_per_tok": 4,
    "hidden_act": "silu",
    "max_position_embeddings": 1048576,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "index_topk": 2048,
    "index_head_dim": 128,
    "index_n_heads": 32,
    "first_k_dense_replace": 1,
    "q_lora_rank": None,
}


def _per_layer(c: Config, key: str, default: list, allowed: set) -> list:
    n = c.int("num_hidden_layers")
    values = c.data.get(key)
    values = default if values is None else values
    if not isinstance(values, list) or len(values) != n or not set(values) <= allowed:
        raise c.fail(key, f"expected {n} entries, each one of {sorted(allowed, key=str)}, got {values!r}")
    return values


@family("mistral_large4_text", layer_modules=SCALING_MODULES + INDEXER_MODULES + MLA_MODULES + MOE_MODULES)
def mistral_large4_text(c: Config) -> dict:
    """MistralLarge4TextConfig / MistralLarge4TextDecoderLayer: MistralLarge4TextAttention is MLA with a full-rank
    query (q_proj, no q_lora_rank), kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj and o_proj (attention_bias), and
    softmax_scaling (a scale and a bias a head on the queries); in a layer no_rope_layers marks 0 (every fourth by
    default) the rotary part is gone and the non-rotary part is qk_nope_head_dim + qk_rope_head_dim wide. Where
    indexer_types says "full" (every layer by default, GLM-5's schedule otherwise), MistralLarge4TextIndexer: its
    queries from the layer's input through q_input_norm (a LayerNorm) and wq_b, its own softmax_scaling, wk, k_norm
    and weights_proj (index_n_heads 32 × index_head_dim 128). mlp_layer_types (the first first_k_dense_replace dense)
    picks DeepSeek-V3's mixture (128 experts of 6,144, 4 a token, one shared) or a dense MLP of intermediate_size.
    Untied lm_head; final_logit_softcapping bounds the logits (elementwise). Layers reading another layer's latent
    (kv_source_layers other than their own) are not read."""
    c = c.with_defaults(MISTRAL_LARGE4_TEXT)
    n = c.int("num_hidden_layers")
    sources = _per_layer(c, "kv_source_layers", list(range(n)), set(range(n)))
    if sources != list(range(n)):
        raise c.fail("kv_source_layers", "layers reading another layer's latent cache (KV sharing) are not read yet")
    first = min(c.int("first_k_dense_replace", positive=False), n)
    kinds = _per_layer(c, "mlp_layer_types", ["dense"] * first + ["sparse"] * (n - first), {"dense", "sparse"})
    rope = _per_layer(c, "no_rope_layers", [int((i + 1) % 4 != 0) for i in range(n)], {0, 1})
    indexers = glm_indexer_types(c)
    all_moe = Config({**c.data, "first_k_dense_replace": 0}, c.text, c.source, start=c.start, wrapper=c.wrapper, towers=c.towers)
    spec = _deepseek(all_moe, mlp_bias=False, defaults=MISTRAL_LARGE4_TEXT)
    ffns = {"sparse": spec["ffn"], "dense": gated(c)}
    nope, rotary = c.int("qk_nope_head_dim"), c.int("qk_rope_head_dim")
    base = {**spec["attention"], "softmax_scaling": True}
    index = {
        "index_n_heads": c.int("index_n_heads"),
        "index_head_dim": c.int("index_head_dim"),
        "index_topk": c.int("index_topk"),
        "index_input_norm": True,
    }

    def attention(indexer: str, roped: int) -> dict:
        widths = {"qk_nope_head_dim": nope + (0 if roped else rotary), "qk_rope_head_dim": rotary if roped else 0}
        return {**base, **widths, **(index if indexer == "full" else {})}

    keys = list(zip(kinds, indexers, rope))
    runs: list[list] = []
    for key in keys:
        if runs and runs[-1][0] == key:
            runs[-1][1] += 1
        else:
            runs.append([key, 1])
    main_ffn = max(dict.fromkeys(kinds), key=kinds.count)
    main_attention = max(dict.fromkeys((i, r) for _, i, r in keys), key=[(i, r) for _, i, r in keys].count)
    spec.update(attention=attention(*main_attention), ffn=ffns[main_ffn])
    spec.pop("layers", None)
    if len(runs) > 1:
        spec["layers"] = [
            {
                "repeat": repeat,
                **({"ffn": ffns[f]} if f != main_ffn else {}),
                **({"attention": attention(i, r)} if (i, r) != main_attention else {}),
            }
            for (f, i, r), repeat in runs
        ]
    return spec
