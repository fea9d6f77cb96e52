"""Inkling read whole (InklingForConditionalGeneration): its text_config's language model (inkling_text), an audio
tower of quantised log-mel frames (parts/audio_codes.py) and a vision tower of a hierarchical MLP over each patch
(parts/hmlp_vision.py), each writing the language model's width itself (no projector)."""

from __future__ import annotations

import re

from ..config import Config
from . import sub_config, wrapper

INKLING_TYPES = ("inkling_audio", "inkling_vision")  # the sub-configs its reader takes
IMAGE_SIZE = 640  # pixels a side: 16 rows of 17 patches of 40 (divide_to_patches)


@wrapper("inkling_mm_model")
def inkling_mm_model(c: Config) -> dict:
    """InklingForConditionalGeneration (Inkling): InklingAudioModel, a table of n_mel_bins × mel_vocab_size rows of
    text_hidden_size, each frame's bins' rows summed, then an RMSNorm; InklingVisionModel, n_layers projections
    (plan_out_scales) over each patch of temporal_patch_size × patch_size² pixels, each but the last followed by an
    RMSNorm and GELU, then final_norm: one token a patch, beside Inkling's language model."""
    a = sub_config(c, "audio_config", {None: "inkling_audio"})  # type: ignore[dict-item]
    v = sub_config(c, "vision_config", {None: "inkling_vision"})  # type: ignore[dict-item]
    audio = {"width": a.int("text_hidden_size"), "codebooks": a.int("n_mel_bins"), "codebook_size": a.int("mel_vocab_size")}
    vision = {
        "image_size": IMAGE_SIZE,
        "patch_size": v.int("patch_size"),
        "frames": v.int("temporal_patch_size"),
        "channels": v.int("num_channels"),
        "n_layers": v.int("n_layers"),
        "text_width": v.int("text_hidden_size"),
        "position_table": False,
        "patch_bias": False,
        "projector": {"width": v.int("text_hidden_size"), "linear": False},
    }
    return {"audio_codes": audio, "hmlp_vision": vision}


def inkling_component(path: str, tower: str) -> str | None:
    """An InklingForConditionalGeneration parameter in its towers -> its component, or None; the audio tower's norm
    (audio_tower.norm, a name Whisper-built towers share) where the model's tower is not a Whisper-built one."""
    found = re.search(r"(?:^|\.)vision_tower\.(encoder_layers\.\d+\.(projection|layer_norm)|final_norm)\.", path)
    if found:
        return {"projection": "vision.projection", "layer_norm": "vision.norms"}.get(found.group(2) or "", "vision.final_norm")
    if re.search(r"(?:^|\.)audio_tower\.embed_audio_tokens\.", path):
        return "audio.codes"
    if tower != "audio" and re.search(r"(?:^|\.)audio_tower\.norm\.", path):
        return "audio.final_norm"
    return None
