"""T5Gemma 2 (Zhang et al. 2025, "T5Gemma 2: Seeing, Reading, and Understanding Longer"): Gemma 3's layers adapted into
an encoder, with Gemma 3's SigLIP vision tower and projector before it, and a decoder whose every layer's self- and
cross-attention are merged into one attention over both key sets, as transformers' T5Gemma2ForConditionalGeneration
builds them."""

from __future__ import annotations

from math import isqrt

from ..config import Config, family
from ..towers import sub_config
from ..towers.vit import LAYER_MODULES as VIT_LAYER_MODULES
from ..towers.vit import TOP_MODULES as VIT_TOP_MODULES
from ..towers.vit import vit
from .gemma import gemma3_text

LAYER_MODULES = (
    (r"(pre|post)_(self_attn|feedforward)_layernorm$", "norms"),
    *VIT_LAYER_MODULES,
)
TOP_MODULES = (
    (r"mm_soft_emb_norm$", "norm"),  # the projector's, read within its stack: vision.projector.norm
    (r"mm_input_projection_weight$", "linear"),
    (r"embed_tokens$", "embed"),  # eoi_embedding with it: one row beside the table
    (r"lm_head\.out_proj$", "lm_head"),
    (r"((decoder|text_model)\.)?norm$", "final_norm"),  # the encoder's, read within its stack: encoder.final_norm
    *VIT_TOP_MODULES,
)
STACKS = (
    (r"encoder\.vision_tower\.", "vision."),
    (r"encoder\.multi_modal_projector\.", "vision.projector."),
    (r"encoder\.text_model\.(?=layers\.|norm\.)", "encoder."),  # its table is the shared one: embed
)


def _part(c: Config, data, key: str) -> Config:
    """A nested configuration (the decoder's, the encoder's text_config) read as Gemma 3's text model: T5Gemma2TextConfig
    and T5Gemma2DecoderConfig declare Gemma3TextConfig's defaults."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise c.fail(key, f"expected an object of its configuration's keys, got {data!r}")
    return Config({**data, "model_type": "gemma3_text"}, c.text, c.source, start=c.start)


@family("t5gemma2", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=STACKS)
def t5gemma2(c: Config) -> dict:
    """T5Gemma2Config / T5Gemma2ForConditionalGeneration: model.decoder (decoder, T5Gemma2DecoderConfig: Gemma 3's
    text layers, gemma3_text: 26 layers of 2,304, GeGLU of 9,216, 8 heads and 4 key-value heads of 256, q_norm and
    k_norm a head, four RMSNorms a layer, sliding-window and global layers by layer_types, a final norm) whose every
    T5Gemma2MergedAttention projects the encoder's output with its own k_proj, k_norm and v_proj (no rotary) and meets
    its own keys and the source's in one softmax; model.encoder.text_model (encoder.text_config): the same layers,
    bidirectional (a sliding layer's window reaching both ways: the eager kernel computes the whole square and masks
    it, counted as every query meeting every key), and a final norm; model.encoder.vision_tower (encoder.vision_config,
    SigLIP's, its pooling head built where vision_use_head) and multi_modal_projector (Gemma 3's: an average pool to
    √mm_tokens_per_image a side, mm_soft_emb_norm, mm_input_projection_weight), whose image tokens enter the encoder.
    One token table (vocab_size 262,208 × 2,304: the encoder's embed_tokens, the decoder's tied to it, and lm_head.out_proj
    tied to it, _tied_weights_keys) with its eoi_embedding (one row of the width, also shared)."""
    enc = c.data.get("encoder")
    if enc is not None and not isinstance(enc, dict):
        raise c.fail("encoder", f"expected an object of T5Gemma2EncoderConfig keys, got {enc!r}")
    encoder = Config({"model_type": "t5gemma2_encoder", **(enc or {})}, c.text, c.source, start=c.start)
    dec, text = _part(c, c.data.get("decoder"), "decoder"), _part(c, (enc or {}).get("text_config"), "encoder")
    spec = gemma3_text(dec)
    inner = gemma3_text(text)
    spec["name"] = c.data.get("_name_or_path") or None
    if inner["d_model"] != spec["d_model"]:
        raise c.fail("encoder", f"an encoder {inner['d_model']} wide: the decoder's k_proj and v_proj read it at {spec['d_model']}")
    if inner["vocab_size"] != spec["vocab_size"]:
        raise c.fail(
            "encoder", f"one table is shared: the encoder's vocab_size {inner['vocab_size']}, the decoder's {spec['vocab_size']}"
        )
    attention = spec["attention"]
    if attention.get("qkv_bias") or attention.get("o_bias"):
        raise c.fail("decoder", "a merged attention with biases (attention_bias) is not read yet")
    spec["tie_embeddings"] = True  # T5Gemma2ForConditionalGeneration._tied_weights_keys, whatever the file says
    layers = {k: inner[k] for k in ("d_model", "n_layers", "ffn")}
    layers["attention"] = {k: v for k, v in inner["attention"].items() if k != "window"}
    spec["encoder"] = {
        "layers": {**layers, "positions": "rotary"},
        "final_norm": True,
        "cross_head_dim": attention["head_dim"],
        "cross_kv_heads": attention["n_kv_heads"],
        "cross_merged": True,
        "table_extra": 1,
    }
    vision = dict(encoder.data.get("vision_config") or {})
    vision.setdefault("model_type", "siglip_vision_model")
    v = sub_config(Config({**encoder.data, "vision_config": vision}, c.text, c.source), "vision_config")
    side = isqrt(encoder.int("mm_tokens_per_image", 256))
    projector = {"width": v.int("hidden_size"), "bias": False, "norm": "rmsnorm", "pool_to": side}
    spec["vision"] = vit(v, projector)
    return spec
