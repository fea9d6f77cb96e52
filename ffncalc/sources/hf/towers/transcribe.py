"""Nemotron 3.5 Transcribe's audio model as a config describes it (the ``audio`` part's transcribe form,
parts/transcribe.py), and its whole class's parameter names by component."""

from __future__ import annotations

import re

from ..config import Config
from . import sub_config

# a layer's modules (Nemotron3_5TranscribeAsrAudioLayer, Nemotron3DiarizationAudioLayer) -> their components
LAYER_MODULES = (
    (r"self_attn\.q_proj$", "attn.q"),
    (r"self_attn\.k_proj$", "attn.k"),
    (r"self_attn\.v_proj$", "attn.v"),
    (r"self_attn\.o_proj$", "attn.o"),
    (r"self_attn\.q_norm$", "attn.q_norm"),
    (r"self_attn\.k_norm$", "attn.k_norm"),
    (r"mlp\.fc1$", "ffn.up"),
    (r"mlp\.fc2$", "ffn.down"),
    (r"layer_norm[12]$", "norms"),
)
# an encoder's own modules (the recognition encoder's, the diarization model's audio tower, the word-timestamp model's)
ENCODER_MODULES = (
    (r"^embedder\.projection$", "input_linear"),
    (r"^input_layer_norm$", "input_norm"),
    (r"^layer_norm$", "final_norm"),
    (r"^upsampler$", "upsampler"),
)
# where each of the whole class's modules sits: (pattern, the component prefix, its modules beyond an encoder's)
PLACES = (
    (r"(?:^|\.)audio_tower\.asr_encoder\.", "audio.", ()),
    (r"(?:^|\.)audio_tower\.diarization_model\.model\.audio_tower\.", "audio.diarization.", ()),
    (
        r"(?:^|\.)audio_tower\.diarization_model\.",
        "audio.diarization.",
        ((r"^silence_embeds$", "silence"), (r"^model\.proj$", "proj"), (r"^model\.upsampler\.conv$", "upsampler")),
    ),
    (r"(?:^|\.)audio_tower\.", "audio.", ((r"^asr_norm$", "asr_norm"), (r"^speaker_norm$", "speaker_norm"))),
    (r"(?:^|\.)word_timestamp_encoder\.", "audio.timestamps.", ()),
    (r"(?:^|\.)word_timestamp_head\.", "audio.timestamps.head", ((r"^$", ""),)),
    (r"(?:^|\.)multi_modal_projector\.", "audio.projector.linear", ((r"^$", ""),)),
)


def transcribe_component(path: str) -> str | None:
    """A Nemotron 3.5 Transcribe whole model's parameter outside its language model -> its component, or None."""
    if path.startswith("language_model.") or ".language_model." in path or path.startswith("lm_head"):
        return None
    for pattern, prefix, own in PLACES:
        found = re.search(pattern, path)
        if not found:
            continue
        rest = path[found.end() :]
        module = rest.rsplit(".", 1)[0] if "." in rest else ("" if rest in ("weight", "bias") else rest)
        if module.startswith("classifier."):
            return prefix + module
        layer = re.match(r"layers\.\d+\.(.*)$", module)
        table = LAYER_MODULES if layer else (*own, *ENCODER_MODULES)
        inner = layer.group(1) if layer else module
        name = next((n for pat, n in table if re.search(pat, inner)), None)
        if name is not None:
            return prefix + name
        return f"(unmatched) {prefix}{module}"
    return None


def transcribe_audio(c: Config, projector: dict) -> dict:
    """The ``audio`` part of Nemotron3_5TranscribeConfig's audio_config (asr_config, diarization_config) and
    word_timestamp_config, with ``projector``. Absent keys take their classes' defaults (stated here)."""
    a = sub_config(c, "audio_config")
    asr = _nested(a, "asr_config")
    diar = _nested(a, "diarization_config")
    diar_audio, head = _nested(diar, "audio_config"), _nested(diar, "head_config")
    stamps = sub_config(c, "word_timestamp_config")
    frames = asr.int("subsampling_factor", 8)
    # chunk_length: Nemotron3_5TranscribeAudioConfig's default diarization_config states 500; a diarization_config
    # stated without it takes Nemotron3DiarizationConfig's own, 340
    chunk = diar.int("chunk_length", 340 if a.data.get("diarization_config") else 500)
    transcribe = {
        "diarization": _layers(diar_audio, 512, 31, 8, 2048, qk_norm=False),
        "timestamps": _layers(stamps, 1280, 2, 16, 640, qk_norm=True),
        "frames": frames,
        "head": head.int("hidden_size", 192),
        "speakers": head.int("num_speakers", 8),
        "upsample": stamps.int("upsampling_factor", 2),
        "vocab": stamps.int("vocab_size", 23863),
    }
    return {
        "layers": _layers(asr, 1280, 32, 10, 5120, qk_norm=True),
        "mel_bins": asr.int("num_mel_bins", 128),
        "source_positions": chunk,
        "window_seconds": chunk * frames // 100,  # 100 frames a second
        "position_table": False,
        "transcribe": transcribe,
        "projector": projector,
    }


def _nested(c: Config, key: str) -> Config:
    data = c.data.get(key) or {}
    if not isinstance(data, dict):
        raise c.fail(key, f"expected an object, got {data!r}")
    return Config(data, c.text, c.source)


def _layers(c: Config, width: int, depth: int, heads: int, d_ff: int, *, qk_norm: bool) -> dict:
    """Pre-norm layers of LayerNorms: attention of heads × head_dim (o_proj alone with a bias; q_norm and k_norm
    LayerNorms over head_dim where ``qk_norm``), an MLP of fc1 and fc2 with biases (hidden_act)."""
    d, h = c.int("hidden_size", width), c.int("num_attention_heads", heads)
    attention = {"n_heads": h, "n_kv_heads": c.int("num_key_value_heads", h), "head_dim": c.int("head_dim", d // h)}
    attention |= {"qkv_bias": False, "o_bias": True} | ({"qk_norm": "head"} if qk_norm else {})
    return {
        "d_model": d,
        "n_layers": c.int("num_hidden_layers", depth),
        "attention": attention,
        "ffn": {
            "kind": "dense",
            "d_ff": c.int("intermediate_size", d_ff),
            "bias": True,
            "activation": c.activation("hidden_act", "gelu"),
        },
        "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
    }
