"""CTRL (Keskar et al. 2019): pre-LayerNorm decoder with fixed sinusoidal positions, ReLU MLP, biases throughout."""

from __future__ import annotations

from ..config import Config, family


@family(
    "ctrl",
    layer_modules=(
        (r"multi_head_attention\.Wq$", "attn.q"),
        (r"multi_head_attention\.Wk$", "attn.k"),
        (r"multi_head_attention\.Wv$", "attn.v"),
        (r"multi_head_attention\.dense$", "attn.o"),
        (r"ffn\.0$", "ffn.up"),
        (r"ffn\.2$", "ffn.down"),
        (r"layernorm[12]$", "norms"),
    ),
    top_modules=((r"transformer\.w$", "embed"), (r"transformer\.layernorm$", "final_norm")),
)
def ctrl(c: Config) -> dict:
    """CTRLConfig / CTRLLMHeadModel, EncoderLayer: every key has a default (vocab_size 246534, n_positions 256,
    n_embd 1280, dff 8192, n_layer 48, n_head 16); Wq/Wk/Wv/dense and the ReLU MLP (Linear, ReLU, Linear)
    biased; LayerNorm before each sublayer and at the end; pos_encoding is a buffer of n_positions sines and
    cosines (no parameters); embeddings scaled by √d, no parameter; lm_head tied to w, with a bias."""
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size", 246534),
        "d_model": c.int("n_embd", 1280),
        "n_layers": c.int("n_layer", 48),
        "context_length": c.int("n_positions", 256),
        "positions": "sinusoidal",
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "lm_head_bias": True,
        "attention": {"n_heads": c.int("n_head", 16), "qkv_bias": True, "o_bias": True},
        "ffn": {"kind": "dense", "d_ff": c.int("dff", 8192), "bias": True, "activation": "relu"},
        "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
    }
