"""Speech models' audio FLOPs as transformers' whole classes run them, where their path differs from
hfwhole.audio_flops's: Fun-ASR-Nano's stacked positions through its SAN-M tower and projector, Nemotron 3.5
Transcribe's two encoders on one chunk (and the configuration that builds it small)."""

from __future__ import annotations

# Nemotron 3.5 Transcribe's two encoders, built small (its diarization model's speaker cache reads the logits' values):
# its audio_config, the encoders' other keys at their classes' defaults
ENCODER_SMALL = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "num_hidden_layers": 2,
}
TRANSCRIBE_SMALL = {
    "asr_config": ENCODER_SMALL,
    "diarization_config": {
        "audio_config": ENCODER_SMALL,
        "head_config": {"audio_hidden_size": 64},
        # the keys whose values Nemotron3_5TranscribeAudioConfig's defaults give other than Nemotron3DiarizationConfig's
        "chunk_length": 500,
        "chunk_left_context": 50,
        "chunk_right_context": 50,
        "streaming_config": {"speaker_cache_length": 188},
    },
}

# How the audio FLOPs of a type whose path differs from AUDIO_METHOD's are measured, recorded with them.
AUDIO_METHODS = {
    "nemo_speechlm": (
        "torch.utils.flop_counter.FlopCounterMode over model.get_audio_features(input_features, input_features_mask) of "
        "the whole class, its audio tower and multi-modal projector given memory on the CPU (its diarization model's "
        "speaker cache reads the logits' values), eager attention, input_features of shape (1, positions × "
        "subsampling_factor, num_mel_bins), every frame real: one chunk of the diarization config's chunk_length or "
        "fewer positions, no context; 2 FLOPs per multiply-add of every matmul and convolution, summed per module"
    ),
    "fun_asr_nano": (
        "torch.utils.flop_counter.FlopCounterMode over the whole class's audio tower and multi-modal projector as "
        "get_audio_features runs them (its pooler_output picks the real positions by value: no product) on the meta "
        "device, eager attention, input_features of shape (1, positions, num_mel_bins × num_stacked_frames), every "
        "position real (its bidirectional masks none): 2 FLOPs per multiply-add of every matmul and convolution, summed "
        "per module"
    ),
}


def transcribe_flops(data: dict, positions: int) -> dict:
    """Nemotron 3.5 Transcribe: ``positions`` × subsampling_factor log-mel frames, every one real, through
    get_audio_features (the two encoders, the speakers' embedding, the projector), the audio tower and projector given
    memory on the CPU (its diarization model's speaker cache reads the logits' values)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from .hfwhole import instantiate_whole

    net = instantiate_whole(data)
    for name in ("audio_tower", "multi_modal_projector"):
        setattr(net.model, name, getattr(net.model, name).to_empty(device="cpu"))
    net.requires_grad_(False)
    a = net.config.audio_config
    frames = positions * a.asr_config.subsampling_factor
    torch.manual_seed(0)
    features = torch.randn(1, frames, a.asr_config.num_mel_bins)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        net.model.get_audio_features(features, torch.ones(1, frames, dtype=torch.long))
    counts = counter.get_flop_counts()
    modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}
    return {"positions": positions, "total": sum(counts["Global"].values()), "modules": modules}


def fun_asr_nano_flops(data: dict, positions: int) -> dict:
    """Fun-ASR-Nano: ``positions`` of its feature extractor's stacked frames, (1, positions, num_mel_bins ×
    num_stacked_frames), every one real, through the audio tower and the multi-modal projector as get_audio_features
    runs them (its pooler_output, the real positions picked by the mask's values, is no product) on the meta device,
    their masks none (every position real: the bidirectional mask it builds asks by value whether all are)."""
    from unittest import mock

    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from .hfwhole import instantiate_whole

    net = instantiate_whole(data)
    net.requires_grad_(False)
    a = net.config.audio_config
    features = torch.ones(1, positions, a.num_mel_bins * a.num_stacked_frames, device="meta")
    mask = torch.ones(1, positions, dtype=torch.long, device="meta")
    module = type(net.model.audio_tower).__module__
    unmasked = mock.patch(f"{module}.create_bidirectional_mask", lambda **_: None)
    with torch.no_grad(), FlopCounterMode(display=False) as counter, unmasked:
        out = net.model.audio_tower(input_features=features, input_features_mask=mask).last_hidden_state
        net.model.multi_modal_projector(out, mask)
    counts = counter.get_flop_counts()
    modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}
    return {"positions": positions, "total": sum(counts["Global"].values()), "modules": modules}


# VibeVoice-ASR's audio: 24 kHz samples through its two tokenizer encoders and its projector (no window of its own)
VIBEVOICE_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over model.get_audio_features(input_values, sample=False) of the whole "
    "class on the meta device (the two tokenizer encoders over every chunk of acoustic_tokenizer_chunk_size samples, "
    "their padding caches carried between chunks, and the multi-modal projector), input_values of shape (1, 1, tokens × "
    "hop) at 24 kHz, no padding mask: 2 FLOPs per multiply-add of every convolution and matmul, summed per module"
)


def vibevoice_asr_flops(data: dict, tokens: int) -> dict:
    """VibeVoice-ASR: ``tokens`` × hop samples of audio (hop: ∏ downsampling_ratios, 3,200 at 24 kHz) through
    get_audio_features without its noise (sample=False), every sample real, on the meta device."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from .hfwhole import instantiate_whole

    net = instantiate_whole(data)
    net.requires_grad_(False)
    samples = tokens * net.config.acoustic_tokenizer_encoder_config.hop_length
    values = torch.zeros(1, 1, samples, device="meta")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        net.model.get_audio_features(values, sample=False)
    counts = counter.get_flop_counts()
    modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}
    return {"tokens": tokens, "samples": samples, "total": sum(counts["Global"].values()), "modules": modules}


VIBEVOICE_SPEECH_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over the whole class's audio path as get_audio_features runs it "
    "(model.audio_tower.encode(input_values, sample=False), the latents' two factors, model.multi_modal_projector; its "
    "padding mask picks the real tokens by value: no product) on the meta device, input_values of shape (1, 1, tokens × "
    "hop) at 24 kHz: 2 FLOPs per multiply-add of every convolution and matmul, summed per module"
)
VIBEVOICE_DIFFUSION_METHOD = (
    "torch.utils.flop_counter.FlopCounterMode over model.diffusion_head(noisy latents (rows, latent_size), timesteps "
    "(rows,), condition (rows, hidden_size)) of the whole class on the meta device: one denoising step of ``rows`` rows "
    "(a generated latent's classifier-free guidance runs two a step); 2 FLOPs per multiply-add of every matmul"
)


def vibevoice_flops(data: dict, tokens: int) -> dict:
    """VibeVoice: ``tokens`` × hop samples of audio through its acoustic encoder (no noise) and multi_modal_projector,
    as get_audio_features runs them, on the meta device."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from .hfwhole import instantiate_whole

    net = instantiate_whole(data)
    net.requires_grad_(False)
    model = net.model
    samples = tokens * net.config.audio_config.hop_length
    values = torch.zeros(1, 1, samples, device="meta")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        latents = model.audio_tower.encode(values, sample=False).latents
        model.multi_modal_projector((latents + model.latent_bias_factor) * model.latent_scaling_factor)
    counts = counter.get_flop_counts()
    modules = {k: sum(v.values()) for k, v in counts.items() if k != "Global" and "." not in k}
    return {"tokens": tokens, "samples": samples, "total": sum(counts["Global"].values()), "modules": modules}


def vibevoice_diffusion_flops(data: dict, rows: int) -> dict:
    """VibeVoice's diffusion head, one denoising step over ``rows`` latents, on the meta device."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from .hfwhole import instantiate_whole

    net = instantiate_whole(data)
    net.requires_grad_(False)
    head, config = net.model.diffusion_head, net.config.diffusion_head_config
    noisy = torch.zeros(rows, config.latent_size, device="meta")
    condition = torch.zeros(rows, config.hidden_size, device="meta")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        head(noisy, torch.zeros(rows, device="meta"), condition=condition)
    return {"rows": rows, "total": sum(counter.get_flop_counts()["Global"].values())}
