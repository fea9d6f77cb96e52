"""Encoder-decoder wrappers (Rothe et al. 2020, "Leveraging Pre-trained Checkpoints for Sequence Generation Tasks"):
transformers' EncoderDecoderModel composes any encoder its config's ``encoder`` names (built as AutoModel) with any
decoder its ``decoder`` names (built as AutoModelForCausalLM, with add_cross_attention). Read here where each side is
a family already read whose layers the encoder part and the cross-attention express: BERT's (bert2bert)."""

from __future__ import annotations

from ..config import Config, family
from . import bert as bert_family

LAYER_MODULES = (
    (r"crossattention\.self\.query$", "encoder.cross.q"),
    (r"crossattention\.self\.key$", "encoder.cross.k"),
    (r"crossattention\.self\.value$", "encoder.cross.v"),
    (r"crossattention\.output\.dense$", "encoder.cross.o"),
) + bert_family.LAYER_MODULES
TOP_MODULES = ((r"pooler\.dense$", "pooler.dense"),) + bert_family.TOP_MODULES
# the encoder's modules (encoder.embeddings, encoder.encoder.layer.N, encoder.pooler); the decoder's BERT keeps its
# layers under decoder.bert.encoder, which is not the wrapper's encoder
STACKS = ((r"(?<!bert\.)encoder\.", "encoder."),)
READ = ("bert",)  # the sides read: BertModel as the encoder, BertLMHeadModel as the decoder


# EncoderDecoderConfig.sub_configs: an absent side is BertConfig's defaults, the decoder's with is_decoder and
# add_cross_attention
ABSENT = {"encoder": {"model_type": "bert"}, "decoder": {"model_type": "bert", "is_decoder": True, "add_cross_attention": True}}


def side(c: Config, key: str) -> Config:
    """The encoder's or decoder's configuration: its entry over its own class's defaults."""
    from .. import class_defaults

    data = c.data.get(key)
    if data is None:
        data = ABSENT[key]
    if not isinstance(data, dict) or not isinstance(data.get("model_type"), str):
        raise c.fail(key, "expected the configuration of a model, with its model_type")
    if data["model_type"] not in READ:
        raise c.fail(key, f"a {data['model_type']} {key} is not read yet (read: {', '.join(READ)})")
    return class_defaults(Config(data, c.text, c.source, start=c.start))


@family("encoder-decoder", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=STACKS)
def encoder_decoder(c: Config) -> dict:
    """EncoderDecoderConfig / EncoderDecoderModel: ``encoder`` built as BertModel (embeddings with their token-type
    table and LayerNorm, its layers, and the pooler: a dense d → d with a bias and tanh over the first position, which
    the forward runs); ``decoder`` as BertLMHeadModel (BERT's layers, causal, each with a crossattention after its
    self-attention: query from the decoder, key and value from the encoder's output at its hidden_size, an output
    dense and a LayerNorm over the residual sum, all with biases; the masked-LM head cls.predictions tied to the
    decoder's own word_embeddings, tie_word_embeddings). Two tables, one a side; tie_encoder_decoder (default false),
    which ties the encoder's weights to the decoder's, is not read."""
    if c.bool("tie_encoder_decoder", False):
        raise c.fail("tie_encoder_decoder", "an encoder whose weights are the decoder's is not read")
    enc, dec = side(c, "encoder"), side(c, "decoder")
    if not dec.bool("add_cross_attention", False):
        raise dec.fail("add_cross_attention", "EncoderDecoderModel's decoder attends the encoder: add_cross_attention true")
    spec = bert_family.bert(dec)
    spec.pop("mask")  # BertLMHeadModel with is_decoder: causal self-attention
    spec["name"] = c.data.get("_name_or_path") or None
    inner = bert_family.bert(enc)
    if inner["norm"] != spec["norm"]:
        raise c.fail("encoder", "an encoder whose norms are not the decoder's is not read")
    spec["encoder"] = {
        "layers": {
            "d_model": inner["d_model"],
            "n_layers": inner["n_layers"],
            "attention": inner["attention"],
            "ffn": inner["ffn"],
            "positions": "learned",
        },
        "table_rows": inner["vocab_size"],
        "position_rows": inner["context_length"] + inner["position_offset"],
        "type_rows": inner.get("token_types", 0),
        "embedding_norm": inner["embedding_norm"],
        "pooler": True,
        "cross_bias": True,
    }
    return spec
