"""Qwen2.5-Omni read whole (Qwen2_5OmniForConditionalGeneration): its thinker (the language model, vision and audio
towers, read as qwen2_5_omni_thinker: audio_lm.py), its talker (parts/talker.py) and its token2wav (parts/token2wav.py),
each from its own sub-config as transformers 5.23's configuration classes read them."""

from __future__ import annotations

import re

from ..config import Config
from . import sub_config, wrapper

# the whole class's modules of its talker and token2wav -> their components (parts/talker.py, parts/token2wav.py)
HELD_NAMES = (
    (re.compile(r"talker\.(thinker_to_talker_proj|codec_head)\."), "talker.{}"),
    (re.compile(r"talker\.model\.(embed_tokens|norm)\."), "talker.{}"),
    (re.compile(r"talker\.model\.layers\.\d+\.(self_attn|mlp)\."), "talker.layers.{}"),
    (re.compile(r"talker\.model\.layers\.\d+\.\w*layernorm\."), "talker.layers.norms"),
    (
        re.compile(
            r"token2wav\.code2wav_dit_model\.(time_embed|text_embed|input_embed\.proj|input_embed\.spk_encoder|transformer_blocks|norm_out|proj_out)\."
        ),
        "token2wav.dit.{}",
    ),
    (re.compile(r"token2wav\.code2wav_bigvgan_model\.(conv_pre|ups|resblocks|activation_post|conv_post)\."), "token2wav.bigvgan.{}"),
)


def held_component(path: str) -> str | None:
    """A whole Qwen2.5-Omni's parameter in its talker or token2wav -> its component (one either holds but named here
    by none: "(unmatched) …"), or None outside them."""
    if not path.startswith(("talker.", "token2wav.")):
        return None
    for pattern, name in HELD_NAMES:
        found = pattern.match(path)
        if found:
            return name.format(*found.groups())
    return f"(unmatched) {path}"


def _ints(c: Config, key: str, default: tuple[int, ...]) -> tuple[int, ...]:
    value = c.data.get(key, list(default))
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, int) and v > 0 for v in value):
        raise c.fail(key, f"expected a list of positive integers, got {value!r}")
    return tuple(value)


def talker(c: Config) -> dict:
    """Qwen2_5OmniTalkerConfig's keys (its class's defaults where absent): parts/talker.py's fields."""
    return {
        "width": c.int("hidden_size", 3584),
        "embedding": c.int("embedding_size", 3584),
        "layers": c.int("num_hidden_layers", 28),
        "heads": c.int("num_attention_heads", 28),
        "kv_heads": c.int("num_key_value_heads", 4),
        "head_dim": c.int("head_dim", 128),
        "intermediate": c.int("intermediate_size", 18944),
        "vocab": c.int("vocab_size", 8448),
    }


def token2wav(dit: Config, bigvgan: Config) -> dict:
    """Qwen2_5OmniDiTConfig's and Qwen2_5OmniBigVGANConfig's keys (their classes' defaults where absent):
    parts/token2wav.py's fields. ECAPA_TimeDelayNet refuses enc_channels, enc_kernel_sizes and enc_dilations of
    different lengths; BigVGAN pairs its upsample rates with their kernels and its resblock kernels with their
    dilations (zip: the shorter list's length)."""
    channels = _ints(dit, "enc_channels", (256, 256, 256, 256, 768))
    kernels = _ints(dit, "enc_kernel_sizes", (5, 3, 3, 3, 1))
    dilations = _ints(dit, "enc_dilations", (1, 2, 3, 4, 1))
    if not len(channels) == len(kernels) == len(dilations):
        raise dit.fail("enc_channels", "enc_channels, enc_kernel_sizes and enc_dilations must have the same length")
    rates = _ints(bigvgan, "upsample_rates", (5, 3, 2, 2, 2, 2))
    ups = _ints(bigvgan, "upsample_kernel_sizes", (11, 7, 4, 4, 4, 4))[: len(rates)]
    resblocks = _ints(bigvgan, "resblock_kernel_sizes", (3, 7, 11))
    dilation_sizes = bigvgan.data.get("resblock_dilation_sizes", [[1, 3, 5]] * 3)
    if not isinstance(dilation_sizes, list) or not all(isinstance(d, list) and len(d) == 3 for d in dilation_sizes):
        raise bigvgan.fail("resblock_dilation_sizes", f"expected lists of three dilations, got {dilation_sizes!r}")
    return {
        "width": dit.int("hidden_size", 1024),
        "layers": dit.int("num_hidden_layers", 22),
        "heads": dit.int("num_attention_heads", 16),
        "head_dim": dit.int("head_dim", 64),
        "ff_mult": dit.int("ff_mult", 2),
        "codec_width": dit.int("emb_dim", 512),
        "codecs": dit.int("num_embeds", 8193),
        "mel": dit.int("mel_dim", 80),
        "speaker": dit.int("enc_dim", 128),
        "speaker_embedding": dit.int("enc_emb_dim", 192),
        "channels": channels,
        "kernels": kernels,
        "scale": dit.int("enc_res2net_scale", 2),
        "squeeze": dit.int("enc_se_channels", 64),
        "attention_channels": dit.int("enc_attention_channels", 64),
        "upsample_channels": bigvgan.int("upsample_initial_channel", 1536),
        "upsample_kernels": ups,
        "resblock_kernels": resblocks[: len(dilation_sizes)],
    }


@wrapper("qwen2_5_omni")
def qwen2_5_omni(c: Config) -> dict:
    """Qwen2_5OmniForConditionalGeneration (Xu et al. 2025, Qwen2.5-Omni): the thinker
    (Qwen2_5OmniThinkerForConditionalGeneration: Qwen2's language model, Qwen2.5-VL's vision tower and Whisper's audio
    tower, audio_lm.py), the talker (Qwen2_5OmniTalkerForConditionalGeneration) and token2wav
    (Qwen2_5OmniToken2WavModel: its dit_config's DiT and bigvgan_config's BigVGAN), built whatever enable_audio_output
    says (it only decides whether generation runs them)."""
    from .audio_lm import qwen2_5_omni_thinker

    thinker = sub_config(c, "thinker_config", {None: "qwen2_5_omni_thinker"})  # type: ignore[dict-item]
    t = sub_config(c, "talker_config", {None: "qwen2_5_omni_talker"})  # type: ignore[dict-item]
    wav = sub_config(c, "token2wav_config", {None: "qwen2_5_omni_token2wav"})  # type: ignore[dict-item]
    dit = sub_config(wav, "dit_config", {None: "qwen2_5_omni_dit"})  # type: ignore[dict-item]
    bigvgan = sub_config(wav, "bigvgan_config", {None: "qwen2_5_omni_bigvgan"})  # type: ignore[dict-item]
    return {**qwen2_5_omni_thinker(thinker), "talker": talker(t), "token2wav": token2wav(dit, bigvgan)}


qwen2_5_omni.reads = ("thinker_config",)  # type: ignore[attr-defined]  # its text, audio and vision configs read above
