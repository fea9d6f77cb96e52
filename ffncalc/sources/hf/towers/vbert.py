"""Vision encoders read whole: a SigLIP vision tower beside a bidirectional text encoder, its patches pixel-shuffled and
projected into the encoder's tokens, the masked-LM head over every position (ModernVBERT, UltraVBERT)."""

from __future__ import annotations

from ..config import Config
from . import sub_config, wrapper
from .vit import vit


def _siglip(c: Config, **absent) -> Config:
    """The vision_config, a SigLIP vision model's where it names no model_type (its SubConfigSpec's), with ``absent``
    (the SubConfigSpec's init_kwargs) where the file states none: as the configuration class builds it."""
    stated = c.data.get("vision_config")
    if stated is None or (isinstance(stated, dict) and "model_type" not in stated):
        data = {"model_type": "siglip_vision_model", **(absent if stated is None else {}), **(stated or {})}
        c = Config({**c.data, "vision_config": data}, c.text, c.source, start=c.start)
    return sub_config(c, "vision_config")


@wrapper("modernvbert")
def modernvbert(c: Config) -> dict:
    """ModernVBertForMaskedLM (Teiletche et al. 2025, ModernVBERT): ModernVBertModel's vision_model, a SigLIP vision
    model (AutoModel of its vision_config: its pooling head where vision_use_head, default true: built, and run by
    get_image_features, its output unread), ModernVBertConnector (the tower's patches pixel-shuffled by
    pixel_shuffle_factor (default 4: 4 × 4 patches into one token of 16 times the width), then modality_projection,
    Linear(width · factor², text width) without a bias) and its text_model, ModernBertModel (families/modernbert.py);
    projection_head, ModernVBertPredictionHead of the text_config (dense, classifier_activation, a LayerNorm), and
    lm_head, Linear(text width, vocabulary) with a bias where decoder_bias, tied to the token table where
    tie_word_embeddings (default false)."""
    v = _siglip(c)
    projector = {"width": v.int("hidden_size"), "bias": False, "shuffle": c.int("pixel_shuffle_factor", 4)}
    return {"vision": vit(v, projector)}


@wrapper("ultravbert")
def ultravbert(c: Config) -> dict:
    """UltraVBertForMaskedLM: ModernVBERT's layout over UltraBERT (families/ultrabert.py): a SigLIP vision model
    (vision_use_head false, UltraVBertConfig's default for its vision_config), UltraVBertConnector (pixel shuffle by
    pixel_shuffle_factor, default 4, modality_projection without a bias, then norm, an RMSNorm of the text width: the
    image tokens' scale, as UltraBERT puts no norm on its embeddings), UltrabertModel, projection_head (linear1, gelu_tanh,
    linear2, gelu_tanh, no biases) and lm_head without a bias, tied where tie_word_embeddings (default false)."""
    v = _siglip(c, vision_use_head=False)
    projector = {"width": v.int("hidden_size"), "bias": False, "shuffle": c.int("pixel_shuffle_factor", 4), "post_norm": "rmsnorm"}
    return {"vision": vit(v, projector)}
