"""Image encoder-decoders read whole: a vision encoder (vit.py) whose output every layer of a text decoder
cross-attends (the ``encoder`` part's cross-attention over the image's positions, parts/encoder.py ``image_patch``),
the image not tokens of the decoder's sequence (the vision part's ``cross``), as transformers 5.23's classes build
them. One image a sequence: the encoder runs it once, at the prefill; each decode step reads the cross-attention's
K and V of its positions from the cache."""

from __future__ import annotations

from ..config import Config
from ..families.blip_text import memory
from ..families.pix2struct import cross_attention
from . import sub_config, wrapper
from .vit import vit


@wrapper("pix2struct")
def pix2struct(c: Config) -> dict:
    """Pix2StructForConditionalGeneration (Lee et al. 2023): Pix2StructVisionModel (encoder: flattened patches through
    patch_projection, row and column tables, T5-form layers, a final RMSNorm; vit.py) and Pix2StructTextModel
    (decoder: families/pix2struct.py), whose every layer's encoder_decoder_attention reads the encoder's output
    whole: the image's patches (at the vision part's image size), no projector between them."""
    v = sub_config(c, "vision_config", {None: "pix2struct_vision_model"})  # type: ignore[dict-item]
    t = sub_config(c, "text_config", {None: "pix2struct_text_model"})  # type: ignore[dict-item]
    d = v.int("hidden_size")
    vision = vit(v, {"width": d, "linear": False}, cross=True, images=1)
    heads, kv = t.int("num_heads"), t.int("d_kv")
    ffn = {"kind": "gated", "d_ff": t.int("d_ff"), "activation": t.activation("dense_act_fn", "gelu_new")}
    encoder = cross_attention(t, t.int("hidden_size"), heads, kv, ffn)
    if d != t.int("hidden_size"):  # its cross-attention's key and value read hidden_size features of the encoder's
        raise v.fail("hidden_size", f"{d} features where the decoder's cross-attention reads {t.int('hidden_size')}")
    side, patch = vision["image_size"], vision["patch_size"]
    image = {"image_patch": patch, "image_side": side, "source_length": (side // patch) ** 2}
    return {"vision": vision, "encoder": {**encoder, **image}}


@wrapper("blip")
def blip(c: Config) -> dict:
    """BlipForConditionalGeneration (Li et al. 2022, BLIP): BlipVisionModel (BLIP-2's form: a class token, a learned
    position a position, a patch convolution with a bias, a fused qkv and a projection with biases, LayerNorms,
    post_layernorm; no pre-norm; vit.py), whose every position, class token included, each layer of the text decoder
    (BlipTextLMHeadModel: families/blip_text.py) cross-attends; no projector between them."""
    v = sub_config(c, "vision_config", {None: "blip_vision_model"})  # type: ignore[dict-item]
    t = sub_config(c, "text_config", {None: "blip_text_model"})  # type: ignore[dict-item]
    vision = vit(v, {"width": v.int("hidden_size"), "linear": False}, class_token=True, pre_norm=False, patch_bias=True)
    side, patch = vision["image_size"], vision["patch_size"]
    # its table's rows are image_size's positions whatever the image (BlipVisionEmbeddings: sliced to the positions)
    vision.update(read_class=True, cross=True, images=1, position_rows=(side // patch) ** 2 + 1)
    image = {"image_patch": patch, "image_side": side, "image_extra": 1, "source_length": (side // patch) ** 2 + 1}
    return {"vision": vision, "encoder": {**memory(t.int("encoder_hidden_size")), **image}}


# the vision encoders VisionEncoderDecoderModel's encoder is read as (AutoModel of the config's encoder), and the
# decoders whose cross-attention is read (BertLMHeadModel's, GPT2LMHeadModel's; each held whole in tests/hf_whole)
VED_ENCODERS = ("vit",)
VED_DECODERS = ("bert", "gpt2")


@wrapper("vision-encoder-decoder")
def vision_encoder_decoder(c: Config) -> dict:
    """VisionEncoderDecoderModel (Li et al. 2021, TrOCR; the wrapper of any vision encoder and causal text decoder):
    ``encoder`` built as AutoModel (ViTModel: a class token, a patch convolution with a bias, a learned position a
    position, pre-norm layers of q, k, v (qkv_bias) and o with biases and an MLP with biases, a final layernorm, and its
    pooler, a dense and a tanh over the class token, run by the forward and read by no decoder; vit.py); ``decoder``
    built as AutoModelForCausalLM with add_cross_attention (the language model, read by its own family), whose every
    layer cross-attends every position of the encoder's output, class token included; enc_to_dec_proj (a linear with a
    bias from the encoder's width to the decoder's) where the two differ and the decoder states no
    cross_attention_hidden_size. The decoder's self-attention is causal (is_decoder)."""
    from .. import language_model

    v = sub_config(c, "encoder", {None: "vit"})  # type: ignore[dict-item]
    if v.model_type not in VED_ENCODERS:
        raise v.fail("model_type", f"a {v.model_type} encoder is not read yet (read: {', '.join(VED_ENCODERS)})")
    d = v.int("hidden_size")
    if v.int("pooler_output_size", d) != d:
        raise v.fail("pooler_output_size", f"a pooler of {v.int('pooler_output_size')} features is not read (read: hidden_size)")
    vision = vit(v, {"width": d, "linear": False}, class_token=True, pre_norm=False, patch_bias=True, pooler=True)
    vision["layers"]["attention"]["qkv_bias"] = v.bool("qkv_bias", True)
    side, patch = vision["image_size"], vision["patch_size"]
    # ViTEmbeddings' table: image_size's positions whatever the image (interpolated to another's)
    vision.update(read_class=True, cross=True, images=1, position_rows=(side // patch) ** 2 + 1)
    t = language_model(c)
    if t.model_type not in VED_DECODERS:
        raise c.fail("decoder", f"a {t.model_type} decoder is not read yet (read: {', '.join(VED_DECODERS)})")
    if not t.bool("add_cross_attention", False):
        raise t.fail("add_cross_attention", "VisionEncoderDecoderModel's decoder attends the encoder: add_cross_attention true")
    width = t.data.get("cross_attention_hidden_size")
    hidden = t.int("hidden_size") if "hidden_size" in t.data else t.int("n_embd")
    bridge = d != hidden and width is None  # VisionEncoderDecoderModel.enc_to_dec_proj
    if d != hidden and width is not None and width != d:
        raise t.fail("cross_attention_hidden_size", f"{width} where the encoder writes {d} features")
    image = {"image_patch": patch, "image_side": side, "image_extra": 1, "source_length": (side // patch) ** 2 + 1}
    return {"vision": vision, "encoder": {**memory(d), **image, "bridge": bridge}, "mask": "causal"}
