"""VibeVoice's wrappers read whole: VibeVoice-ASR's acoustic and semantic tokenizer encoders and their projector beside
Qwen2's language model (parts/vibevoice_audio.py), as transformers 5.23's classes build them."""

from __future__ import annotations

from math import prod

from ..config import Config
from . import sub_config, wrapper

ENCODER = "vibevoice_acoustic_tokenizer_encoder"
# the tokenizer's, its encoder's and the diffusion head's sub-config types (a sparse one reads its class's defaults)
VIBEVOICE_TYPES = (ENCODER, "vibevoice_acoustic_tokenizer", "vibevoice_diffusion")
# the shapes both encoders must share (they read the same samples, their latents the same positions)
SHARED = ("channels", "num_filters", "kernel_size", "downsampling_ratios", "depths", "ffn_expansion", "hidden_act")


def _list(a: Config, key: str) -> tuple[int, ...]:
    value = a.data.get(key)
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, int) and v > 0 for v in value):
        raise a.fail(key, f"expected a list of positive integers, got {value!r}")
    return tuple(value)


def _encoders(c: Config, a: Config, semantic: int) -> dict:
    """The two tokenizer encoders' shapes both wrappers share: the acoustic tokenizer's (``a``), the semantic latent's
    width, the text width their connectors write."""
    return {
        "width": sub_config(c, "text_config").int("hidden_size"),
        "acoustic": a.int("hidden_size"),
        "semantic": semantic,
        "channels": a.int("channels"),
        "filters": a.int("num_filters"),
        "kernel": a.int("kernel_size"),
        "ratios": _list(a, "downsampling_ratios"),
        "depths": _list(a, "depths"),
        "expansion": a.int("ffn_expansion"),
        "activation": a.activation("hidden_act", "gelu"),
    }


@wrapper("vibevoice_asr")
def vibevoice_asr(c: Config) -> dict:
    """VibeVoiceAsrForConditionalGeneration (Microsoft 2025, VibeVoice-ASR): the acoustic and the semantic tokenizer
    encoders (VibeVoiceAcousticTokenizerEncoderModel: a causal Conv1d stem and downsamplers between stages of
    ConvNeXt-1d layers with layer scales, a head to hidden_size latents; the semantic one's 128 wide by the wrapper's
    default) over the same 24 kHz samples in chunks of acoustic_tokenizer_chunk_size, and VibeVoiceAsrMultiModalProjector
    (each encoder's linear_1 → RMSNorm → linear_2, with biases, added), a token per hop (∏ downsampling_ratios samples),
    beside Qwen2's language model."""
    a = sub_config(c, "acoustic_tokenizer_encoder_config", {None: ENCODER})  # type: ignore[dict-item]
    # VibeVoiceAsrConfig builds a missing semantic config at hidden_size 128 (its init_kwargs); a stated one without it,
    # at the encoder class's 64
    s = sub_config(c, "semantic_tokenizer_encoder_config", {None: ENCODER})  # type: ignore[dict-item]
    semantic = s.int("hidden_size") if "semantic_tokenizer_encoder_config" in c.data else 128
    for key in SHARED:
        if a.data.get(key) != s.data.get(key):
            raise c.fail(
                "semantic_tokenizer_encoder_config",
                f"{key} {s.data.get(key)!r} differs from the acoustic encoder's {a.data.get(key)!r} (their latents meet a token each)",
            )
    return {"vibevoice_audio": {**_encoders(c, a, semantic), "chunk": c.int("acoustic_tokenizer_chunk_size", 1440000)}}


@wrapper("vibevoice")
def vibevoice(c: Config) -> dict:
    """VibeVoiceForConditionalGeneration (Microsoft 2025, VibeVoice): the acoustic tokenizer (audio_config: its encoder,
    as VibeVoice-ASR's, and its decoder of transposed Conv1d upsamplers), the semantic tokenizer encoder
    (semantic_model_config, 128 wide by the wrapper's default) and their connectors, the diffusion head
    (diffusion_head_config at the text width and the acoustic latent width, as VibeVoiceConfig sets them) and two latent
    factors, beside Qwen2's language model; its forward runs the acoustic encoder and its projector alone, a token per
    hop of the prompt's audio."""
    a = sub_config(c, "audio_config", {None: "vibevoice_acoustic_tokenizer"})  # type: ignore[dict-item]
    s = sub_config(c, "semantic_model_config", {None: ENCODER})  # type: ignore[dict-item]
    h = sub_config(c, "diffusion_head_config", {None: "vibevoice_diffusion"})  # type: ignore[dict-item]
    semantic = s.int("hidden_size") if "semantic_model_config" in c.data else 128  # VibeVoiceConfig's init_kwargs
    for key in SHARED:
        if a.data.get(key) != s.data.get(key):
            theirs, ours = s.data.get(key), a.data.get(key)
            raise c.fail("semantic_model_config", f"{key} {theirs!r} differs from the acoustic tokenizer's {ours!r}")
    return {
        "vibevoice_audio": {
            **_encoders(c, a, semantic),
            "chunk": prod(_list(a, "downsampling_ratios")) * 450,  # no chunks of its own: one call a prompt's audio
            "speech": True,
            "decoder": True,
            "diffusion_layers": h.int("num_hidden_layers"),
            "diffusion_intermediate": h.int("intermediate_size"),
            "frequency": h.int("frequency_embedding_size"),
        }
    }


# VibeVoice-ASR's modules -> the vibevoice_audio part's components (parts/vibevoice_audio.py)
LAYER_MODULES = (
    (r"^mixer\.conv$", "mixer"),
    (r"^ffn\.linear1$", "ffn.linear1"),
    (r"^ffn\.linear2$", "ffn.linear2"),
    (r"^(norm|ffn_norm)$", "norms"),
    (r"^(gamma|ffn_gamma)$", "gammas"),
)


def vibevoice_component(path: str, tower: str = "") -> str | None:
    """A VibeVoice or VibeVoice-ASR parameter in its tokenizers, connectors or diffusion head -> its component, or
    None; ``tower`` "vibevoice_audio" (tower_of) where VibeVoice's multi_modal_projector, named as Audio Flamingo's, is
    its acoustic connector."""
    import re

    if re.search(r"(?:^|\.)latent_(scaling|bias)_factor$", path):  # VibeVoice's
        return "audio.latent_factors"
    speech = re.search(r"(?:^|\.)(multi_modal_projector|semantic_connector)\.(linear_1|act|linear_2)\.(weight|bias)$", path)
    if speech and (speech.group(1) == "semantic_connector" or tower == "vibevoice_audio"):  # VibeVoice's connectors
        side = "acoustic" if speech.group(1) == "multi_modal_projector" else "semantic"
        return f"audio.projector.{side}_{'norm' if speech.group(2) == 'act' else speech.group(2)}"
    head = re.search(r"(?:^|\.)diffusion_head\.", path)
    if head:
        module = path[head.end() :].rsplit(".", 1)[0]
        return "audio.diffusion." + re.sub(r"^layers\.\d+\.", "blocks.", module)
    found = re.search(r"(?:^|\.)(acoustic|semantic)_tokenizer_encoder\.|(?:^|\.)audio_tower\.(encoder|decoder)\.", path)
    if not found:
        hit = re.search(r"(?:^|\.)multi_modal_projector\.((acoustic|semantic)_(linear_1|linear_2|norm))\.(weight|bias)$", path)
        return f"audio.projector.{hit.group(1)}" if hit else None
    enc = found.group(1) or {"encoder": "acoustic", "decoder": "decoder"}[found.group(2)]
    rest = path[found.end() :]
    module = rest.rsplit(".", 1)[0] if rest.endswith((".weight", ".bias")) else rest
    if module in ("stem.conv.conv",):
        return f"audio.{enc}.stem"
    if module == "head.conv":
        return f"audio.{enc}.head"
    down = re.fullmatch(r"conv_layers\.(\d+)\.conv\.conv", module)
    if down:
        return f"audio.{enc}.down{down.group(1)}"
    up = re.fullmatch(r"conv_layers\.(\d+)\.convtr\.convtr", module)  # VibeVoice's decoder
    if up:
        return f"audio.{enc}.up{up.group(1)}"
    layer = re.fullmatch(r"(?:stem|conv_layers\.(\d+))\.stage\.\d+\.(.+)", module)
    if layer:
        stage = 0 if layer.group(1) is None else int(layer.group(1)) + 1
        name = next((n for pat, n in LAYER_MODULES if re.search(pat, layer.group(2))), None)
        if name:
            return f"audio.{enc}.stage{stage}.{name}"
    return f"(unmatched) audio.{enc}.{module}"
