"""Towers beside a language model, as a multimodal config.json describes them: one module per tower family (the
vision encoders of CLIP and SigLIP, ``vit.py``), and the wrappers that compose a text family's language model with a
tower and a projector (``vlm.py``). A wrapper's reader takes the whole config (``Config.outer``) and returns the
spec keys of its parts (``vision``); the language model is its text_config's family's, read as before."""

from __future__ import annotations

import importlib
from typing import Callable

from ..config import Config

_WRAPPERS: dict[str, Callable[[Config], dict]] = {}
# the components of the parts a wrapper puts beside its language model (its towers, projectors, Evolla's protein path)
TOWER_PREFIXES = ("vision.", "audio.", "protein.")
MODULES = (
    "vlm",
    "audio_lm",
    "vbert",
    "image_seq2seq",
    "sam",
    "lfm3_vl",
    "phi4mm",
    "inkling_mm",
    "mllama",
    "idefics",
    "dots3_note",
    "timm",
)
MODULES += ("granite_docling",)
MODULES += ("pp_formulanet",)  # PP-FormulaNet: its SAM encoder and projector before an mBART decoder
MODULES += ("muse",)
MODULES += ("vibevoice",)
MODULES += ("florence2",)  # Florence-2: its DaViT tower and projector before BART's encoder
MODULES += ("hunyuan_vl",)  # HunyuanOCR: its SigLIP-form tower and convolutional patch merger
MODULES += ("gemma3n",)  # Gemma 3n: its MobileNetV5 and audio towers and their embedders
MODULES += ("vqvae",)  # Chameleon: its VQ-VAE image tokenizer
MODULES += ("molmo2",)  # Molmo 2: its SigLIP-form tower over overlapping crops and its window-pooling adapter
MODULES += ("qwen_omni",)  # Qwen2.5-Omni and Qwen3-Omni: their thinker, talker and token2wav or code2wav
MODULES += ("granite4_vision",)  # Granite 4 Vision: LLaVA-NeXT's layout, Window Q-Former projectors
MODULES += ("pi0",)  # π0: its PaliGemma and its Gemma action expert
MODULES += ("evolla",)  # Evolla: its protein encoder and resampler, cross-attended by adapters in its decoder
MODULES += ("diffusion_gemma",)  # DiffusionGemma: Gemma 4's tower, its encoder's layers and its decoder


def wrapper(*model_types: str):
    """Register a reader of the parts a wrapper's model_types put beside their language model."""

    def add(fn: Callable[[Config], dict]) -> Callable[[Config], dict]:
        for t in model_types:
            _WRAPPERS[t] = fn
        return fn

    return add


def wrappers() -> dict[str, Callable[[Config], dict]]:
    for name in MODULES:
        importlib.import_module(f"{__name__}.{name}")
    return _WRAPPERS


def sub_config(c: Config, key: str, renamed: dict[str, str] | None = None) -> Config:
    """A nested config (vision_config), read with its class's declared defaults; errors name its keys' lines.
    ``renamed``: model_types older files state that the class reads as another (Qwen2.5-VL's "qwen2_5_vl")."""
    import re

    from .. import TEXT_TYPES, class_defaults
    from ..config import class_defaults_of

    data = c.data.get(key)
    if data is not None and not isinstance(data, dict):
        raise c.fail(key, f"expected an object, got {data!r}")
    wrapper = class_defaults_of(c.model_type) or {}
    if key == "text_config" and (data is None or wrapper.get("text_config_merged")):  # the wrapper's own text defaults
        data = {"model_type": TEXT_TYPES.get(c.model_type), **wrapper.get("text_config", {}), **(data or {})}
    data = data or {}
    if renamed and data.get("model_type") in renamed:
        data = {**data, "model_type": renamed[data.get("model_type")]}
    match = re.search(r'"%s"\s*:' % re.escape(key), c.text)
    return class_defaults(Config(data, c.text, c.source, start=match.start() if match else 0))


def component(path: str, tower: str = "vision") -> str | None:
    """A whole model's parameter in a tower or its projector -> its component (model-level), or None: the vision
    towers' names (vit.py) and the audio towers' (whisper.py); ``tower``: the part the model has ("vision", "audio")."""
    from .inkling_mm import inkling_component
    from .muse import muse_audio_component
    from .phi4mm import phi4_component
    from .qwen_omni import held_component
    from .timm import timm_component
    from .vit import tower_component
    from .vqvae import vqvae_component
    from .whisper import audio_component

    held = held_component(path)  # Qwen2.5-Omni's talker and token2wav, Qwen3-Omni's talker and code2wav
    if held is not None:
        return held
    if tower == "block_diffusion":  # DiffusionGemma's decoder beside Gemma 4's vision tower
        from .diffusion_gemma import decoder_component

        decoder = decoder_component(path)
        if decoder is not None:
            return decoder
        tower = "vision"
    if tower == "protein":  # Evolla's protein encoder and resampler; its adapters are the language model's
        from .evolla import protein_component

        return protein_component(path)
    if tower == "muse_spark_audio":  # MUSE Spark's audio tower beside its vision tower
        muse = muse_audio_component(path)
        if muse is not None:
            return muse
        tower = "vision"
    if tower == "vqvae":  # Chameleon's and Emu3's VQ-VAE image tokenizers (Janus's vqmodel is its image generator)
        vq = vqvae_component(path)
        if vq is not None:
            return vq
        tower = "vision"
    if tower.endswith("_vision"):  # a vision part of its own (Molmo 2's molmo2_vision) names its modules as the vision part's
        tower = "vision"
    from .pi0 import pi0_component

    expert = pi0_component(path)  # π0's action expert and its projections
    if expert is not None:
        return expert
    phi4 = phi4_component(path)  # Phi-4-multimodal's image and audio embeddings
    if phi4 is not None:
        return phi4
    from .vibevoice import vibevoice_component

    vibevoice = vibevoice_component(path, tower)  # VibeVoice's and VibeVoice-ASR's tokenizers, connectors and head
    if vibevoice is not None:
        return vibevoice
    inkling = inkling_component(path, tower)  # Inkling's towers
    if inkling is not None:
        return inkling
    from .gemma3n import gemma3n_component

    gemma3n = gemma3n_component(path)  # Gemma 3n's MobileNetV5 (through timm), audio tower and embedders
    if gemma3n is not None:
        return gemma3n
    timm = timm_component(path)  # timm's towers (TimmWrapperModel)
    if timm is not None:
        return timm
    from .florence2 import davit_component

    davit = davit_component(path)  # Florence-2's DaViT and projector
    if davit is not None:
        return davit
    found = (audio_component(path) if tower == "audio" else None) or tower_component(path, tower)
    if found is None and tower == "audio":  # a vision tower beside the audio one (Qwen2.5-Omni's)
        found = tower_component(path)
    if found is None or found.startswith("(unmatched)"):  # Dots3 Note's own modules
        from .dots3_note import dots3_component

        found = dots3_component(path) or found
    return found


# the components a whole model's parameters are held against by their modules' names (verify --hf, checkpoints): its
# towers' and projectors', and the parts held beside them (Qwen2.5-Omni's talker and token2wav, Qwen3-Omni's talker and
# code2wav, π0's action expert,
# Evolla's protein path); the rest is its language model's
NAMED = ("vision.", "audio.", "talker.", "token2wav.", "code2wav.", "action_expert.", "protein.", "decoder.")


def indexed(path: str, tower: str | None) -> bool:
    """Whether a whole model's parameter's component depends on its indices (MUSE Spark's audio stages, each its own
    widths), so that a checkpoint's components found once per index-free name must be found for it alone."""
    return tower == "muse_spark_audio" and ".audio_tower.layers." in f".{path}"


def tower_of(c: Config) -> str | None:
    """The part a wrapper read whole puts beside its language model ("vision" or "audio"; VibeVoice's and MUSE Spark's
    audio parts, Evolla's protein part and DiffusionGemma's decoder by their own keys; "vqvae", a VQ-VAE image
    tokenizer in place of a vision tower), or None."""
    reader = wrappers().get(c.wrapper or "") if c.outer is not None else None
    if reader is None:
        return None
    parts = reader(c.outer)
    if "vibevoice_audio" in parts:  # VibeVoice's connector shares Audio Flamingo's module names: its own kind
        return "vibevoice_audio"
    if "protein" in parts:  # Evolla's protein path, named its own way
        return "protein"
    if "muse_spark_audio" in parts:  # MUSE Spark's audio tower, named its own way, beside its vision tower
        return "muse_spark_audio"
    if "block_diffusion" in parts:  # DiffusionGemma's decoder, named its own way, beside its vision tower
        return "block_diffusion"
    vision = parts.get("vision")
    if isinstance(vision, dict) and ("vqvae" in vision or "emu3_vqvae" in vision):  # an image tokenizer's own names
        return "vqvae"
    return "audio" if "audio" in parts else "vision"
