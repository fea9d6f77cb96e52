"""Reformer (Kitaev et al. 2020): local and LSH attention layers, reversible residual streams, axial position
embeddings and the sequence padded to whole chunks (blocks/lsh.py, parts/streams.py)."""

from __future__ import annotations

from math import lcm

from ..config import Config, family

LAYER_MODULES = (
    (r"self_attention\.query_key$", "attn.qk"),
    (r"self_attention\.query$", "attn.q"),
    (r"self_attention\.key$", "attn.k"),
    (r"self_attention\.value$", "attn.v"),
    (r"attention\.output\.dense$", "attn.o"),
    (r"feed_forward\.dense\.dense$", "ffn.up"),
    (r"feed_forward\.output\.dense$", "ffn.down"),
    (r"(attention|feed_forward)\.layer_norm$", "norms"),
)
TOP_MODULES = (
    (r"embeddings\.word_embeddings$", "embed"),
    (r"embeddings\.position_embeddings\.weights$", "axial_positions.weights"),
    (r"embeddings\.position_embeddings\.embedding$", "pos_embed"),
    (r"encoder\.layer_norm$", "final_norm"),
    (r"lm_head\.decoder$", "lm_head"),
)


def _ints(c: Config, key: str, default: list[int]) -> list[int]:
    value = c.data.get(key)
    if value is None:
        return default
    if not isinstance(value, list) or not value or not all(type(v) is int and v > 0 for v in value):
        raise c.fail(key, f"expected a list of positive integers, got {value!r}")
    return value


@family("reformer", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES)
def reformer(c: Config) -> dict:
    """ReformerConfig / ReformerModelWithLMHead (is_decoder true; its defaults leave it false, which the class
    refuses): every key has a default (vocab_size 320, hidden_size 256, 12 heads of attention_head_size 64,
    feed_forward_size 512, relu). attn_layers (default local, lsh × 3) gives each layer's attention:
    LocalSelfAttention (query, key, value; chunks of local_attn_chunk_length 64 meeting local_num_chunks_before 1
    and after 0) or LSHSelfAttention (query_key, value; num_hashes 1 rounds, num_buckets unset, chunks of
    lsh_attn_chunk_length 64, before 1, after 0); output.dense without a bias. ReformerLayer: LayerNorms with a bias
    before attention and before the FFN (dense with biases), on two reversible streams (ReformerEncoder concatenates
    them: its layer_norm and the head's decoder are 2·hidden_size wide; the head's own bias vector is a parameter
    that the decoder, bias-free, does not add). AxialPositionEmbeddings (axial_pos_embds, default true) of
    axial_pos_shape (64, 64) and axial_pos_embds_dim (64, 192), else a learned table of max_position_embeddings
    (4096). ReformerModel pads a sequence longer than the least chunk length to a whole number of the least common
    multiple of the chunk lengths; the head reads the sequence's own positions. Never tied (the head is twice as
    wide as the embedding)."""
    d, heads, hd = c.int("hidden_size", 256), c.int("num_attention_heads", 12), c.int("attention_head_size", 64)
    types = c.data.get("attn_layers") or ["local", "lsh", "local", "lsh", "local", "lsh"]
    if not isinstance(types, list) or not set(types) <= {"local", "lsh"}:
        raise c.fail("attn_layers", f'expected a list of "local" and "lsh", got {types!r}')
    n = c.int("num_hidden_layers", 6)
    if len(types) < n:
        raise c.fail("attn_layers", f"one attention type per layer: {len(types)} for {n} layers")
    context = c.int("max_position_embeddings", 4096)
    local = {
        "kind": "local",
        "n_heads": heads,
        "head_dim": hd,
        "chunk_length": c.int("local_attn_chunk_length", 64),
        "chunks_before": c.int("local_num_chunks_before", 1, positive=False),
        "chunks_after": c.int("local_num_chunks_after", 0, positive=False),
    }
    buckets = c.data.get("num_buckets")
    if buckets is not None and not (type(buckets) is int or isinstance(buckets, list)):
        raise c.fail("num_buckets", f"expected an even number or a list of them, got {buckets!r}")
    lsh = {
        "kind": "lsh",
        "n_heads": heads,
        "head_dim": hd,
        "chunk_length": c.int("lsh_attn_chunk_length", 64),
        "chunks_before": c.int("lsh_num_chunks_before", 1, positive=False),
        "chunks_after": c.int("lsh_num_chunks_after", 0, positive=False),
        "num_hashes": c.int("num_hashes", 1),
        "num_buckets": buckets,
        "max_positions": context,
    }
    mixers = {"local": local, "lsh": lsh}
    used = {t: mixers[t]["chunk_length"] for t in types[:n]}
    runs: list[list] = []
    for t in types[:n]:
        if runs and runs[-1][0] == t:
            runs[-1][1] += 1
        else:
            runs.append([t, 1])
    main = max(used, key=lambda t: types[:n].count(t))
    axial = c.bool("axial_pos_embds", True)
    out = {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size", 320),
        "d_model": d,
        "n_layers": n,
        "context_length": context,
        "positions": "none" if axial else "learned",
        "tie_embeddings": False,
        "lm_head_bias": True,
        "attention": mixers[main],
        "ffn": {
            "kind": "dense",
            "d_ff": c.int("feed_forward_size", 512),
            "activation": c.activation("hidden_act", "relu"),
            "bias": True,
        },
        "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
        "reversible": True,
        "padding": {"multiple": lcm(*used.values()), "above": min(used.values())},
    }
    if len(runs) > 1:
        out["layers"] = [{"repeat": k, **({"attention": mixers[t]} if t != main else {})} for t, k in runs]
    if axial:
        out["axial_positions"] = {"shape": _ints(c, "axial_pos_shape", [64, 64]), "dims": _ints(c, "axial_pos_embds_dim", [64, 192])}
    return out
