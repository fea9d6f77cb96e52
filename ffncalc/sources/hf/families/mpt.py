"""MPT (MosaicML 2023): ALiBi positions, a fused qkv projection, LayerNorms without bias and no biases at all."""

from __future__ import annotations

from ..config import Config, family


@family(
    "mpt",
    layer_modules=(
        (r"attn\.Wqkv$", "attn.q+k+v"),
        (r"attn\.out_proj$", "attn.o"),
        (r"norm_[12]$", "norms"),
        (r"ffn\.up_proj$", "ffn.up"),
        (r"ffn\.down_proj$", "ffn.down"),
    ),
    top_modules=((r"wte$", "embed"), (r"norm_f$", "final_norm")),
)
def mpt(c: Config) -> dict:
    """MptConfig / MptForCausalLM as transformers builds it: ALiBi in every layer and no position table
    (learned_pos_emb is not read); MptAttention one bias-free Wqkv of 3·d_model outputs and out_proj,
    n_heads heads of d_model / n_heads (attn_config's attn_type and kv_n_heads are not read: always
    multi-head); MptMLP up_proj to 4·d_model (expansion_ratio is not read), exact GELU, down_proj, both
    bias-free; norm_1, norm_2 and norm_f LayerNorms with a weight and no bias; lm_head tied unless
    tie_word_embeddings is false. Defaults: d_model 2048, 16 heads, 24 layers, max_seq_len 2048, vocab 50368."""
    d = c.int("d_model", 2048)
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size", 50368),
        "d_model": d,
        "n_layers": c.int("n_layers", 24),
        "context_length": c.int("max_seq_len", 2048),
        "positions": "alibi",
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "attention": {"n_heads": c.int("n_heads", 16)},
        "ffn": {"kind": "dense", "d_ff": 4 * d, "activation": "gelu", "bias": False},
        "norm": {"kind": "layernorm", "bias": False, "per_layer": 2, "final": True},
    }
