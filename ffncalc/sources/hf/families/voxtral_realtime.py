"""Voxtral Realtime's text decoder (Mistral AI 2026, Voxtral Mini 4B Realtime; transformers 5.23's
VoxtralRealtimeTextModel): Mistral's layers whose FFN input is scaled by a time-conditioned adaptive norm
(parts/ada_norm.py). Its configuration class has no causal-LM class of its own: the whole speech-to-text class
(VoxtralRealtimeForConditionalGeneration, towers/audio_lm.py) proves it."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated, rms, window


@family("voxtral_realtime_text")
def voxtral_realtime_text(c: Config) -> dict:
    """VoxtralRealtimeTextConfig / VoxtralRealtimeTextDecoderLayer: Mistral's shapes (no biases, head_dim stated, 8 KV
    heads and a sliding window of 4,096 by default; VoxtralRealtimeConfig's text_config states 8,192), and
    VoxtralRealtimeTextAdaRmsNorm in every layer: Linear(hidden, 32) → GELU → Linear(32, hidden), no biases, scaling
    the post-attention norm's output by 1 + its output; its head tied (tie_word_embeddings defaults to true)."""
    return {
        **common(c, tie=True, context_default=131072),
        "attention": {**attention(c, kv_heads=8), "window": window(c, 4096)},
        "ffn": gated(c),
        "norm": rms(),
        "ada_norm": {"rank": 32},
    }
