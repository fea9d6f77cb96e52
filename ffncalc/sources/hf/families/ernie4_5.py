"""ERNIE 4.5 (Baidu 2025): the dense 0.3B model."""

from __future__ import annotations

from ..config import Config, common, family, gated, rms


@family("ernie4_5", "paddleocr_vl_text")
def ernie4_5(c: Config) -> dict:
    """Ernie4_5Config / Ernie4_5DecoderLayer: Llama's layer with use_bias (default false) on q, k, v, o and every
    MLP projection, never on the LM head; tied embeddings by default; head_dim defaults to 128 (null:
    hidden_size / heads) and num_key_value_heads to 2 (null: the heads). PaddleOCR-VL's language model
    (PaddleOCRTextConfig, an Ernie4_5Config) is built the same."""
    bias = c.bool("use_bias", False)
    heads = c.int("num_attention_heads")
    # absent: the class defaults; an explicit null: what Ernie4_5Config.__post_init__ makes of it
    kv = c.int("num_key_value_heads", 2 if "num_key_value_heads" not in c.data else heads)
    head_dim = c.int("head_dim", 128 if "head_dim" not in c.data else None)
    return {
        **common(c, tie=True, context_default=131_072),
        "attention": {"n_heads": heads, "n_kv_heads": kv, "head_dim": head_dim, "qkv_bias": bias, "o_bias": bias},
        "ffn": gated(c, bias=bias),
        "norm": rms(),
    }
