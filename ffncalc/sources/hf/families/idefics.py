"""IDEFICS (Laurençon et al. 2023; transformers' IdeficsModel): LLaMA's layers with a gated cross-attention layer before
every cross_layer_interval-th one (Flamingo's form, parts/cross_attention.py), its language model's keys at the top of
its config (no text_config)."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms, stack


@family("idefics")
def idefics(c: Config) -> dict:
    """IdeficsConfig / IdeficsDecoderLayer, IdeficsGatedCrossAttentionLayer: LLaMA's layers (q, k, v and o of
    num_attention_heads heads of hidden_size / heads, no biases; an RMSNorm before each sublayer; IdeficsMLP, a SwiGLU
    of intermediate_size); before layer i, for i a multiple of
    cross_layer_interval and i / cross_layer_interval below num_hidden_layers // cross_layer_interval, a gated
    cross-attention layer of the same heads (its keys and values from the vision tower's rows, at its embed_dim; q and k
    RMSNorms over each head where qk_layer_norms, in these layers alone), its own
    IdeficsMLP and two RMSNorms, its alpha gates of one element (alpha_type "float") or of hidden_size ("vector");
    IdeficsDecoupledEmbedding and IdeficsDecoupledLinear: vocab_size + additional_vocab_size rows each."""
    n, every = c.int("num_hidden_layers"), c.int("cross_layer_interval", 1)
    if every < 1:
        raise c.fail("cross_layer_interval", f"{every}: expected a positive interval")
    crosses = n // every
    alpha = c.data.get("alpha_type", "float")
    if alpha not in ("float", "vector"):
        raise c.fail("alpha_type", f"{alpha!r}: transformers builds 'float' or 'vector'")
    norms = c.bool("qk_layer_norms", False)
    own = attention(c, qk_norm="none")  # IdeficsDecoderLayer's self_attn: qk_layer_norms left at False
    layers: list[dict] = []
    for i in range(n):
        if i % every == 0 and i // every < crosses:  # IdeficsModel.forward: gated_cross_attn_layers[i // every]
            layers.append({"attention": {"kind": "none"}})  # the cross-attention is its mixer
        layers.append({"attention": own})
    heads, d = c.int("num_attention_heads"), c.int("hidden_size")
    # the tower's width: its vision_config, which the language model's keys leave out (the wrapper's, or the file's
    # where the language model is read alone)
    vision = c.data.get("vision_config") or (c.outer.data if c.outer is not None else _file(c)).get("vision_config") or {}
    cross = {
        "n_heads": heads,
        "n_kv_heads": heads,
        "head_dim": d // heads,
        "context_width": vision.get("embed_dim", 768) if isinstance(vision, dict) else 768,
        "qk_norm": norms,
        "gate_width": d if alpha == "vector" else 1,
    }
    spec = {**common(c, tie=False), "n_layers": len(layers)}
    spec["vocab_size"] = c.int("vocab_size") + c.int("additional_vocab_size", 0, positive=False)  # the decoupled rows, both sides
    return {**spec, **stack(layers), "ffn": gated(c), "norm": rms(), "cross_attention": cross}


def _file(c: Config) -> dict:
    """The whole file a language model read alone came from (its vision_config beside the language model's keys)."""
    import json

    try:
        data = json.loads(c.text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
