"""Hugging Face ``config.json`` -> the spec of the model it describes. No torch, no transformers.

Each family (``families/``, one module per family) reads the keys its transformers configuration class
defines and applies that class's default where a key is absent (transformers 5.x; the class is named in
each function). What no key states — which projections carry a bias, where the norms sit — is taken from
the modeling code, whose class is named beside it. The shape keys (vocab, width, depth, heads, FFN width)
are required: a config.json without them describes no checkpoint, so a missing one is an error.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from ...errors import InputError, SpecError
from ...model import Model
from .. import parse_json
from ..yaml import read_text
from .config import Config, Family


def registered() -> dict[str, Family]:
    """Every family by model_type; their modules are imported on first use (counting a preset needs none)."""
    from . import families  # noqa: F401  (each module registers itself)
    from .config import FAMILIES

    return FAMILIES


def __getattr__(name: str):
    if name == "FAMILIES":
        return registered()
    raise AttributeError(name)


# --- reading --------------------------------------------------------------------------------------


def config_path(ref: str | Path) -> Path:
    """A config.json, or a folder holding one."""
    from .. import check_name

    check_name(ref, "config")
    path = Path(ref)
    return path / "config.json" if path.is_dir() else path


def read_config(ref: str | Path, as_family: str | None = None) -> Config:
    """A config.json (its language model, for a multimodal one); ``as_family`` reads it as that model_type."""
    path = config_path(ref)
    if path.parent.is_dir() and not path.exists() and path.name == "config.json":
        raise InputError(f"{path.parent}: is a directory without a config.json")
    return from_text(read_text(path), str(path), as_family)


def from_text(text: str, source: str, as_family: str | None = None) -> Config:
    """A config.json's text (its language model, for a multimodal one); ``source`` names it in errors."""
    data = parse_json(text, source)
    if not isinstance(data, dict):
        raise InputError(f"{source}:1: a config.json is a JSON object, not a {type(data).__name__}")
    c = class_defaults(language_model(Config(data, text, source)))
    if as_family is not None:
        if as_family not in registered():
            raise InputError(f"--as {as_family}: not a supported model_type (supported: {', '.join(sorted(registered()))})")
        c = Config(
            {**c.data, "model_type": as_family}, c.text, c.source, start=c.start, wrapper=c.wrapper, towers=c.towers, outer=c.outer
        )
    return c


# Multimodal wrappers: the model_type of the language model their text_config describes, where the
# text_config may leave model_type out (the wrapper's config class then builds this one).
TEXT_TYPES = {
    "cosmos3_edge": "cosmos3_edge_text",
    "audioflamingo3": "qwen2",
    "dots3_note": "dots3_note_text",
    "diffusion_gemma": "diffusion_gemma_text",
    "ernie4_5_vl_moe": "ernie4_5_vl_moe_text",
    "gemma3": "gemma3_text",
    "gemma3n": "gemma3n_text",
    "gemma4": "gemma4_text",
    "gemma4_unified": "gemma4_unified_text",
    "git": "git",  # GitConfig's language model is its own top-level keys
    "glm4v": "glm4v_text",
    "glm4v_moe": "glm4v_moe_text",
    "glmasr": "llama",
    "glm46v": "glm4v_text",
    "granite_speech": "granite",
    "granite_speech_plus": "granite",
    "kosmos-2": "kosmos_2_text_model",
    "kosmos-2.5": "kosmos_2_5_text_model",
    "pix2struct": "pix2struct_text_model",
    "blip": "blip_text_model",
    "pp_formulanet": "pp_formulanet_text",
    "glm_ocr": "glm_ocr_text",
    "granite_docling": "granite_docling_text",
    "granite4_vision": "granite4_vision_text",
    "cohere_compass": "cohere_compass_text",
    "idefics": "idefics",  # IdeficsConfig's language model is its own top-level keys
    "chameleon": "chameleon",  # ChameleonConfig's too, beside its vq_config
    "evolla": "evolla",  # EvollaConfig's too, beside its protein_encoder_config
    "llama4": "llama4_text",
    "mllama": "mllama_text_model",
    "mistral3": "mistral",
    "modernvbert": "modernbert",
    "moss_transcribe_diarize": "qwen3",
    "musicflamingo": "qwen2",
    "paddleocr_vl": "paddleocr_vl_text",
    "phi4_multimodal": "phi3",  # Phi4MultimodalConfig: Phi-4-mini's keys at its top
    "qwen2_vl": "qwen2_vl_text",
    "qwen2_5_vl": "qwen2_5_vl_text",
    "qwen2_5_omni_thinker": "qwen2_5_omni_text",
    "qwen3_omni_moe_thinker": "qwen3_omni_moe_text",
    "qwen2_audio": "qwen2",
    "qwen3_asr": "qwen3",
    "step3p7": "step3p5",
    "ultravbert": "ultrabert",
    "qwen3_vl": "qwen3_vl_text",
    "qwen3_vl_moe": "qwen3_vl_moe_text",
    "qwen3_5": "qwen3_5_text",
    "qwen3_5_moe": "qwen3_5_moe_text",
    "qwen4_exp": "qwen4_exp_text",
    "voxtral": "llama",
    "voxtral_realtime": "voxtral_realtime_text",
    "fun_asr_nano": "qwen3",
    "nemo_speechlm": "nemotron_h",
    "vibevoice_asr": "qwen2",
    "vibevoice": "qwen2",
}


# Wrappers whose configuration class reads a file saved flat (no text_config: the language model's keys at the top,
# Qwen2-VL's and Qwen2.5-VL's released config.json files) as its text config ("Hub configs are saved as flat dicts")
# Wrappers whose language model is the configuration's ``decoder`` (VisionEncoderDecoderConfig: any causal LM built with
# add_cross_attention, beside the vision ``encoder``: towers/image_seq2seq.py)
DECODER_TEXT = frozenset({"vision-encoder-decoder"})
# GitConfig, IdeficsConfig, ChameleonConfig: always flat
# Wrappers whose language model is their vlm_config's (PI0Config: a PaliGemma config beside its dit_config)
VLM_TEXT = frozenset({"pi0"})
FLAT_TEXT = frozenset({"qwen2_vl", "qwen2_5_vl", "git", "phi4_multimodal", "idefics", "chameleon", "evolla"})


# Wrappers whose language model lies in a sub-config that holds it as a wrapper of its own: the key and that
# sub-config's model_type (Qwen2_5OmniConfig: the thinker's text_config, beside its talker_config and token2wav_config)
NESTED_TEXT = {
    "qwen2_5_omni": ("thinker_config", "qwen2_5_omni_thinker"),
    "qwen3_omni_moe": ("thinker_config", "qwen3_omni_moe_thinker"),
}


def language_model(c: Config) -> Config:
    """A multimodal config's language model: its text_config, read as a config of its own, with the
    wrapper and the other parts the file describes (vision, audio, projector) named."""
    if c.model_type in NESTED_TEXT:  # the inner wrapper's language model, the outer wrapper's whole model
        key, inner_type = NESTED_TEXT[c.model_type]
        inner = c.data.get(key)
        if inner is not None and not isinstance(inner, dict):
            raise c.fail(key, f"expected an object, got {inner!r}")
        text = language_model(Config({**(inner or {}), "model_type": inner_type}, c.text, c.source, start=c.start))
        towers = tuple(k for k, v in c.data.items() if k.endswith("_config") and isinstance(v, dict))
        return Config(text.data, c.text, c.source, start=text.start, wrapper=c.model_type, towers=towers, outer=c)
    if c.model_type in VLM_TEXT:  # π0: its PaliGemma's language model, the wrapper and its parts named
        from .towers.pi0 import vlm_of

        inner = language_model(vlm_of(c))
        towers = ("vlm_config", "dit_config")
        return Config(inner.data, c.text, c.source, start=inner.start, wrapper=c.model_type, towers=towers, outer=c)
    text = c.data.get("text_config")
    if text is not None and not isinstance(text, dict):
        raise c.fail("text_config", f"expected an object, got {text!r}")
    if c.model_type not in TEXT_TYPES and c.model_type not in DECODER_TEXT and text is None:
        return c
    if text is None and c.model_type in DECODER_TEXT:  # its decoder, a causal LM with cross-attention, is its language model
        text = c.data.get("decoder") or {"model_type": "bert"}  # VisionEncoderDecoderConfig's absent decoder: BertConfig's
        if not isinstance(text, dict):
            raise c.fail("decoder", f"expected an object, got {text!r}")
    if text is None and c.model_type in FLAT_TEXT:  # the top's keys but the other parts' and the wrapper's type
        text = {k: v for k, v in c.data.items() if k != "model_type" and not (k.endswith("_config") and isinstance(v, dict))}
    from .config import class_defaults_of

    # none given: the wrapper's config class builds its default text config (its own sizes where it declares them:
    # Voxtral's 3B, not LlamaConfig's 7B), and some lay those under a text_config the file states (text_config_merged)
    wrapper = class_defaults_of(c.model_type) or {}
    if text is None or wrapper.get("text_config_merged"):
        text = {**wrapper.get("text_config", {}), **(text or {})}
    data = {**text, "model_type": text.get("model_type") or TEXT_TYPES.get(c.model_type)}
    if data["model_type"] is None:
        raise c.fail("text_config", "model_type: required key is missing")
    towers = tuple(k for k, v in c.data.items() if k.endswith("_config") and k != "text_config" and isinstance(v, dict))
    match = re.search(r'"text_config"\s*:', c.text)
    return Config(data, c.text, c.source, start=match.start() if match else 0, wrapper=c.model_type, towers=towers, outer=c)


# Multimodal configuration classes whose __post_init__ gives the whole model the text config's tie_word_embeddings
# where its own is false (transformers 5.23: "BC: pre-v5 saves placed `tie_word_embeddings` inside text_config"), and
# those that take the text config's whatever their own says (VibeVoiceConfig)
TIE_FROM_TEXT = frozenset(
    {
        "fast_vlm",
        "glm4v",
        "glm4v_moe",
        "glm_ocr",
        "hunyuan_vl",
        "llava",
        "llava_next_video",
        "llava_onevision",
        "minimax_m3_vl",
        "paddleocr_vl",
        "qwen2_5_vl",
        "qwen2_vl",
        "shieldgemma2",
        "video_llama_3",
    }
)
# (VisionEncoderDecoderModel's decoder is a causal LM of its own, built by AutoModelForCausalLM: its config ties its head,
# whatever the wrapper's tie_word_embeddings, which VisionEncoderDecoderConfig sets false)
TIE_OF_TEXT = frozenset({"vibevoice", "vision-encoder-decoder"})
# Wrappers whose head never shares the token table whatever their tie_word_embeddings says, as their language model's
# family reads it: Llama 3.2 Vision's table has vocab_size + 8 rows against lm_head's vocab_size, which transformers
# builds apart
NEVER_TIED = frozenset({"mllama"})
# Wrappers whose class builds no LM head (PI0ForConditionalGeneration: action_out_proj in its place): read as a head
# tied to the token table, which reads no row (parts/action_expert.py)
HEADLESS = frozenset({"pi0"})


def wrapper_tie(c: Config, text: dict) -> bool | None:
    """Whether the whole model's head shares the token table, as transformers ties it: by the wrapper's
    tie_word_embeddings (PreTrainedModel.get_expanded_tied_weights_keys reads the config of the class that holds the
    head), stated in the file or its class's declared default; None where the wrapper's class declares none and the
    file states none (a language model built as a causal LM of its own then ties its head by its text config)."""
    from .config import class_defaults_of

    def flag(data: dict, model_type) -> bool | None:
        if "tie_word_embeddings" in data:
            return data["tie_word_embeddings"]
        return ((class_defaults_of(model_type) or {}).get("defaults") or {}).get("tie_word_embeddings")

    if c.model_type in TIE_OF_TEXT:
        return None
    if c.model_type in NESTED_TEXT:  # the head is the inner wrapper's (Qwen2.5-Omni's thinker's lm_head)
        key, inner_type = NESTED_TEXT[c.model_type]
        inner = c.data.get(key) or {}
        return flag(inner, inner_type)
    if c.model_type in HEADLESS:
        return True
    tie = flag(c.data, c.model_type)
    if c.model_type in TIE_FROM_TEXT and not tie and flag(text, text.get("model_type")):
        return True
    return tie


def class_defaults(c: Config) -> Config:
    """``c`` with its configuration class's declared default for every key it leaves out, as transformers reads a
    sparse config.json; a key set under another name (the class's attribute_map: GPT-2's hidden_size for n_embd)
    counts as given. The defaults are transformers' own, recorded with its version by scripts/hf_defaults.py
    (class_defaults.json, checked current in CI); a model_type transformers does not define is read as it is."""
    from .config import class_defaults_of

    found = class_defaults_of(c.model_type)
    if found is None:
        return c
    given, defaults = c.data, found["defaults"]
    data = {**defaults, **given}
    order = {name: i for i, name in enumerate(given)}
    for alias, key in found.get("aliases", {}).items():
        stated = [name for name in (alias, key) if given.get(name) is not None]
        if stated:
            # transformers sets the class's fields first and every other key after (through attribute_map): a name
            # that is not a field wins over one that is (Qwen3-MoE's num_local_experts over num_experts); of two of
            # a kind, the later in the file
            data[alias] = data[key] = given[max(stated, key=lambda name: (name not in defaults, order[name]))]
        # neither stated: the field keeps its default, and the other name stays unstated (a null stated under it
        # would override what the class derives, as Nemotron-H's layers_block_type from its pattern)
    return Config(data, c.text, c.source, start=c.start, wrapper=c.wrapper, towers=c.towers, outer=c.outer)


def is_hf_config(ref: str | Path) -> bool:
    """Whether ``ref`` names a Hugging Face config: a folder with a config.json, or a .json with model_type."""
    path = Path(ref)
    if path.is_dir():
        return (path / "config.json").is_file()
    if path.suffix != ".json" or not path.is_file():
        return False
    try:
        data = parse_json(read_text(path), str(path))
    except InputError:
        return False
    return isinstance(data, dict) and "model_type" in data


def family_of(c: Config) -> Family:
    """The family that reads ``c``."""
    families = registered()
    supported = ", ".join(sorted(families))
    if c.model_type is None:
        raise InputError(f"{c.source}: model_type: required key is missing (supported: {supported})")
    found = families.get(c.model_type)
    if found is None:
        import difflib

        near = difflib.get_close_matches(str(c.model_type), list(families), n=3, cutoff=0.5)
        hint = f"nearest: {', '.join(near)} (read it as one with --as); " if near else ""
        raise c.fail("model_type", f"unsupported model_type {c.model_type!r}; {hint}supported: {supported}")
    return found


def spec_data(c: Config) -> dict:
    """The spec's fields, as a YAML spec states them, for a config of a supported model_type."""
    return read(c)[0]


def read(c: Config) -> tuple[dict, tuple[str, ...]]:
    """The spec's fields for a config of a supported model_type, and what the config leaves unstated that active
    parameters and FLOPs need (``Config.unstated``; ``Model.needs``), each a line."""
    from .config import _UNSTATED

    found: list[str] = []
    token = _UNSTATED.set(found)
    try:
        data = _prune(family_of(c).read(c))
        if c.outer is not None and c.wrapper not in NEVER_TIED:  # the whole model's head, tied as its wrapper ties it
            tie = wrapper_tie(c.outer, c.data)
            data = data if tie is None else {**data, "tie_embeddings": tie}
        reader = _whole(c)
        if reader is not None:  # the towers and projector beside the language model
            data = {**data, **_prune(reader(c.outer))}
    finally:
        _UNSTATED.reset(token)
    return data, tuple(found)


def text_only(c: Config) -> Config:
    """``c`` without the wrapper: the language model alone, as its text-only causal-LM class builds it (its head tied
    by its own text_config)."""
    if c.outer is None:
        return c
    return Config(c.data, c.text, c.source, start=c.start, wrapper=c.wrapper, towers=c.towers)


def _nested_keys(value: dict) -> set[str]:
    """Every key of a part's spec data, at any depth."""
    return {k for k, v in value.items() for k in ({k} | (_nested_keys(v) if isinstance(v, dict) else set()))}


def _whole(c: Config):
    """The reader of a wrapper's towers, where the whole model is read."""
    if c.outer is None:
        return None
    from .towers import wrappers

    return wrappers().get(c.wrapper)


def to_spec(c: Config) -> Model:
    """The resolved model a config describes; a config that gives an impossible shape names the field."""
    from pydantic import ValidationError

    from ...model import from_data
    from ...model.schema import problem

    data, needs = read(c)
    try:
        model = from_data(data)
    except ValidationError as exc:
        found = problem(exc)
        path = ".".join(str(p) for p in found.loc)
        raise SpecError(
            f"{c.source}: the {c.model_type} config gives an invalid spec: {path}: {found.message}", file=str(c.source), field=path
        ) from None
    model = replace(model, model_type=c.model_type)
    if needs:
        model = replace(model, needs=needs)
    if c.wrapper and _whole(c) is None:
        parts = ", ".join(c.towers) if c.towers else "no other part"
        model = replace(
            model, notes=model.notes + (f"the language model of a {c.wrapper} config (its text_config); not counted: {parts}",)
        )
    elif c.wrapper:  # read whole, but for a tower its reader does not read yet (Gemma 4's audio_config)
        # a tower read by a part of its own is named after it (Phi-4-multimodal's phi4_audio, Inkling's audio_codes)
        # and one read inside a part is named by its key there (a projector's qformer: BLIP-2's, Granite 4 Vision's)
        keys = set(data) | {k for part in data.values() if isinstance(part, dict) for k in _nested_keys(part)}
        read_parts = {piece for key in keys for piece in key.split("_")} | keys
        read_parts |= set(getattr(_whole(c), "reads", ()))  # the sub-configs a reader names as read (Molmo 2's adapter_config)
        unread = [k for k in c.towers if k.removesuffix("_config") not in read_parts and k not in read_parts]
        if unread:
            note = f"the language model and the towers read of a {c.wrapper} config; not counted: {', '.join(unread)}"
            model = replace(model, notes=model.notes + (note,))
    return model


def to_yaml(c: Config) -> str:
    """The spec as YAML with a header naming its source; validated first, so it always loads back."""
    import yaml

    to_spec(c)
    data, needs = read(c)
    if needs:  # a spec states every block whole: the stand-in would be taken for the value
        raise InputError(f"{needs[0]}; a spec imported from it would state a stand-in")
    title = " ".join(family_of(c).title.split())  # a docstring's title may run over lines: one comment line
    head = (
        f"# ffncalc spec imported from {c.source} (model_type {c.model_type}, {title}).\n"
        "# Count it with: ffncalc count THIS_FILE.yaml\n"
    )
    return head + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def load(ref: str | Path, as_family: str | None = None, *, text: bool = False) -> tuple[str, Model]:
    """A config.json (or its folder) -> (label, model); the label is the folder's name or the file's stem. A
    multimodal config is the whole model, towers and all, where its wrapper is read whole; ``text``: its language
    model alone."""
    path = config_path(ref)
    c = read_config(path, as_family)
    c = text_only(c) if text else c
    label = path.parent.name if path.name == "config.json" and path.parent.name else path.stem
    return label, to_spec(c)


def _prune(data):
    """Drop None values so the spec's own defaults apply and the printed YAML stays short."""
    if isinstance(data, dict):
        return {k: _prune(v) for k, v in data.items() if v is not None}
    if isinstance(data, list):
        return [_prune(v) for v in data]
    return data
