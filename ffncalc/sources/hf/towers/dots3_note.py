"""Dots3 Note read whole (Dots3NoteForConditionalGeneration, as transformers 5.23 builds it): its text_config's language
model (dots3_note_text), a vision tower of dense and routed layers (parts/routed_vision.py) with its merger, and an
audio tower of three strided 2-D convolutions, rotary attention layers and an adapter (parts/audio.py, conv2d)."""

from __future__ import annotations

import re

from ..config import Config
from . import sub_config, wrapper

DOTS3_IMAGE_SIZE = 448  # pixels a side: 32 × 32 patches of 14, 256 tokens after its 2 × 2 merge (no fixed size)
CHUNK_SECONDS = 60  # Dots3NoteFeatureExtractor's chunk_length: each chunk of audio a window of its own


def dots3_vision(v: Config, text_width: int) -> dict:
    """Dots3NoteVisionModel: patch_embed, a Conv2d(num_channels, hidden_size, patch_size, stride patch_size) with a bias
    and an RMSNorm after it; its blocks (parts/routed_vision.py) as mlp_layer_types and per_layer_config name them; the
    final RMSNorm; its merger (Dots3NoteVisionMerger): a LayerNorm over each patch, adapter_merge_size² patches side by
    side, Linear(width · merge², width · merge²) → GELU → Linear(…, adapter_out_dim), with biases."""
    d, heads, depth = v.int("hidden_size"), v.int("num_attention_heads"), v.int("num_hidden_layers")
    if d % heads:
        raise v.fail("num_attention_heads", f"{heads} heads do not divide hidden_size {d}")
    kinds = v.data.get("mlp_layer_types")
    if not isinstance(kinds, list) or len(kinds) != depth or not all(k in ("dense", "sparse") for k in kinds):
        raise v.fail("mlp_layer_types", f"expected {depth} of 'dense' or 'sparse' (num_hidden_layers), got {kinds!r}")
    per_layer = v.data.get("per_layer_config") or {}
    if not isinstance(per_layer, dict):
        raise v.fail("per_layer_config", f"expected an object of layers, got {per_layer!r}")
    default_experts, top_k = v.int("num_local_experts", 64), v.int("num_experts_per_tok", 2)
    experts = []
    for i, kind in enumerate(kinds):
        layer = per_layer.get(str(i), per_layer.get(i, {})) or {}  # type: ignore[call-overload]
        if not isinstance(layer, dict):
            raise v.fail("per_layer_config", f"layer {i}: expected an object, got {layer!r}")
        if layer.get("moe_intermediate_size", v.int("moe_intermediate_size")) != v.int("moe_intermediate_size"):
            raise v.fail("per_layer_config", f"layer {i}: an expert width of its own is not read")
        n = layer.get("num_local_experts", default_experts) if kind == "sparse" else 0
        if not isinstance(n, int) or isinstance(n, bool) or n < (1 if kind == "sparse" else 0):
            raise v.fail("per_layer_config", f"layer {i}: num_local_experts {n!r} is not a count of experts")
        if kind == "sparse" and min(layer.get("num_experts_per_tok", top_k), n) != min(top_k, n):
            raise v.fail("per_layer_config", f"layer {i}: a top-k of its own is not read")
        experts.append(n)
    rope = v.data.get("rope_parameters") or {}
    if isinstance(rope, dict) and rope.get("rope_type", "axial") != "axial":
        raise v.fail("rope_parameters", f"rope_type {rope.get('rope_type')!r}: its tower takes axial rotary positions only")
    merge = v.int("adapter_merge_size", 2)
    if v.int("adapter_in_dim", d) != d:
        raise v.fail("adapter_in_dim", f"{v.int('adapter_in_dim')} features: its merger reads the tower's {d}")
    out = v.int("adapter_out_dim", text_width)
    if out != text_width:
        raise v.fail("adapter_out_dim", f"{out} features: the language model's width is {text_width}")
    routed = {
        "width": d,
        "heads": heads,
        "ffn": v.int("intermediate_size"),
        "expert_ffn": v.int("moe_intermediate_size"),
        "experts": experts,
        "top_k": top_k,
        "attention_bias": v.bool("attention_bias", False),
        "mlp_bias": v.bool("mlp_bias", False),
    }
    projector = {
        "width": d,
        "hidden": d * merge * merge,
        "bias": True,
        "activation": "gelu",
        "norm": "layernorm",
        "prenorm": True,
        "shuffle": merge,
    }
    return {
        "image_size": DOTS3_IMAGE_SIZE,
        "patch_size": v.int("patch_size"),
        "channels": v.int("num_channels", 3),
        "patch_bias": True,
        "patch_norm": True,
        "position_table": False,
        "post_norm": False,
        "routed": routed,
        "projector": projector,
    }


def dots3_audio(a: Config, text_width: int) -> dict:
    """Dots3NoteAudioModel: its conv_stem, three Conv2d(…, downsample_hidden_size, 3, stride 2, padding 1) with biases,
    GELU after each, over a chunk's (mel, frame) plane, then conv_out, Linear(channels × the mel bins left, hidden_size)
    without a bias: a position a token, 8 frames (samples_per_token) each; pre-norm layers of RMSNorms, attention of
    num_attention_heads heads (q_proj, v_proj and o_proj with biases as attention_bias, k_proj without), rotary
    positions over part of each head (no multiply-adds), a SwiGLU MLP (gate_up_proj and down_proj with biases); a final
    RMSNorm; its adapter: a LayerNorm, fc1 to adapter_out_dim, GELU, fc2, with biases, over the valid positions alone.
    Each chunk of CHUNK_SECONDS (its feature extractor's chunk_length) a window of its own, every chunk of a request
    padded to its longest."""
    d, heads = a.int("hidden_size"), a.int("num_attention_heads")
    if d % heads:
        raise a.fail("num_attention_heads", f"{heads} heads do not divide hidden_size {d}")
    hop = a.int("hop_length", 160)
    if hop * 100 != a.int("sampling_rate", 16000):
        raise a.fail("hop_length", f"{hop} samples a frame: windows are read at 100 frames a second")
    if a.int("adapter_input_size", d) != d:
        raise a.fail("adapter_input_size", f"{a.int('adapter_input_size')} features: its adapter reads the tower's {d}")
    out = a.int("adapter_out_dim", text_width)
    if out != text_width:
        raise a.fail("adapter_out_dim", f"{out} features: the language model's width is {text_width}")
    channels, mels = a.int("downsample_hidden_size"), a.int("feature_size", 128)
    left = (mels + 7) // 8  # the mel bins three stride-2 convolutions leave
    if a.int("conv_output_size", channels * left) != channels * left:  # transformers builds it, and runs no audio
        raise a.fail("conv_output_size", f"{a.int('conv_output_size')} features: its convolutions write {channels} × {left}")
    bias = a.bool("attention_bias", True)
    attention = {"n_heads": heads, "head_dim": d // heads, "qkv_bias": bias, "k_bias": False, "o_bias": bias}
    return {
        "layers": {
            "d_model": d,
            "n_layers": a.int("num_hidden_layers"),
            "attention": attention,
            "ffn": {
                "kind": "gated",
                "d_ff": a.int("intermediate_size"),
                "bias": True,
                "activation": a.activation("hidden_act", "silu"),
            },
            "norm": {"kind": "rmsnorm", "per_layer": 2, "final": False},
        },
        "mel_bins": mels,
        "source_positions": CHUNK_SECONDS * 100 // 8,  # three stride-2 convolutions: 8 frames a position
        "window_seconds": CHUNK_SECONDS,
        "position_table": False,
        "front": "conv2d",
        "channels": channels,
        "chunk_frames": 8,  # a position's frames: the convolutions over a chunk do the work of its 8-frame pieces
        "padded": True,
        "projector": {"width": d, "hidden": out, "bias": True, "activation": "gelu", "norm": "layernorm", "prenorm": True},
    }


@wrapper("dots3_note")
def dots3_note(c: Config) -> dict:
    """Dots3NoteForConditionalGeneration (Dots Studio, Dots3 Note Preview): Dots3NoteVisionModel and Dots3NoteAudioModel beside
    Dots3 Note's language model. Its images have no fixed size: an image's figures are at DOTS3_IMAGE_SIZE pixels a side
    unless --image-size says otherwise."""
    text = sub_config(c, "text_config")
    width = text.int("hidden_size")
    v = sub_config(c, "vision_config")
    a = sub_config(c, "audio_config")
    return {"audio": dots3_audio(a, width), "vision": dots3_vision(v, width)}  # audio first, as tower_of names it


# Its modules the towers' common names (vit.py, whisper.py) leave unmatched, by tower
VISION_MODULES = (
    (r"^patch_embed\.norm$", "embed_norm"),
    (r"^blocks\.\d+\.mlp\.gate$", "moe.router"),
    (r"^blocks\.\d+\.mlp\.experts\.gate_up_proj$", "moe.experts.gate_up"),
    (r"^blocks\.\d+\.mlp\.experts\.down_proj$", "moe.experts.down"),
    (r"^norm$", "final_norm"),
)
AUDIO_MODULES = (
    (r"^conv_stem\.convs\.0$", "conv1"),
    (r"^conv_stem\.convs\.1$", "conv2"),
    (r"^conv_stem\.convs\.2$", "conv3"),
    (r"^conv_stem\.conv_out$", "conv_out"),
    (r"^layers\.\d+\.mlp\.gate_up_proj$", "ffn.gate+up"),
    (r"^adapter\.norm$", "projector.norm"),
    (r"^adapter\.fc1$", "projector.linear_1"),
    (r"^adapter\.fc2$", "projector.linear_2"),
)


def dots3_component(path: str) -> str | None:
    """A Dots3NoteForConditionalGeneration tower's parameter the common names leave unmatched -> its component, or
    None."""
    found = re.search(r"(?:^|\.)(vision_tower|audio_tower)\.(.+)$", path)
    if not found:
        return None
    tower, rest = found.group(1), found.group(2)
    module = rest if ".experts." in rest else rest.rsplit(".", 1)[0]
    table, prefix = (VISION_MODULES, "vision.") if tower == "vision_tower" else (AUDIO_MODULES, "audio.")
    return next((prefix + name for pattern, name in table if re.search(pattern, module)), None)
