"""DiffusionGemma read whole (DiffusionGemmaForBlockDiffusion): its encoder (DiffusionGemmaEncoderModel: the text_config's
language model, read as diffusion_gemma_text, with Gemma 4's vision tower and embed_vision, read as gemma4's) and its
decoder (parts/block_diffusion.py: the same layers over a canvas, and self_conditioning)."""

from __future__ import annotations

import re

from ..config import Config
from . import sub_config, wrapper

# the whole class's decoder modules not tied to the encoder's -> their components (parts/block_diffusion.py)
DECODER_NAMES = (
    (re.compile(r"model\.decoder\.self_conditioning\.(gate_proj|up_proj|down_proj)\."), "decoder.self_conditioning.mlp"),
    (re.compile(r"model\.decoder\.self_conditioning\.pre_norm\."), "decoder.self_conditioning.pre_norm"),
    (re.compile(r"model\.decoder\.layers\."), "decoder.layers"),
    (re.compile(r"model\.decoder\.(norm|embed_tokens)\."), "decoder.{}"),
)


def decoder_component(path: str) -> str | None:
    """A whole DiffusionGemma's parameter in its decoder -> its component (one named here by none: "(unmatched) …"), or
    None outside it."""
    if not path.startswith("model.decoder."):
        return None
    for pattern, name in DECODER_NAMES:
        found = pattern.match(path)
        if found:
            return name.format(*found.groups())
    return f"(unmatched) {path}"


@wrapper("diffusion_gemma")
def diffusion_gemma(c: Config) -> dict:
    """DiffusionGemmaForBlockDiffusion (DiffusionGemma, Google DeepMind 2026): Gemma 4's vision tower and embed_vision
    (vlm.py's gemma4: DiffusionGemmaMultimodalEmbedder is Gemma4MultimodalEmbedder's form) before the encoder's language
    model, and the decoder over canvas_length tokens (default 256) with its self_conditioning, its layers, norm and
    table tied to the encoder's by the wrapper's tie_word_embeddings (default true; text_config's is not read). An
    absent or null vision_config is Gemma4VisionConfig's defaults, as the configuration class builds it."""
    from .vlm import gemma4

    if c.data.get("vision_config") is None:  # DiffusionGemmaConfig builds Gemma4VisionConfig's defaults in its place
        c = Config({**c.data, "vision_config": {"model_type": "gemma4_vision"}}, c.text, c.source, start=c.start)
    t = sub_config(c, "text_config", {None: "diffusion_gemma_text"})  # type: ignore[dict-item]
    canvas = c.int("canvas_length", 256)
    decoder = {"width": t.int("hidden_size"), "intermediate": t.int("intermediate_size"), "vocab": t.int("vocab_size")}
    decoder |= {"canvas": canvas, "untied": not c.bool("tie_word_embeddings", True)}
    return {**gemma4(c), "block_diffusion": decoder}
