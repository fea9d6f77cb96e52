"""Perceiver IO (Jaegle et al. 2021) as transformers' PerceiverForMaskedLM builds it: byte tokens cross-attended into a
latent array, self-attention layers over the latents, and a decoder of learned position queries cross-attending the
latents, through the byte table's transpose (parts/perceiver.py)."""

from __future__ import annotations

from ..config import Config, family

# a PerceiverLayer's modules, inside encoder.self_attends.N and, named as model-level ones, inside the encoder's and the
# decoder's cross-attention layers
MODULES = (
    (r"attention\.self\.query$", "attn.q"),
    (r"attention\.self\.key$", "attn.k"),
    (r"attention\.self\.value$", "attn.v"),
    (r"attention\.output\.dense$", "attn.o"),
    (r"mlp\.dense1$", "ffn.up"),
    (r"mlp\.dense2$", "ffn.down"),
    (r"(layernorm1|layernorm2|layernorm)$", "norms"),
)
TOP_MODULES = (
    (r"input_preprocessor\.embeddings$", "embed"),
    (r"input_preprocessor\.position_embeddings$", "pos_embed"),
    (r"perceiver\.embeddings$", "perceiver.latents"),
    (r"decoder\.output_position_encodings$", "perceiver.decoder.queries"),
    (r"embedding_decoder$", "lm_head"),
) + MODULES


@family(
    "perceiver",
    layer_modules=MODULES,
    top_modules=TOP_MODULES,
    model_stacks=((r"encoder\.cross_attention\.", "perceiver.cross."), (r"decoder\.decoding_cross_attention\.", "perceiver.decoder.")),
)
def perceiver(c: Config) -> dict:
    """PerceiverConfig / PerceiverForMaskedLM (Jaegle et al. 2021, Perceiver IO): PerceiverTextPreprocessor's byte table
    (vocab_size 262 × d_model 768) and learned positions (max_position_embeddings 2048); the latents (num_latents 256 ×
    d_latents 1280); the encoder's cross-attention layer (num_cross_attention_heads 8; queries and keys of qk_channels,
    or of d_model where cross_attention_shape_for_attention is kv, d_latents where q; values of v_channels, or as the
    keys; the MLP d_latents × cross_attention_widening_factor 1); num_self_attends_per_block (26) self-attention layers
    over the latents, run num_blocks (1) times (num_self_attention_heads 8; queries and keys of qk_channels, values of
    v_channels, by default d_latents; the MLP d_latents × self_attention_widening_factor 1; every linear with a bias,
    LayerNorms before each sublayer, hidden_act gelu); PerceiverBasicDecoder: max_position_embeddings learned queries of
    d_model, one cross-attention layer into the latents (8 heads, qk 256, values d_model, the MLP d_model wide, no query
    residual, no final projection); PerceiverEmbeddingDecoder: the byte table's transpose and a bias. Refused in one
    line: num_blocks other than 1 (the layers run again, not read yet), values of the self-attention layers other than
    d_latents wide (their residual adds need them so)."""
    d = c.int("d_latents")
    w = c.int("d_model")
    blocks = c.int("num_blocks", 1)
    if blocks != 1:
        raise c.fail("num_blocks", f"Perceiver's self-attention layers run {blocks} times: not read yet (only 1)")
    heads = c.int("num_self_attention_heads")
    cross_heads = c.int("num_cross_attention_heads")
    qk = c.data.get("qk_channels")
    v = c.data.get("v_channels")
    for key, value in (("qk_channels", qk), ("v_channels", v)):
        if value is not None and (type(value) is not int or value <= 0):
            raise c.fail(key, f"expected a positive integer or null, got {value!r}")
    self_qk = qk or d
    self_v = v or self_qk
    if self_v != d:
        raise c.fail("v_channels" if v else "qk_channels", f"the self-attention layers' values are {self_v} wide, not d_latents {d}")
    for key, value, h in (("qk_channels", self_qk, heads), ("qk_channels", qk or w, cross_heads)):
        if value % h:
            raise c.fail(key, f"{value} channels do not split into {h} heads")
    shape = c.data.get("cross_attention_shape_for_attention", "kv")
    if shape not in ("q", "kv"):
        raise c.fail("cross_attention_shape_for_attention", f"expected q or kv, got {shape!r}")
    cross_qk = qk or (w if shape == "kv" else d)
    cross_v = v or cross_qk
    layers = c.int("num_self_attends_per_block")
    c.depth(layers, "num_self_attends_per_block")
    attention = {"n_heads": heads, "head_dim": self_qk // heads, "qkv_bias": True, "o_bias": True}
    if self_v != self_qk:
        attention["v_head_dim"] = self_v // heads
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": d,
        "n_layers": layers,
        "context_length": c.int("max_position_embeddings"),
        "positions": "learned",
        "mask": "bidirectional",
        "tie_embeddings": True,  # PerceiverEmbeddingDecoder multiplies by the byte table itself
        "lm_head_bias": True,
        "embedding_norm": False,
        "attention": attention,
        "ffn": {
            "kind": "dense",
            "d_ff": d * c.int("self_attention_widening_factor", 1),
            "bias": True,
            "activation": c.activation("hidden_act", "gelu"),
        },
        "norm": {"kind": "layernorm", "per_layer": 2, "final": False, "placement": "pre"},
        "perceiver": {
            "latents": c.int("num_latents"),
            "width": w,
            "outputs": c.int("max_position_embeddings"),
            "cross_heads": cross_heads,
            "cross_qk": cross_qk,
            "cross_v": cross_v,
            "cross_ff": d * c.int("cross_attention_widening_factor", 1),
            "activation": c.activation("hidden_act", "gelu"),
        },
    }
