"""Encoder-decoder wrappers (Rothe et al. 2020, "Leveraging Pre-trained Checkpoints for Sequence Generation Tasks"):
transformers' EncoderDecoderModel composes any encoder its config's ``encoder`` names (built as AutoModel) with any
decoder its ``decoder`` names (built as AutoModelForCausalLM, with add_cross_attention). Read here where each side is
a family already read whose layers the encoder part and the cross-attention express: BERT's and RoBERTa's (bert2bert,
roberta2roberta)."""

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
STACKS = ((r"(?<!bert\.)(?<!roberta\.)encoder\.", "encoder."),)
# the sides read: BertModel as the encoder, BertLMHeadModel as the decoder; RobertaModel, RobertaForCausalLM
READ = ("bert", "roberta")


# EncoderDecoderConfig.sub_configs: an absent side is BertConfig's defaults, the decoder's with is_decoder and
# add_cross_attention
ABSENT = {"encoder": {"model_type": "bert"}, "decoder": {"model_type": "bert", "is_decoder": True, "add_cross_attention": True}}


READERS = {"bert": bert_family.bert, "roberta": bert_family.roberta}


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
    which ties the encoder's weights to the decoder's, is not read. A roberta side is RobertaModel (positions from
    pad_token_id + 1) or RobertaForCausalLM (lm_head: dense, layer_norm, the tied decoder and its bias)."""
    if c.bool("tie_encoder_decoder", False):
        raise c.fail("tie_encoder_decoder", "an encoder whose weights are the decoder's is not read")
    enc, dec = side(c, "encoder"), side(c, "decoder")
    if not dec.bool("add_cross_attention", False):
        raise dec.fail("add_cross_attention", "EncoderDecoderModel's decoder attends the encoder: add_cross_attention true")
    spec = READERS[dec.model_type](dec)
    spec.pop("mask")  # BertLMHeadModel and RobertaForCausalLM with is_decoder: causal self-attention
    spec["name"] = c.data.get("_name_or_path") or None
    inner = READERS[enc.model_type](enc)
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


SPEECH_LAYER_MODULES = (
    (r"attention\.out_proj$", "attn.o"),
    (r"feed_forward\.intermediate_dense$", "ffn.up"),
    (r"feed_forward\.output_dense$", "ffn.down"),
) + LAYER_MODULES
SPEECH_TOP_MODULES = (
    *((rf"conv_layers\.{i}\.conv$", f"feat.conv{i}") for i in range(16)),
    *((rf"conv_layers\.{i}\.layer_norm$", f"feat.norm{i}") for i in range(16)),
    (r"feature_projection\.layer_norm$", "feat.proj_norm"),
    (r"feature_projection\.projection$", "feat.proj"),
    (r"pos_conv_embed\.conv(\.parametrizations\.weight)?$", "pos_conv"),
    (r"masked_spec_embed$", "mask_embed"),
    (r"encoder\.layer_norm$", "embed_norm"),  # the encoder's, read within its stack: after the positions, before its layers
    (r"enc_to_dec_proj$", "encoder.bridge"),
) + TOP_MODULES
SPEECH_ABSENT = {"encoder": {"model_type": "wav2vec2"}, "decoder": ABSENT["decoder"]}
# Wav2Vec2Config's defaults (transformers 5.23) for the keys read here: an encoder entry states what differs
WAV2VEC2 = {
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "hidden_act": "gelu",
    "conv_dim": [512] * 7,
    "conv_kernel": [10, 3, 3, 3, 3, 2, 2],
    "conv_stride": [5, 2, 2, 2, 2, 2, 2],
    "conv_bias": False,
    "feat_extract_norm": "group",
    "num_conv_pos_embeddings": 128,
    "num_conv_pos_embedding_groups": 16,
    "do_stable_layer_norm": False,
    "add_adapter": False,
}


@family("speech-encoder-decoder", layer_modules=SPEECH_LAYER_MODULES, top_modules=SPEECH_TOP_MODULES, model_stacks=STACKS)
def speech_encoder_decoder(c: Config) -> dict:
    """SpeechEncoderDecoderConfig / SpeechEncoderDecoderModel: ``encoder`` built as Wav2Vec2Model (its feature encoder's
    conv_dim, conv_kernel and conv_stride Conv1d layers (conv_bias, default false) with feat_extract_norm "group" (a
    GroupNorm on the first) or "layer" (a LayerNorm on each), the feature projection (a LayerNorm and a linear to
    hidden_size), masked_spec_embed, the positional Conv1d (num_conv_pos_embeddings, 128, in
    num_conv_pos_embedding_groups, 16, weight-normed, a bias), the encoder's LayerNorm, and its post-norm layers: q, k, v,
    out_proj, intermediate_dense, output_dense with biases); ``decoder`` as BertLMHeadModel (encoder_decoder above);
    enc_to_dec_proj (encoder hidden_size → decoder hidden_size, a bias) where the two differ and the decoder states no
    cross_attention_hidden_size. Read: a wav2vec2 encoder without its adapter, post-norm (do_stable_layer_norm false),
    and a bert decoder."""
    data = {key: c.data.get(key) if c.data.get(key) is not None else SPEECH_ABSENT[key] for key in ("encoder", "decoder")}
    if data["encoder"].get("model_type") != "wav2vec2":
        raise c.fail("encoder", f"a {data['encoder'].get('model_type')} encoder is not read yet (read: wav2vec2)")
    enc = Config({**WAV2VEC2, **data["encoder"]}, c.text, c.source, start=c.start)
    for key in ("add_adapter", "do_stable_layer_norm"):
        if enc.bool(key, False):
            raise enc.fail(key, "a wav2vec2 encoder with it is not read yet")
    dec = side(Config({**c.data, "decoder": data["decoder"]}, c.text, c.source, start=c.start), "decoder")
    if not dec.bool("add_cross_attention", False):
        raise dec.fail("add_cross_attention", "SpeechEncoderDecoderModel's decoder attends the encoder: add_cross_attention true")
    spec = READERS[dec.model_type](dec)
    spec.pop("mask")
    spec["name"] = c.data.get("_name_or_path") or None
    d, dims = enc.int("hidden_size"), enc.data.get("conv_dim")
    kernels, strides = enc.data.get("conv_kernel"), enc.data.get("conv_stride")
    for key, value in (("conv_dim", dims), ("conv_kernel", kernels), ("conv_stride", strides)):
        if not isinstance(value, list) or not value or not all(type(v) is int and v > 0 for v in value):
            raise enc.fail(key, f"expected a list of positive integers, got {value!r}")
    if not len(dims) == len(kernels) == len(strides):
        raise enc.fail("conv_dim", "conv_dim, conv_kernel and conv_stride of one length each")
    norm = enc.data.get("feat_extract_norm", "group")
    if norm not in ("group", "layer"):
        raise enc.fail("feat_extract_norm", f'expected "group" or "layer", got {norm!r}')
    act = enc.activation("hidden_act", "gelu")
    bridge = d != spec["d_model"] and dec.data.get("cross_attention_hidden_size") is None
    if d != spec["d_model"] and not bridge:
        raise dec.fail("cross_attention_hidden_size", "a cross-attention reading the encoder at its own width is not read")
    spec["encoder"] = {
        "layers": {
            "d_model": d,
            "n_layers": enc.int("num_hidden_layers"),
            "attention": {"n_heads": enc.int("num_attention_heads"), "qkv_bias": True, "o_bias": True},
            "ffn": {"kind": "dense", "d_ff": enc.int("intermediate_size"), "bias": True, "activation": act},
            "positions": "none",
        },
        "embedding_norm": True,
        "feature_dims": tuple(dims),
        "feature_kernels": tuple(kernels),
        "feature_strides": tuple(strides),
        "feature_bias": enc.bool("conv_bias", False),
        "feature_norm": norm,
        "pos_kernel": enc.int("num_conv_pos_embeddings"),
        "pos_groups": enc.int("num_conv_pos_embedding_groups"),
        "mask_embed": True,
        "bridge": bridge,
        "cross_bias": True,
    }
    return spec


SPEECHT5_TOP_MODULES = (
    (r"prenet$", "mask_embed"),  # the speech prenet's masked_spec_embed, held by the prenet itself
    (r"wrapped_encoder\.layer_norm$", "embed_norm"),
    (r"embed_positions\.pe_k$", "rel_keys"),
) + SPEECH_TOP_MODULES
SPEECHT5_LAYER_MODULES = (
    (r"encoder_attn\.q_proj$", "encoder.cross.q"),
    (r"encoder_attn\.k_proj$", "encoder.cross.k"),
    (r"encoder_attn\.v_proj$", "encoder.cross.v"),
    (r"encoder_attn\.out_proj$", "encoder.cross.o"),
    (r"self_attn\.out_proj$", "attn.o"),
    (r"(self_attn_layer_norm|encoder_attn_layer_norm)$", "norms"),
) + SPEECH_LAYER_MODULES


@family("speecht5", layer_modules=SPEECHT5_LAYER_MODULES, top_modules=SPEECHT5_TOP_MODULES, model_stacks=STACKS)
def speecht5(c: Config) -> dict:
    """SpeechT5Config / SpeechT5ForSpeechToText (Ao et al. 2022): the class transformers' speech-seq2seq mapping
    builds for this type. The speech encoder prenet (wav2vec 2.0's feature encoder over conv_dim, conv_kernel and conv_stride,
    feat_extract_norm, its feature projection, masked_spec_embed, the weight-normed positional Conv1d of
    num_conv_pos_embeddings in num_conv_pos_embedding_groups, and fixed sines and cosines of max_speech_positions rows: a
    buffer), the encoder's LayerNorm before encoder_layers (12) post-norm layers of encoder_attention_heads (12) whose
    attention adds relative-position keys (blocks/rel_key.py; pe_k of 2 × encoder_max_relative_position rows of head
    width, held once), encoder_ffn_dim (3072); the text decoder prenet (embed_tokens, vocab_size 81, and fixed sinusoidal
    positions of max_text_positions: a buffer) and decoder_layers (6) post-norm layers of self-attention,
    encoder_attn and the FFN (decoder_ffn_dim), all with biases; the text postnet's lm_head tied to embed_tokens
    (tie_word_embeddings, default true). No final norms."""
    for key in ("do_stable_layer_norm",):
        if c.bool(key, False):
            raise c.fail(key, "SpeechT5 with it is not read yet")
    d, act = c.int("hidden_size"), c.activation("hidden_act", "gelu")
    dims, kernels, strides = (c.data.get(k) for k in ("conv_dim", "conv_kernel", "conv_stride"))
    for key, value in (("conv_dim", dims), ("conv_kernel", kernels), ("conv_stride", strides)):
        if not isinstance(value, list) or not value or not all(type(v) is int and v > 0 for v in value):
            raise c.fail(key, f"expected a list of positive integers, got {value!r}")
    if not len(dims) == len(kernels) == len(strides):
        raise c.fail("conv_dim", "conv_dim, conv_kernel and conv_stride of one length each")
    norm = c.data.get("feat_extract_norm", "group")
    if norm not in ("group", "layer"):
        raise c.fail("feat_extract_norm", f'expected "group" or "layer", got {norm!r}')
    heads = c.int("encoder_attention_heads")

    def ffn(key: str) -> dict:
        return {"kind": "dense", "d_ff": c.int(key), "bias": True, "activation": act}

    distance = c.int("encoder_max_relative_position", 160)
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": d,
        "n_layers": c.int("decoder_layers"),
        "context_length": c.int("max_text_positions", 450),
        "positions": "sinusoidal",
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "attention": {"n_heads": c.int("decoder_attention_heads"), "qkv_bias": True, "o_bias": True},
        "ffn": ffn("decoder_ffn_dim"),
        "norm": {"kind": "layernorm", "per_layer": 2, "final": False, "placement": "residual"},
        "encoder": {
            "layers": {
                "d_model": d,
                "n_layers": c.int("encoder_layers"),
                "attention": {"kind": "rel_key", "n_heads": heads, "qkv_bias": True, "o_bias": True, "max_distance": distance},
                "ffn": ffn("encoder_ffn_dim"),
                "positions": "sinusoidal",
            },
            "embedding_norm": True,
            "feature_dims": tuple(dims),
            "feature_kernels": tuple(kernels),
            "feature_strides": tuple(strides),
            "feature_bias": c.bool("conv_bias", False),
            "feature_norm": norm,
            "pos_kernel": c.int("num_conv_pos_embeddings"),
            "pos_groups": c.int("num_conv_pos_embedding_groups"),
            "mask_embed": True,
            "relative_keys": 2 * distance,
            "relative_width": d // heads,
            "cross_bias": True,
        },
    }
