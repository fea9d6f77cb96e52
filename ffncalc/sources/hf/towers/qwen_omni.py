"""Qwen2.5-Omni and Qwen3-Omni read whole (Qwen2_5OmniForConditionalGeneration, Qwen3OmniMoeForConditionalGeneration):
their thinker (the language model, vision and audio towers, read as qwen2_5_omni_thinker and qwen3_omni_moe_thinker:
audio_lm.py), Qwen2.5-Omni's talker (parts/talker.py) and token2wav (parts/token2wav.py), Qwen3-Omni's talker
(parts/moe_talker.py) and code2wav (parts/code2wav.py), each from its own sub-config as transformers 5.23's
configuration classes read them."""

from __future__ import annotations

import re

from ..config import Config
from . import sub_config, wrapper

# the whole class's modules of its talker and token2wav (code2wav) -> their components (parts/talker.py,
# parts/token2wav.py; parts/moe_talker.py, parts/code2wav.py)
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
    # Qwen3-Omni's talker (its layers named as Qwen2.5-Omni's above) and code2wav
    (re.compile(r"talker\.(text_projection|hidden_projection)\."), "talker.{}"),
    (re.compile(r"talker\.model\.(codec_embedding)\."), "talker.{}"),
    (re.compile(r"talker\.code_predictor\.model\.layers\.\d+\.(self_attn|mlp)\."), "talker.code_predictor.layers.{}"),
    (re.compile(r"talker\.code_predictor\.model\.layers\.\d+\.\w*layernorm\."), "talker.code_predictor.layers.norms"),
    (re.compile(r"talker\.code_predictor\.model\.(norm|codec_embedding)\."), "talker.code_predictor.{}"),
    (re.compile(r"talker\.code_predictor\.(lm_head)\."), "talker.code_predictor.{}"),
    (re.compile(r"code2wav\.(code_embedding)\."), "code2wav.{}"),
    (re.compile(r"code2wav\.pre_transformer\.layers\.\d+\.(self_attn|mlp)\."), "code2wav.transformer.{}"),
    (re.compile(r"code2wav\.pre_transformer\.layers\.\d+\.\w*layernorm\."), "code2wav.transformer.norms"),
    (re.compile(r"code2wav\.pre_transformer\.layers\.\d+\.\w*layer_scale\."), "code2wav.transformer.layer_scale"),
    (re.compile(r"code2wav\.pre_transformer\.(norm)\."), "code2wav.transformer.{}"),
    (re.compile(r"code2wav\.upsample\.\d+\.0\."), "code2wav.upsample.convs"),
    (re.compile(r"code2wav\.upsample\.\d+\.1\."), "code2wav.upsample.convnext"),
    (re.compile(r"code2wav\.decoder\.\d+\.block\."), "code2wav.decoder.blocks"),
    (re.compile(r"code2wav\.decoder\.\d+\.conv\."), "code2wav.decoder.convs"),
    (re.compile(r"code2wav\.decoder\.\d+\.(alpha|beta)$"), "code2wav.decoder.activation_post"),
)


def held_component(path: str) -> str | None:
    """A whole Qwen2.5-Omni's or Qwen3-Omni's parameter in its talker, token2wav or code2wav -> its component (one they
    hold but named here by none: "(unmatched) …"), or None outside them."""
    if not path.startswith(("talker.", "token2wav.", "code2wav.")):
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


def moe_talker(t: Config, text: Config, predictor: Config) -> dict:
    """Qwen3OmniMoeTalkerConfig's, its text_config's (Qwen3OmniMoeTalkerTextConfig) and its code_predictor_config's
    (Qwen3OmniMoeTalkerCodePredictorConfig) keys, their classes' defaults where absent: parts/moe_talker.py's fields.
    The text config's head_dim is hidden_size // num_attention_heads where unstated (its class declares none, the
    attention reads it by getattr); its shared_expert_intermediate_size has no default, and every layer reads it. The
    talker config's tie_word_embeddings ties codec_head to the codec table, as transformers ties it."""
    width, heads = text.int("hidden_size", 1024), text.int("num_attention_heads", 16)
    predictor_heads = predictor.int("num_attention_heads", 16)
    experts = "num_local_experts" if text.has("num_local_experts") else "num_experts"  # the class's attribute_map
    if predictor.bool("tie_word_embeddings", False):  # its _tied_weights_keys name a table it does not have
        raise predictor.fail(
            "tie_word_embeddings",
            "true ties the code predictor's lm_head to a model.embed_tokens it does not have (transformers cannot build it)",
        )
    return {
        "width": width,
        "thinker_width": t.int("thinker_hidden_size", 2048),
        "projection": text.int("intermediate_size", 2048),
        "layers": text.int("num_hidden_layers", 20),
        "heads": heads,
        "kv_heads": text.int("num_key_value_heads", 2),
        "head_dim": text.int("head_dim", width // heads),
        "bias": text.bool("attention_bias", False),
        "experts": text.int(experts, 128, positive=False),
        "top_k": text.int("num_experts_per_tok", 8, positive=False),
        "expert_intermediate": text.int("moe_intermediate_size", 384),
        "shared_intermediate": text.int("shared_expert_intermediate_size"),
        "vocab": text.int("vocab_size", 3072),
        "tied": t.bool("tie_word_embeddings", False),
        "predictor_width": predictor.int("hidden_size", 1024),
        "predictor_layers": predictor.int("num_hidden_layers", 5),
        "predictor_heads": predictor_heads,
        "predictor_kv_heads": predictor.int("num_key_value_heads", predictor_heads),
        "predictor_head_dim": predictor.int("head_dim", 128),
        "predictor_intermediate": predictor.int("intermediate_size", 3072),
        "predictor_bias": predictor.bool("attention_bias", False),
        "predictor_vocab": predictor.int("vocab_size", 2048),
        "code_groups": predictor.int("num_code_groups", 32),
    }


def code2wav(c: Config) -> dict:
    """Qwen3OmniMoeCode2WavConfig's keys (its class's defaults where absent): parts/code2wav.py's fields. Its head_dim
    is hidden_size // num_attention_heads where unstated (the class declares none)."""
    width, heads = c.int("hidden_size", 1024), c.int("num_attention_heads", 16)
    return {
        "width": width,
        "layers": c.int("num_hidden_layers", 8),
        "heads": heads,
        "kv_heads": c.int("num_key_value_heads", 16),
        "head_dim": c.int("head_dim", width // heads),
        "intermediate": c.int("intermediate_size", 3072),
        "bias": c.bool("attention_bias", False),
        "codebook": c.int("codebook_size", 2048),
        "quantizers": c.int("num_quantizers", 16),
        "upsampling_ratios": _ints(c, "upsampling_ratios", (2, 2)),
        "upsample_rates": _ints(c, "upsample_rates", (8, 5, 4, 3)),
        "decoder_dim": c.int("decoder_dim", 1536),
    }


@wrapper("qwen3_omni_moe")
def qwen3_omni_moe(c: Config) -> dict:
    """Qwen3OmniMoeForConditionalGeneration (Qwen Team 2025, Qwen3-Omni): the thinker
    (Qwen3OmniMoeThinkerForConditionalGeneration: Qwen3-Omni's MoE language model, its Qwen3-VL-form vision tower and
    its audio encoder, audio_lm.py), and where enable_audio_output is true (its default) the talker
    (Qwen3OmniMoeTalkerForConditionalGeneration, with its code predictor) and code2wav (Qwen3OmniMoeCode2Wav), which
    the class builds only then."""
    from .audio_lm import qwen3_omni_moe_thinker

    def nested(outer: Config, key: str, model_type: str) -> Config:  # released files state an empty model_type
        return sub_config(outer, key, {None: model_type, "": model_type})  # type: ignore[dict-item]

    thinker = nested(c, "thinker_config", "qwen3_omni_moe_thinker")
    spec = qwen3_omni_moe_thinker(thinker)
    if not c.bool("enable_audio_output", True):
        return spec
    t = nested(c, "talker_config", "qwen3_omni_moe_talker")
    text = nested(t, "text_config", "qwen3_omni_moe_talker_text")
    predictor = nested(t, "code_predictor_config", "qwen3_omni_moe_talker_code_predictor")
    wav = nested(c, "code2wav_config", "qwen3_omni_moe_code2wav")
    return {**spec, "moe_talker": moe_talker(t, text, predictor), "code2wav": code2wav(wav)}


qwen3_omni_moe.reads = ("thinker_config",)  # type: ignore[attr-defined]  # its text, audio and vision configs read above
