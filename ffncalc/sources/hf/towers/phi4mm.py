"""Phi-4-multimodal read whole (Phi4MultimodalForCausalLM; Microsoft 2025, "Phi-4-Mini Technical Report"): its
configuration states Phi-4-mini's language model at its top (read as phi3), and beside it an audio_config and a
vision_config, each with its own projector (parts/phi4_audio.py, parts/phi4_vision.py)."""

from __future__ import annotations

from ..config import Config
from . import sub_config, wrapper

# the sub-configs its reader takes (a sparse audio_config or vision_config reads their defaults)
PHI4_TYPES = ("phi4_multimodal_audio", "phi4_multimodal_vision")


@wrapper("phi4_multimodal")
def phi4_multimodal(c: Config) -> dict:
    """Phi4MultimodalForCausalLM (Microsoft 2025, Phi-4-multimodal): Phi4MultimodalAudioModel, NeMo's striding
    convolutions, num_blocks Conformer layers (blocks/phi4_conformer.py) and a relative bias table, with up_proj and
    down_proj for speech and for vision with speech; Phi4MultimodalVisionModel (SigLIP's, its pooling head included)
    over an image's crops, pooled 2 × 2, and img_projection_up → GELU → img_projection_down, beside Phi-4-mini."""
    text = c.int("hidden_size")
    a = sub_config(c, "audio_config", {None: "phi4_multimodal_audio"})  # type: ignore[dict-item]
    v = sub_config(c, "vision_config", {None: "phi4_multimodal_vision"})  # type: ignore[dict-item]
    return {"phi4_audio": _audio(a, text), "phi4_vision": _vision(v, text)}


def _audio(a: Config, text: int) -> dict:
    d, heads = a.int("hidden_size"), a.int("num_attention_heads")
    for key in ("ext_pw_out_channel", "depthwise_separable_out_channel"):  # what the next convolution reads
        if a.int(key) != d:
            raise a.fail(key, f"{a.int(key)}: the convolution module's next convolution reads hidden_size ({d}) channels")
    if a.int("downsample_rate") != 1:  # up_proj reads hidden_size × downsample_rate features; the encoder writes d
        raise a.fail("downsample_rate", f"{a.int('downsample_rate')}: the encoder writes {d} features a position (1 runs)")
    reduction, mels = a.int("time_reduction"), a.int("input_size")
    halved = mels
    for _ in range(reduction.bit_length() - 1):
        halved = (halved - 1) // 2 + 1
    if a.int("nemo_final_size") != halved:  # embed.out reads the channels × the mel bins its convolutions leave
        raise a.fail("nemo_final_size", f"{a.int('nemo_final_size')}: {mels} mel bins halved to {halved}")
    act = a.activation("activation", "silu")
    distance = a.int("bias_max_distance")
    positions = 500  # Phi4MultimodalAudioModel.forward's max_seq_len: 40 s a window
    return {
        "layers": {
            "d_model": d,
            "n_layers": a.int("num_blocks"),
            "attention": {
                "kind": "phi4_conformer",
                "n_heads": heads,
                "head_dim": d // heads,
                "qkv_bias": True,
                "o_bias": True,
                "d_ff": a.int("intermediate_size"),
                "activation": act,
                "kernel": a.int("kernel_size"),
                "conv_activation": a.activation("conv_activation", "silu"),
                "glu_activation": a.activation("conv_glu_type", "silu"),
                "multiplier": a.int("depthwise_multiplier"),
            },
            "ffn": {"kind": "gated", "d_ff": a.int("intermediate_size"), "bias": True, "activation": act},
            "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
        },
        "mel_bins": mels,
        "source_positions": positions,
        "window_seconds": positions * reduction // 100,
        "position_table": False,
        "final_norm": False,
        "channels": a.int("nemo_conv_channels"),
        "time_reduction": reduction,
        "buckets": distance if a.bool("bias_symmetric", False) else 2 * distance,
        "heads": heads,
        "projector": {"width": d, "hidden": text, "bias": True, "activation": "gelu"},
    }


def _vision(v: Config, text: int) -> dict:
    size, crop = v.int("image_size"), v.int("crop_size")
    if size != crop:  # the position table's rows are image_size's patches; each crop runs the tower at crop_size
        raise v.fail("crop_size", f"{crop}: the tower's table is of {size}-pixel images (crops of image_size are read)")
    if (size // v.int("patch_size")) % 2:  # img_processor_padding: a reflected row and column before the pool
        raise v.fail("patch_size", f"{size // v.int('patch_size')} patches a side: an odd grid is padded (not read yet)")
    siglip = Config({**v.data, "model_type": "siglip_vision_model", "vision_use_head": True}, v.text, v.source, start=v.start)
    from .vit import vit

    projector = {"width": v.int("hidden_size"), "hidden": text, "bias": True, "activation": "gelu"}
    return {**vit(siglip, projector), "crop": crop, "pool": 2}


# Phi4MultimodalAudioModel's modules and projectors -> the phi4_audio part's components (parts/phi4_audio.py,
# blocks/phi4_conformer.py); a layer's feed_forward_out is its FFN slot, its five LayerNorms one component
AUDIO_MODULES = (
    (r"^embed\.conv\.0$", "embed.conv0"),
    (r"^embed\.out$", "embed.out"),
    (r"^relative_attention_bias_layer\.bias_values$", "relative_bias"),
    (r"layer_norm(_att)?$", "norms"),  # the five: the layer's two, feed_forward_in's, conv's and its last
    (r"feed_forward_in\.gate_up_proj$", "attn.ff1.up"),
    (r"feed_forward_in\.down_proj$", "attn.ff1.down"),
    (r"self_attn\.(q|k|v|o)_proj$", None),
    (r"conv\.glu\.ext_pw_conv_1d$", "attn.conv.up"),
    (r"conv\.glu$", "attn.conv.glu_bias"),
    (r"conv\.dw_sep_conv_1d\.dw_conv$", "attn.conv.depthwise"),
    (r"conv\.dw_sep_conv_1d\.pw_conv$", "attn.conv.pointwise"),
    (r"conv\.ext_pw_conv_1d$", "attn.conv.down"),
    (r"feed_forward_out\.gate_up_proj$", "ffn.gate+up"),
    (r"feed_forward_out\.down_proj$", "ffn.down"),
)
PROJECTORS = {
    "up_proj_for_speech": "projector.linear_1",
    "down_proj_for_speech": "projector.linear_2",
    "up_proj_for_vision_speech": "projector.vision_speech.linear_1",
    "down_proj_for_vision_speech": "projector.vision_speech.linear_2",
    "img_projection_up": "projector.linear_1",
    "img_projection_down": "projector.linear_2",
    "global_img_feature_extensor": "projector.separators",
    "sub_img_feature_extensor": "projector.separators",
}


def phi4_component(path: str) -> str | None:
    """A Phi4MultimodalForCausalLM parameter in its towers or projectors -> its component, or None."""
    import re

    from .vit import tower_component

    found = re.search(r"(?:^|\.)embed_tokens_extend\.(image|audio)_embed\.", path)
    if not found:
        return None
    tower, rest = ("vision" if found.group(1) == "image" else "audio"), path[found.end() :]
    head, _, tail = rest.partition(".")
    if head in PROJECTORS:
        return f"{tower}.{PROJECTORS[head]}"
    if head == "img_processor":  # SigLIP's vision model, named as a LLaVA-form wrapper's
        return tower_component("vision_tower.vision_model." + tail)
    module = tail.rsplit(".", 1)[0] if head == "encoder" else ""
    depthwise = re.match(r"embed\.conv\.(\d+)$", module)
    if depthwise and depthwise.group(1) != "0":  # conv.2, conv.3 (conv.5, conv.6, …): each halving's pair
        i = int(depthwise.group(1))  # each pair at 3j + 2 and 3j + 3, its activation after them
        return f"audio.embed.{'depthwise' if (i - 2) % 3 == 0 else 'pointwise'}{(i - 2) // 3 + 2}"
    for pattern, name in AUDIO_MODULES:
        hit = re.search(pattern, module)
        if hit:
            return "audio." + (name or f"attn.{hit.group(1)}")
    return f"(unmatched) audio.{module}"
