"""StarCoder2 (Lozhkov et al. 2024): grouped-query attention and a 2-layer MLP, LayerNorm, biases by use_bias."""

from __future__ import annotations

from ..config import Config, attention, common, family


@family("starcoder2", layer_modules=((r"mlp\.c_fc$", "ffn.up"), (r"mlp\.c_proj$", "ffn.down")))
def starcoder2(c: Config) -> dict:
    """Starcoder2Config / Starcoder2DecoderLayer: q/k/v/o_proj and c_fc/c_proj biased by use_bias (default true);
    num_key_value_heads defaults to 2; LayerNorm before each sublayer and at the end; rotary over the whole head;
    lm_head tied by default. The sliding window changes no shape."""
    bias = c.bool("use_bias", True)
    return {
        **common(c, tie=True, context_default=4096),
        "attention": {**attention(c, qkv_bias=bias, o_bias=bias), "n_kv_heads": c.int("num_key_value_heads", 2)},
        "ffn": {
            "kind": "dense",
            "d_ff": c.int("intermediate_size"),
            "bias": bias,
            "activation": c.activation("hidden_act", "gelu_pytorch_tanh"),
        },
        "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
    }
