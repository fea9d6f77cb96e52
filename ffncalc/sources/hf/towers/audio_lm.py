"""Audio-language wrappers read whole: each composes its text_config's language model with an audio tower built as
Whisper's encoder (whisper.py) and its projector, as transformers 5.23's classes build them."""

from __future__ import annotations

from ..config import Config
from . import sub_config, wrapper
from .whisper import qwen3_asr_encoder, whisper_encoder


@wrapper("qwen2_audio")
def qwen2_audio(c: Config) -> dict:
    """Qwen2AudioForConditionalGeneration (Chu et al. 2024): Qwen2AudioEncoder, its positions average-pooled by two
    (avg_pooler), and Qwen2AudioMultiModalProjector, one Linear(audio width, text width) with a bias."""
    a = sub_config(c, "audio_config")
    encoder = whisper_encoder(a, {"width": 1, "bias": True}, pool=2)
    encoder["projector"]["width"] = encoder["layers"]["d_model"]
    return {"audio": encoder}


@wrapper("voxtral")
def voxtral(c: Config) -> dict:
    """VoxtralForConditionalGeneration (Mistral AI 2025): VoxtralEncoder, four positions concatenated (its
    intermediate_size), and VoxtralMultiModalProjector, Linear(4 × audio width, text width) → projector_hidden_act →
    Linear(text width, text width), no biases."""
    a = sub_config(c, "audio_config")
    text = sub_config(c, "text_config").int("hidden_size")
    projector = {"width": 1, "hidden": text, "bias": False, "activation": c.activation("projector_hidden_act", "gelu")}
    encoder = whisper_encoder(a, projector, group=4)
    encoder["projector"]["width"] = 4 * encoder["layers"]["d_model"]
    return {"audio": encoder}


@wrapper("glmasr")
def glmasr(c: Config) -> dict:
    """GlmAsrForConditionalGeneration (Zhipu AI 2025, GLM-ASR): GlmAsrEncoder (Whisper's form with rotary positions, no
    table; whisper.py), its positions gathered intermediate_size / hidden_size at a time (4: the reshape of its
    get_audio_features), and GlmAsrMultiModalProjector, Linear(audio intermediate_size, 2 × text width) →
    projector_hidden_act → Linear(2 × text width, text width), with biases."""
    a = sub_config(c, "audio_config")
    text = sub_config(c, "text_config").int("hidden_size")
    width, d = a.int("intermediate_size"), a.int("hidden_size")
    if width % d:
        raise c.fail("audio_config", f"intermediate_size {width} is not whole positions of hidden_size {d}")
    projector = {"width": width, "hidden": 2 * text, "bias": True, "activation": c.activation("projector_hidden_act", "gelu")}
    return {"audio": whisper_encoder(a, projector, group=width // d)}


@wrapper("audioflamingo3", "musicflamingo")
def audioflamingo3(c: Config) -> dict:
    """AudioFlamingo3ForConditionalGeneration and MusicFlamingoForConditionalGeneration (NVIDIA 2025): Audio Flamingo 3's
    and Music Flamingo's AudioFlamingo3Encoder (Whisper's encoder, its positions average-pooled by two before the final
    LayerNorm), and the multi-modal projector, Linear(audio width, text width) → projector_hidden_act → Linear(text
    width, text width), biases as projector_bias says; Music Flamingo's rotary time embedding between them is a
    rotation of the tower's output, no weights and no multiply-adds of a matmul. MusicFlamingoConfig reads an
    audio_config of model_type "musicflamingo_encoder" as AudioFlamingo3Encoder's."""
    a = sub_config(c, "audio_config", {"musicflamingo_encoder": "audioflamingo3_encoder"} if c.model_type == "musicflamingo" else None)
    text = sub_config(c, "text_config").int("hidden_size")
    act = c.activation("projector_hidden_act", "gelu")
    projector = {"width": 1, "hidden": text, "bias": c.bool("projector_bias", True), "activation": act}
    encoder = whisper_encoder(a, projector, pool=2)
    encoder["projector"]["width"] = encoder["layers"]["d_model"]
    return {"audio": encoder}


@wrapper("moss_transcribe_diarize")
def moss_transcribe_diarize(c: Config) -> dict:
    """MossTranscribeDiarizeForConditionalGeneration (OpenMOSS 2026, MOSS-Transcribe-Diarize): its Whisper encoder
    (MossTranscribeDiarizeAudioModel, 80 log-mel bins by default), audio_merge_size positions concatenated into one
    token (get_audio_features' reshape), and MossTranscribeDiarizeMultiModalProjector: Linear(merge × audio width, text
    width) → projector_hidden_act → Linear(text width, text width), biases as projector_bias says, then a LayerNorm
    with a bias."""
    a = sub_config(c, "audio_config")
    text = sub_config(c, "text_config").int("hidden_size")
    merge = c.int("audio_merge_size", 4)
    act = c.activation("projector_hidden_act", "silu")
    projector = {"width": 1, "hidden": text, "bias": c.bool("projector_bias", True), "activation": act, "post_norm": "layernorm"}
    encoder = whisper_encoder(a, projector, group=merge)
    encoder["projector"]["width"] = merge * encoder["layers"]["d_model"]
    return {"audio": encoder}


@wrapper("qwen3_asr")
def qwen3_asr(c: Config) -> dict:
    """Qwen3ASRForConditionalGeneration (Qwen 2026, Qwen3-ASR): Qwen3ASREncoder (Qwen3-Omni's audio encoder:
    whisper.py's qwen3_asr_encoder) and Qwen3ASRMultiModalProjector, Linear(d_model, d_model) → the audio
    activation_function → Linear(d_model, output_dim), with biases, beside Qwen3; one token a position (13 a second)."""
    a = sub_config(c, "audio_config")
    d = a.int("d_model")
    act = a.activation("activation_function", "gelu")
    projector = {"width": d, "hidden": d, "bias": True, "activation": act, "out": a.int("output_dim")}
    return {"audio": qwen3_asr_encoder(a, projector)}
