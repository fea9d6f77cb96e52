"""GPT-NeoX Japanese (ABEJA 2022): GPT-NeoX's fused attention in a sequential pre-norm layer, with no biases
but the output projection's in the last layer."""

from __future__ import annotations

from ..config import Config, common, family, stack


@family(
    "gpt_neox_japanese",
    layer_modules=(
        (r"query_key_value$", "attn.q+k+v"),
        (r"attention\.dense$", "attn.o"),
        (r"^attention$", "attn.o"),  # the last layer's dense_bias, a parameter of the attention
        (r"mlp\.dense_h_to_4h$", "ffn.up"),
        (r"mlp\.dense_4h_to_h$", "ffn.down"),
    ),
    top_modules=((r"embed_in$", "embed"), (r"final_layer_norm$", "final_norm"), (r"embed_out$", "lm_head")),
)
def gpt_neox_japanese(c: Config) -> dict:
    """GPTNeoXJapaneseConfig / GPTNeoXJapaneseLayer: input_layernorm before attention and post_attention_layernorm
    before the MLP, LayerNorms with a bias, and a final one; GPTNeoXJapaneseAttention's fused query_key_value
    (hidden_size -> 3 · hidden_size) and dense have no bias, but the last layer's attention holds dense_bias,
    added to its output (use_bias); heads of hidden_size / num_attention_heads, whatever head_dim says; the
    rotated fraction partial_rotary_factor or rotary_pct (default 1.0); GPTNeoXJapaneseMLP dense_h_to_4h and
    dense_4h_to_h without bias, of int(hidden_size · intermediate_multiple_size) (default 4), hidden_act
    (default gelu); embed_out tied to embed_in unless tie_word_embeddings is false; a context of 2048."""
    heads, d = c.int("num_attention_heads"), c.int("hidden_size")
    if d % heads:  # query_key_value is 3 · hidden_size wide, viewed as heads of hidden_size // heads
        raise c.fail(
            "num_attention_heads", f"{heads} heads do not divide hidden_size {d}, which GPTNeoXJapaneseAttention splits into heads"
        )
    head = d // heads
    attn = {"n_heads": heads, "head_dim": head, "qkv_bias": False, "o_bias": False}
    rotary = int(head * c.rope_fraction(1.0, "rotary_pct"))  # GPTNeoXJapaneseAttention.rotary_ndims
    if rotary != head:
        attn["rotary_dim"] = rotary
    mult = c.float("intermediate_multiple_size", 4)
    ffn = {"kind": "dense", "d_ff": int(d * mult), "bias": False, "activation": c.activation("hidden_act", "gelu")}
    n = c.int("num_hidden_layers")
    layers = [{"attention": {**attn, "o_bias": i == n - 1}, "ffn": ffn} for i in range(n)]
    return {**common(c, tie=True), **stack(layers), "norm": {"kind": "layernorm", "per_layer": 2, "final": True}}
