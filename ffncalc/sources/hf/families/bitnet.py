"""BitNet b1.58 (Ma et al. 2025, "BitNet b1.58 2B4T Technical Report"): a Llama layout with sub-layer norms."""

from __future__ import annotations

from ..config import Config, attention, family, gated, rms


@family("bitnet", layer_modules=((r"self_attn\.attn_sub_norm$", "attn.sub_norm"), (r"mlp\.ffn_sub_norm$", "ffn.sub_norm")))
def bitnet(c: Config) -> dict:
    """BitNetConfig / BitNetForCausalLM: every key has a default (vocab_size 128256, hidden_size 2560,
    intermediate_size 6912, 30 layers, 20 heads, num_key_value_heads 5 when absent and one per head when null,
    hidden_act relu2, max_position_embeddings 2048, attention_bias false, untied); BitNetAttention normalises
    the heads' output (attn_sub_norm, an RMSNorm of hidden_size) before o_proj, and BitNetMLP the gated product
    (ffn_sub_norm, of intermediate_size) before down_proj. Its BitLinear quantization changes no shape."""
    d = c.int("hidden_size", 2560)
    data = {**c.data, "hidden_size": d, "num_attention_heads": c.int("num_attention_heads", 20)}
    cc = Config(data, c.text, c.source, start=c.start, wrapper=c.wrapper, towers=c.towers)
    bias = c.bool("attention_bias", False)
    attn = attention(cc, qkv_bias=bias, o_bias=bias, kv_heads=5)
    if attn["head_dim"] is not None and attn["head_dim"] * attn["n_heads"] != d:
        raise c.fail(
            "head_dim",
            f"{attn['n_heads']} heads × {attn['head_dim']} differ from hidden_size {d}, the "
            "width of BitNet's attn_sub_norm over the heads' output",
        )
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size", 128256),
        "d_model": d,
        "n_layers": c.int("num_hidden_layers", 30),
        "context_length": c.int("max_position_embeddings", 2048),
        "positions": "rotary",
        "tie_embeddings": c.bool("tie_word_embeddings", False),
        "attention": {**attn, "sub_norm": True},
        "ffn": {**gated(cc, width=c.int("intermediate_size", 6912), act_default="relu2"), "sub_norm": True},
        "norm": rms(),
    }
