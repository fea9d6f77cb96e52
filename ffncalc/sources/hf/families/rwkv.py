"""RWKV-4 (Peng et al. 2023, arXiv:2305.13048): every layer a time mix and a channel mix, each after a LayerNorm."""

from __future__ import annotations

from ..config import Config, family


@family(
    "rwkv",
    layer_modules=tuple(
        (rf"^{block}\.{name}$", f"{block}.{name}")
        for block, names in (("attention", ("key", "value", "receptance", "output")), ("feed_forward", ("key", "value", "receptance")))
        for name in names
    )
    + (
        (r"^attention$", "attention.time_decay+time_first+time_mix_key+time_mix_value+time_mix_receptance"),
        (r"^feed_forward$", "feed_forward.time_mix_key+time_mix_receptance"),
        (r"^ln[12]$", "norms"),
    ),
    top_modules=((r"blocks\.0\.pre_ln$", "embed_norm"), (r"embeddings$", "embed"), (r"ln_out$", "final_norm"), (r"head$", "lm_head")),
)
def rwkv(c: Config) -> dict:
    """RwkvConfig / RwkvForCausalLM: every key has a default (vocab_size 50277, hidden_size 4096, 32 layers,
    context_length 1024, untied); attention_hidden_size and intermediate_size default to hidden_size and
    4 · hidden_size where absent or null. RwkvBlock: ln1 before RwkvSelfAttention (the time mix), ln2 before
    RwkvFeedForward (the channel mix), LayerNorms with a bias; the first block's pre_ln normalises the embeddings
    (an embedding norm); a final ln_out; head without a bias. No positions: the token shift and the WKV
    recurrence order the tokens, so context_length bounds no sequence here."""
    d = c.int("hidden_size", 4096)
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size", 50277),
        "d_model": d,
        "n_layers": c.int("num_hidden_layers", 32),
        "context_length": c.int("context_length", 1024),
        "positions": "none",
        "tie_embeddings": c.bool("tie_word_embeddings", False),
        "embedding_norm": True,
        "attention": {"kind": "rwkv_time_mix", "attention_dim": c.int("attention_hidden_size", d)},
        "ffn": {"kind": "rwkv_channel_mix", "d_ff": c.int("intermediate_size", 4 * d)},
        "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
    }
