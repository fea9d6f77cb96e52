"""Audio-language wrappers read whole: each composes its text_config's language model with an audio tower built as
Whisper's encoder (whisper.py) and its projector, as transformers 5.23's classes build them."""

from __future__ import annotations

from ..config import Config
from . import sub_config, wrapper
from .whisper import qwen3_asr_encoder, sanm_encoder, voxtral_realtime_encoder, whisper_encoder

# the sub-configs Granite Speech's readers take (a sparse encoder_config or projector_config reads their defaults)
GRANITE_TYPES = ("granite_speech_encoder", "granite_speech_plus_encoder", "blip_2_qformer")
# Voxtral Realtime's and Fun-ASR-Nano's audio_config types (a sparse audio_config reads their defaults)
SPEECH_TYPES = ("voxtral_realtime_encoder", "fun_asr_nano_encoder")


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


@wrapper("qwen2_5_omni_thinker")
def qwen2_5_omni_thinker(c: Config) -> dict:
    """Qwen2_5OmniThinkerForConditionalGeneration (Xu et al. 2025, Qwen2.5-Omni's thinker): Qwen2_5OmniAudioEncoder
    (Whisper's form, sinusoidal positions, attention within chunks of n_window positions, two positions averaged,
    ln_post and proj, Linear(audio width, output_dim) with a bias, and audio_bos_eos_token, two rows of output_dim)
    and Qwen2.5-VL's vision tower and merger (towers/qwen.py, its q, k and v apart), beside Qwen2's language model."""
    from .qwen import qwen_vision

    a = sub_config(c, "audio_config", {None: "qwen2_5_omni_audio_encoder"})  # type: ignore[dict-item]
    text = sub_config(c, "text_config").int("hidden_size")
    if a.int("output_dim") != text:  # its proj writes the language model's tokens
        raise c.fail("audio_config", f"output_dim {a.int('output_dim')} is not the text width {text}")
    encoder = whisper_encoder(a, {"width": 1, "bias": True}, pool=2)
    encoder["projector"]["width"] = encoder["layers"]["d_model"]
    vision = sub_config(c, "vision_config", {None: "qwen2_5_omni_vision_encoder"})  # type: ignore[dict-item]
    return {"audio": encoder, "vision": qwen_vision(vision)}


@wrapper("qwen3_omni_moe_thinker")
def qwen3_omni_moe_thinker(c: Config) -> dict:
    """Qwen3OmniMoeThinkerForConditionalGeneration (Qwen3-Omni's thinker): Qwen3OmniMoeAudioEncoder (its chunks of 2 ×
    n_window frames through three strided 2-D convolutions of downsample_hidden_size channels and conv_out, sinusoidal
    positions, Whisper's layers (k_proj too with a bias) attending within windows of n_window_infer frames, ln_post,
    proj1 → GELU → proj2 to output_dim, with biases; whisper.py) and Qwen3-VL's vision tower, merger and deepstack
    mergers (towers/qwen.py), beside Qwen3-MoE's language model."""
    from .qwen import qwen_vision

    a = sub_config(c, "audio_config", {None: "qwen3_omni_moe_audio_encoder"})  # type: ignore[dict-item]
    d = a.int("d_model")
    # proj2 writes output_dim features, as transformers builds it (Qwen3OmniMoeThinkerConfig's defaults differ from its
    # text width: no audio runs into its language model there, as no image does from its tower's out_hidden_size)
    projector = {"width": d, "hidden": d, "bias": True, "activation": a.activation("activation_function", "gelu")}
    projector["out"] = a.int("output_dim")
    encoder = whisper_encoder(a, projector)
    encoder["layers"]["attention"]["k_bias"] = True  # Qwen3OmniMoeAudioAttention: every projection with a bias
    vision = sub_config(c, "vision_config", {None: "qwen3_omni_moe_vision_encoder"})  # type: ignore[dict-item]
    return {"audio": encoder, "vision": qwen_vision(vision)}


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


@wrapper("granite_speech")
def granite_speech(c: Config) -> dict:
    """GraniteSpeechForConditionalGeneration (IBM 2025, Granite Speech 3.3): GraniteSpeechCTCEncoder, input_linear over
    its feature extractor's positions (two 80-bin log-mel frames stacked: input_dim features, 50 a second), num_layers
    GraniteSpeechConformerBlocks (blocks/conformer.py: ff1, Shaw's relative positions in blocks of context_size, the
    convolution module conv_expansion_factor × wide, ff2 the FFN slot, feedforward_mult × wide, SiLU), out and out_mid
    after the middle layer; GraniteSpeechEncoderProjector, window_size // downsample_rate learned queries through
    projector_config's Q-Former (Blip2QFormerModel) over each window_size positions, then Linear(Q-Former width, text
    width) with a bias. A window here is 12 s: 600 positions, whole blocks of context_size (200) and window_size (15)."""
    plus = c.model_type == "granite_speech_plus"
    a = sub_config(c, "encoder_config", {None: "granite_speech_plus_encoder" if plus else "granite_speech_encoder"})  # type: ignore[dict-item]
    q = sub_config(c, "projector_config", {None: "blip_2_qformer"})  # type: ignore[dict-item]
    d, heads = a.int("hidden_dim"), a.int("num_heads")
    window, rate = c.int("window_size", 15), c.int("downsample_rate", 5)
    if window % rate:
        raise c.fail("window_size", f"{window} positions are not whole queries of downsample_rate {rate}")
    head_dim = a.int("dim_head") if a.has("dim_head") and a.data.get("dim_head") is not None else d // heads
    d_ff = d * a.int("feedforward_mult")
    h = q.int("hidden_size")
    qformer = {
        "queries": window // rate,
        "depth": q.int("num_hidden_layers"),
        "width": h,
        "heads": q.int("num_attention_heads"),
        "d_ff": q.int("intermediate_size"),
        "context": q.int("encoder_hidden_size"),
        "cross_every": q.int("cross_attention_frequency", 2),
        "activation": q.activation("hidden_act", "gelu"),
    }
    positions = 600  # 12 s: whole blocks of 200 and of 15 (lcm)
    return {
        "audio": {
            "layers": {
                "d_model": d,
                "n_layers": a.int("num_layers"),
                "attention": {
                    "kind": "conformer",
                    "n_heads": heads,
                    "head_dim": head_dim,
                    "qkv_bias": False,
                    "o_bias": True,
                    "d_ff": d_ff,
                    "activation": "silu",
                    "kernel": a.int("conv_kernel_size"),
                    "conv_bias": True,
                    "ff_bias": True,
                    "depthwise_bias": False,
                    "shaw": a.int("max_pos_emb"),
                    "conv_expand": a.int("conv_expansion_factor"),
                },
                "ffn": {"kind": "dense", "d_ff": d_ff, "bias": True, "activation": "silu"},
                "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
            },
            "mel_bins": a.int("input_dim"),
            "source_positions": positions,
            "window_seconds": positions // 50,
            "position_table": False,
            "input_linear": True,
            "final_norm": False,
            "ctc": a.int("output_dim"),
            "chunk": a.int("context_size"),
            "block": window,
            "projector": {"width": h, "bias": True, "qformer": qformer},
        }
    }


@wrapper("granite_speech_plus")
def granite_speech_plus(c: Config) -> dict:
    """GraniteSpeechPlusForConditionalGeneration (IBM, Granite Speech 4.1 Plus): Granite Speech's encoder, Q-Former and
    linear (granite_speech), the Q-Former reading the encoder's output beside the outputs of the layers
    cat_hidden_layers names (GraniteSpeechPlusCTCEncoder: their features side by side, encoder_hidden_size wide)."""
    return granite_speech(c)


@wrapper("voxtral_realtime")
def voxtral_realtime(c: Config) -> dict:
    """VoxtralRealtimeForConditionalGeneration (Mistral AI 2026, Voxtral Mini 4B Realtime): VoxtralRealtimeEncoder
    (whisper.py's voxtral_realtime_encoder: causal convolutions, rotary positions, RMSNorms, SwiGLU MLPs, a causal
    sliding window), downsample_factor positions concatenated into one token (get_audio_features' reshape), and
    VoxtralRealtimeMultiModalProjector, Linear(downsample_factor × audio width, text width) → projector_hidden_act →
    Linear(text width, text width), no biases; each token's embedding is added to the text token's at its position
    (one a downsample_factor × 2 frames: 80 ms), beside the text decoder (families/voxtral_realtime.py)."""
    a = sub_config(c, "audio_config", {None: "voxtral_realtime_encoder"})  # type: ignore[dict-item]
    text = sub_config(c, "text_config").int("hidden_size")
    group = c.int("downsample_factor", 4)
    projector = {"width": group * a.int("hidden_size"), "hidden": text, "bias": False}
    encoder = voxtral_realtime_encoder(a, {**projector, "activation": c.activation("projector_hidden_act", "gelu")})
    return {"audio": {**encoder, "group": group, "added": True}}  # VoxtralRealtimeModel.forward: inputs_embeds += audio_embeds


@wrapper("fun_asr_nano")
def fun_asr_nano(c: Config) -> dict:
    """FunAsrNanoForConditionalGeneration (Tongyi Fun team 2025, Fun-ASR-Nano): FunAsrNanoEncoder (SenseVoice's SAN-M
    encoder: whisper.py's sanm_encoder, parts/sanm.py) and FunAsrNanoMultiModalProjector, Linear(audio width,
    projector_hidden_size) → projector_hidden_act → Linear(projector_hidden_size, adaptor width), with biases, then the
    adaptor's transformer layers, beside Qwen3's language model; one token a position."""
    a = sub_config(c, "audio_config", {None: "fun_asr_nano_encoder"})  # type: ignore[dict-item]
    ad = sub_config(c, "adaptor_config")  # FunAsrNanoAdaptorConfig's defaults (no model_type of its own): stated here
    text = sub_config(c, "text_config").int("hidden_size")
    if ad.int("hidden_size", 1024) != text:  # the adaptor writes the language model's tokens
        raise c.fail("adaptor_config", f"hidden_size {ad.int('hidden_size', 1024)} is not the text width {text}")
    act = ad.activation("projector_hidden_act", "relu")
    hidden = ad.int("projector_hidden_size", 2048)
    projector = {"width": a.int("hidden_size"), "hidden": hidden, "bias": True, "activation": act}
    return {"audio": sanm_encoder(c, a, projector)}


@wrapper("nemo_speechlm")
def nemo_speechlm(c: Config) -> dict:
    """Nemotron3_5TranscribeForConditionalGeneration (NVIDIA 2026, Nemotron 3.5 Transcribe): its speech recognition
    encoder and Nemotron 3 Diarization's model side by side on the same frames, the speakers' sinusoid embedding added
    after asr_norm (towers/transcribe.py, parts/transcribe.py), and multi_modal_projector, Linear(audio width, text
    width) with a bias, beside Nemotron-H's language model; its word-timestamp model and head held beside them."""
    from .transcribe import transcribe_audio

    audio = transcribe_audio(c, {"width": 1, "bias": True})
    audio["projector"]["width"] = audio["layers"]["d_model"]
    return {"audio": audio}
