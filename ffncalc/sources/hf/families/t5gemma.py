"""T5Gemma (Zhang et al. 2025, "Encoder-Decoder Gemma"): Gemma 2's layers adapted into an encoder and a decoder, the
decoder's layers each with a cross-attention to the encoder's output, as transformers' T5GemmaForConditionalGeneration
builds them."""

from __future__ import annotations

from ..config import Config, family
from .gemma import gemma2

# T5GemmaModuleConfig's defaults (transformers 5.23): an encoder or decoder entry states only what differs from them
MODULE = {
    "vocab_size": 256_000,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 26,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh",
    "max_position_embeddings": 8192,
    "tie_word_embeddings": True,
    "attention_bias": False,
    "sliding_window": 4096,
}

LAYER_MODULES = (
    (r"cross_attn\.q_proj$", "encoder.cross.q"),
    (r"cross_attn\.k_proj$", "encoder.cross.k"),
    (r"cross_attn\.v_proj$", "encoder.cross.v"),
    (r"cross_attn\.o_proj$", "encoder.cross.o"),
    (r"(pre|post)_(self_attn|cross_attn|feedforward)_layernorm$", "norms"),
)
TOP_MODULES = (
    (r"encoder\.embed_tokens$", "encoder.embed"),
    (r"embed_tokens$", "embed"),
    (r"lm_head\.out_proj$", "lm_head"),
    (r"((encoder|decoder)\.)?norm$", "final_norm"),  # the encoder's, read within its stack: norm
)


def module(c: Config, key: str) -> Config:
    """The encoder's or decoder's T5GemmaModuleConfig: its entry over the class's defaults (a missing entry is all
    defaults)."""
    data = c.data.get(key)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise c.fail(key, f"expected an object of T5GemmaModuleConfig keys, got {data!r}")
    return Config({**MODULE, **data}, c.text, c.source, start=c.start)


@family("t5gemma", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=((r"encoder\.", "encoder."),))
def t5gemma(c: Config) -> dict:
    """T5GemmaConfig / T5GemmaForConditionalGeneration: model.decoder is Gemma 2's stack (gemma2: embed_tokens of
    vocab_size, T5GemmaDecoderLayers of causal self-attention, global or sliding-window by layer_types, the GeGLU
    MLP, four RMSNorms a layer around its two sublayers, a final norm) with in every layer a T5GemmaCrossAttention
    between the self-attention and the MLP: pre_cross_attn_layernorm, q_proj (hidden_size -> heads × head_dim), k_proj
    and v_proj from the encoder's output (cross_attention_hidden_size, the encoder's hidden_size, which may differ from
    the decoder's -> num_key_value_heads × head_dim), o_proj back, post_cross_attn_layernorm; no biases
    (attention_bias). model.encoder: its own embed_tokens (the encoder's vocab_size), T5GemmaEncoderLayers (Gemma 2's,
    the self-attention bidirectional) at its own hidden_size and a final norm. lm_head.out_proj (no bias) is tied to
    the decoder's table where tie_word_embeddings (true). The encoder's sliding-window layers are counted as every
    query meeting every key (Stack: one attention for every layer), as the eager kernel computes them; the scale of
    the embeddings and the softcapping of scores and logits are elementwise."""
    enc, dec = module(c, "encoder"), module(c, "decoder")
    spec = gemma2(dec)
    spec["name"] = c.data.get("_name_or_path") or None
    spec["tie_embeddings"] = c.bool("tie_word_embeddings", True)
    inner = gemma2(enc)
    attention = {k: v for k, v in inner["attention"].items() if k != "window"}
    spec["encoder"] = {
        # at its own width (T5Gemma 9B-2B: a 3,584-wide encoder beside a 2,304-wide decoder)
        "layers": {
            "d_model": inner["d_model"],
            "n_layers": inner["n_layers"],
            "attention": attention,
            "ffn": inner["ffn"],
            "positions": "rotary",
        },
        "table_rows": enc.int("vocab_size"),
        "final_norm": True,
        "cross_head_dim": spec["attention"]["head_dim"],
        "cross_kv_heads": spec["attention"]["n_kv_heads"],
        "cross_post_norm": True,
    }
    return spec
