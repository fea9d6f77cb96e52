"""ESM-1b and ESM-2 (Rives et al. 2021; Lin et al. 2023): protein language models, BERT's layers with the norms before
each sublayer, learned or rotary positions, and RoBERTa's masked-LM head."""

from __future__ import annotations

from ..config import Config, family
from .bert import LAYER_MODULES, TOP_MODULES, encoder

TOP = (
    (r"encoder\.emb_layer_norm_after$", "final_norm"),
    (r"embeddings\.layer_norm$", "embed_norm"),
    (r"contact_head\.regression$", "contact_head.regression"),
    (r"lm_head\.dense$", "prediction_head.dense"),
    (r"lm_head\.layer_norm$", "prediction_head.norm"),
    (r"^lm_head$", "lm_head"),
) + TOP_MODULES


@family("esm", layer_modules=LAYER_MODULES, top_modules=TOP)
def esm(c: Config) -> dict:
    """EsmConfig / EsmForMaskedLM: EsmEmbeddings' word table (no token types), a position table of
    max_position_embeddings rows numbered from pad_token_id + 1 where position_embedding_type is absolute (rotary
    positions over the whole head where rotary: ESM-2), a LayerNorm after them where emb_layer_norm_before;
    EsmLayer: attention.LayerNorm before self-attention (query, key, value and output dense with biases), LayerNorm
    before the FFN (intermediate dense, gelu whatever hidden_act, output dense, with biases); the encoder's
    emb_layer_norm_after; EsmModel's contact_head (Linear(layers · heads, 1) with a bias, run only by
    predict_contacts); EsmLMHead: dense, gelu, layer_norm, the decoder tied to the word table and its bias.
    EsmConfig's vocab_size defaults to None, which transformers cannot build (the public configs state 33)."""
    if c.data.get("vocab_size") is None:
        raise c.fail("vocab_size", "null: the token table needs a vocabulary (ESM-2's is 33)")
    rotary = c.data.get("position_embedding_type", "absolute") == "rotary"
    pad = c.int("pad_token_id") if c.data.get("pad_token_id") is not None else None
    if not rotary and pad is None:
        raise c.fail("pad_token_id", "null: absolute positions are numbered from pad_token_id + 1")
    spec = encoder(c, pre_norm=True, embedding_norm=bool(c.data.get("emb_layer_norm_before")), offset=0 if rotary else pad + 1)
    del spec["token_types"]
    if rotary:
        del spec["position_offset"]
        spec["positions"] = "rotary"
    spec["ffn"]["activation"] = "gelu"
    spec["prediction_head"] = {"activation": "gelu", "bias": True}
    spec["contact_head"] = {"inputs": spec["n_layers"] * spec["attention"]["n_heads"]}
    return spec
