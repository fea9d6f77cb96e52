"""BLIP's text decoder (Li et al. 2022, "BLIP", §3.1: the image-grounded text decoder): BERT's layers (families/bert.py)
as BlipTextLMHeadModel builds them, causal, each with a cross-attention to the image encoder's output after its
self-attention (the vision part, towers/image_seq2seq.py)."""

from __future__ import annotations

from ..config import Config, family
from . import bert as bert_family
from .encoder_decoder import LAYER_MODULES, TOP_MODULES


def memory(width: int) -> dict:
    """The ``encoder`` part of a decoder whose encoder is the vision part: no layers of its own, the cross-attention's
    keys and values read from ``width`` features (BlipTextSelfAttention: encoder_hidden_size), with biases."""
    layers = {"d_model": width, "n_layers": 0, "attention": {"n_heads": 1}, "ffn": {"kind": "dense", "d_ff": width}}
    return {"layers": {**layers, "positions": "none"}, "cross_bias": True}


@family("blip_text_model", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES)
def blip_text_model(c: Config) -> dict:
    """BlipTextConfig / BlipTextLMHeadModel: BlipTextEmbeddings (word_embeddings, vocab_size 30524, × hidden_size 768;
    max_position_embeddings (512) learned positions from 0; a LayerNorm; no token-type table); num_hidden_layers (12)
    BlipTextLayers of BERT's form (post-norm: query, key, value and the output dense with biases, then a LayerNorm on
    the residual sum), num_attention_heads (8) of hidden_size / heads, each layer's crossattention after its
    self-attention (query from the decoder; key and value from encoder_hidden_size (768) features; the output dense
    and a LayerNorm on the sum), then BERT's MLP (intermediate_size 3072, hidden_act gelu); no pooler
    (add_pooling_layer=False); cls.predictions: the transform (dense, hidden_act, LayerNorm) and the decoder tied to
    word_embeddings (tie_word_embeddings, true) with its bias."""
    spec = bert_family.encoder(Config({**c.data, "type_vocab_size": 0}, c.text, c.source, start=c.start))
    spec.pop("mask")  # is_decoder: causal self-attention
    spec["encoder"] = memory(c.int("encoder_hidden_size"))
    return spec
