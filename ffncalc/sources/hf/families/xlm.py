"""XLM (Lample & Conneau 2019) and FlauBERT (Le et al. 2020): a Transformer encoder whose sublayers transformers holds
in lists of their own (attentions, layer_norm1, ffns, layer_norm2), learned or sinusoidal positions held as a
parameter, language embeddings, and an output projection tied to the token table."""

from __future__ import annotations

from ..config import Config, family

MODULES = (
    (r"^q_lin$", "attn.q"),
    (r"^k_lin$", "attn.k"),
    (r"^v_lin$", "attn.v"),
    (r"^out_lin$", "attn.o"),
    (r"^lin1$", "ffn.up"),
    (r"^lin2$", "ffn.down"),
    (r"^(weight|bias)$", "norms"),  # layer_norm1.N and layer_norm2.N hold their tensors themselves
)
TOP = (
    (r"transformer\.embeddings$", "embed"),
    (r"transformer\.position_embeddings$", "pos_embed"),
    (r"transformer\.lang_embeddings$", "type_tables.table_0"),
    (r"transformer\.layer_norm_emb$", "embed_norm"),
    (r"pred_layer\.proj$", "lm_head"),
)


@family("xlm", "flaubert", layer_modules=MODULES, top_modules=TOP)
def xlm(c: Config) -> dict:
    """XLMConfig / XLMWithLMHeadModel, FlaubertConfig / FlaubertWithLMHeadModel: the token table (vocab_size 30145 ×
    emb_dim 2048), a position table of max_position_embeddings (512) rows, learned, or with sinusoidal_embeddings
    filled with fixed sines and cosines but held as a parameter all the same, numbered from 0; a language table of
    n_langs rows where n_langs > 1 and use_lang_emb (added where a forward is given languages), then
    layer_norm_emb; n_layers (12) layers of n_heads (16) heads: q_lin, k_lin, v_lin, out_lin with biases, the sum
    then layer_norm1, an FFN of 4 · emb_dim (lin1, gelu where gelu_activation else relu, lin2, with biases), the sum
    then layer_norm2 (FlauBERT's pre_norm: each norm before its sublayer, no final norm); pred_layer.proj tied to the
    token table with a bias. The adaptive softmax (asm) is not read yet: refused in one line."""
    if c.bool("asm", False):
        raise c.fail("asm", "the adaptive log-softmax output (AdaptiveLogSoftmaxWithLoss) is not read yet")
    d, heads = c.int("emb_dim", 2048), c.int("n_heads", 16)
    pre = c.bool("pre_norm", False) if c.model_type == "flaubert" else False
    spec = {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": d,
        "n_layers": c.int("n_layers", 12),
        "context_length": c.int("max_position_embeddings", 512),
        "positions": "learned",
        "mask": "bidirectional",
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "lm_head_bias": True,
        "embedding_norm": True,
        "attention": {"n_heads": heads, "qkv_bias": True, "o_bias": True},
        "ffn": {"kind": "dense", "d_ff": 4 * d, "bias": True, "activation": "gelu" if c.bool("gelu_activation", True) else "relu"},
        "norm": {"kind": "layernorm", "per_layer": 2, "final": False, "placement": "pre" if pre else "residual"},
    }
    langs = c.int("n_langs", 1)
    if langs > 1 and c.bool("use_lang_emb", True):
        spec["type_tables"] = [langs]
    return spec
