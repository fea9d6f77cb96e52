"""Gemma 3n's towers and embedders (Gemma3nForConditionalGeneration, as transformers 5.23 builds it): its vision tower,
timm's MobileNetV5 through TimmWrapperModel (parts/mobilenet_v5.py), and embed_vision; its audio tower and embed_audio
(parts/gemma3n_audio.py); beside the language model (families/gemma3n.py).

Its images: the processor (Gemma3nImageProcessor through SiglipImageProcessor) resizes each to 768 × 768 pixels,
GEMMA3N_IMAGE_SIZE unless --image-size says otherwise; any size is vision_soft_tokens_per_image (256) tokens."""

from __future__ import annotations

import re

from ..config import Config
from . import sub_config, wrapper

GEMMA3N_IMAGE_SIZE = 768  # Gemma3nProcessor's image processor: 768 × 768 pixels
MOBILENETS = ("mobilenetv5_300m_enc",)  # timm's architectures read (parts/mobilenet_v5.py's default blocks)

# Gemma3nAudioSubSampleConvProjection's two convolutions as it pads them by hand (time (0, kernel − 1), frequency
# (1, 1)): read at 3 × 3 kernels of stride 2 × 2 alone
SUBSAMPLER = {"sscp_conv_kernel_size": [[3, 3], [3, 3]], "sscp_conv_stride_size": [[2, 2], [2, 2]]}


def gemma3n_audio(c: Config) -> dict:
    """Gemma3nAudioEncoder and embed_audio (Gemma3nMultimodalEmbedder) of a gemma3n config's audio_config
    (Gemma3nAudioConfig): hidden_size, conf_num_hidden_layers, conf_num_attention_heads, conf_attention_chunk_size,
    conf_attention_context_left and _right, conf_conv_kernel_size, conf_reduction_factor, input_feat_size,
    sscp_conv_channel_size, vocab_size; a clip's tokens, the wrapper's audio_soft_tokens_per_image."""
    a = sub_config(c, "audio_config")
    for key, value in SUBSAMPLER.items():
        if a.data.get(key, value) != value:
            raise a.fail(key, f"{a.data.get(key)!r}: the subsampler is read at {value} alone")
    channels = a.data.get("sscp_conv_channel_size", [128, 32])
    if not (isinstance(channels, list) and len(channels) == 2 and all(type(n) is int and n > 0 for n in channels)):
        raise a.fail("sscp_conv_channel_size", f"{channels!r}: two positive channel counts, one a convolution")
    return {
        "width": a.int("hidden_size"),
        "layers": a.int("conf_num_hidden_layers"),
        "heads": a.int("conf_num_attention_heads"),
        "chunk": a.int("conf_attention_chunk_size"),
        "context_left": a.int("conf_attention_context_left"),
        "context_right": a.int("conf_attention_context_right", positive=False),
        "kernel": a.int("conf_conv_kernel_size"),
        "reduction": a.int("conf_reduction_factor"),
        "mel_bins": a.int("input_feat_size"),
        "channels": tuple(channels),
        "vocab": a.int("vocab_size"),
        "tokens": c.int("audio_soft_tokens_per_image", 188),
    }


def gemma3n_vision(c: Config) -> dict:
    """The vision part of a gemma3n config: vision_config (Gemma3nVisionConfig) architecture mobilenetv5_300m_enc,
    without model_args, its fusion adapter's 2,048 channels its hidden_size, 16 × 16 soft tokens
    (vision_soft_tokens_per_image 256: get_image_features reshapes to them); embed_vision of vocab_size rows."""
    from ....parts.mobilenet_v5 import MobileNetV5

    v = sub_config(c, "vision_config")
    arch = v.data.get("architecture")
    if arch not in MOBILENETS:
        raise v.fail("architecture", f"{arch!r}: a timm tower not read yet (read: {', '.join(MOBILENETS)})")
    if v.data.get("model_args"):
        raise v.fail("model_args", f"{v.data['model_args']!r}: MobileNetV5's towers are read as timm builds them alone (none)")
    tower = MobileNetV5()
    if v.int("hidden_size") != tower.width:
        raise v.fail("hidden_size", f"{v.int('hidden_size')}: the tower's fusion adapter writes {tower.width} channels")
    if c.int("vision_soft_tokens_per_image", tower.tokens) != tower.tokens:
        stated = c.int("vision_soft_tokens_per_image")
        raise c.fail("vision_soft_tokens_per_image", f"{stated}: the tower writes {tower.side} × {tower.side} soft tokens")
    return {
        "image_size": GEMMA3N_IMAGE_SIZE,
        "patch_size": tower.stride,
        "mobilenet": {},
        "position_table": False,
        "post_norm": False,
        "projector": {"width": tower.width, "embedder": v.int("vocab_size")},
    }


@wrapper("gemma3n")
def gemma3n(c: Config) -> dict:
    """Gemma3nForConditionalGeneration (Google DeepMind 2025, Gemma 3n) whole: the vision tower and embed_vision
    (gemma3n_vision), the audio tower and embed_audio (gemma3n_audio), each embedder a Gemma3nMultimodalEmbedder (its
    soft path: an RMSNorm, Linear(tower width, text width) without a bias, an RMSNorm without a weight)."""
    return {"vision": gemma3n_vision(c), "gemma3n_audio": gemma3n_audio(c)}


# Gemma 3n's MobileNetV5 modules in the whole class (TimmWrapperModel's timm_model) -> their components
MOBILENET_MODULES = (
    (r"^conv_stem\.(conv|bn)$", lambda m, k: "stem." + {"conv": "conv", "bn": "norm"}[m[1]]),
    (r"^blocks\.(\d+)\.\d+\.(conv_exp|bn1|conv_pwl|bn2)$", lambda m, k: f"stage{m[1]}.er.{m[2]}"),
    (r"^blocks\.(\d+)\.\d+\.(dw_start|pw_exp|dw_mid|pw_proj)\.(conv|bn)$", lambda m, k: f"stage{m[1]}.uir.{m[2]}{k(m[3])}"),
    (r"^blocks\.(\d+)\.\d+\.layer_scale$", lambda m, k: f"stage{m[1]}.layer_scale"),  # a UIR's or an MQA's
    (r"^blocks\.(\d+)\.\d+\.norm$", lambda m, k: f"stage{m[1]}.mqa.norm"),
    (r"^blocks\.(\d+)\.\d+\.attn\.(query|key|value|output)\.proj$", lambda m, k: f"stage{m[1]}.mqa.{m[2]}"),
    (r"^blocks\.(\d+)\.\d+\.attn\.(key|value)\.(down_conv|norm)$", lambda m, k: f"stage{m[1]}.mqa.{m[2]}_{m[3][:4]}"),
    (r"^msfa\.ffn\.(pw_exp|pw_proj)\.(conv|bn)$", lambda m, k: f"msfa.{m[1]}{k(m[2])}"),
    (r"^msfa\.norm$", lambda m, k: "msfa.norm"),
)


# Gemma 3n's audio tower and embed_audio modules (model.audio_tower., model.embed_audio.) -> their components
AUDIO_MODULES = (
    (r"^audio_tower\.subsample_conv_projection\.conv_(\d)\.conv$", lambda m: f"subsample.conv{m[1]}"),
    (r"^audio_tower\.subsample_conv_projection\.conv_(\d)\.norm$", lambda m: f"subsample.norm{m[1]}"),
    (r"^audio_tower\.subsample_conv_projection\.input_proj_linear$", lambda m: "subsample.proj"),
    (r"\.ffw_layer_(start|end)\.(pre|post)_layer_norm$", lambda m: f"ffw_{m[1]}.norms"),
    (r"\.ffw_layer_(start|end)\.ffw_layer_1$", lambda m: f"ffw_{m[1]}.up"),
    (r"\.ffw_layer_(start|end)\.ffw_layer_2$", lambda m: f"ffw_{m[1]}.down"),
    (r"\.attention\.(pre_attn_norm|post_norm)$", lambda m: "attn.norms"),
    (r"\.attention\.attn$", lambda m: "attn.per_dim_scale"),  # the module's own parameter
    (r"\.attention\.attn\.([qkv])_proj$", lambda m: f"attn.{m[1]}"),
    (r"\.attention\.attn\.relative_position_embedding\.pos_proj$", lambda m: "attn.pos_proj"),
    (r"\.attention\.post$", lambda m: "attn.o"),
    (r"\.lconv1d\.(pre_layer_norm|conv_norm)$", lambda m: "lconv.norms"),
    (r"\.lconv1d\.linear_(start|end)$", lambda m: f"lconv.{m[1]}"),
    (r"\.lconv1d\.depthwise_conv1d$", lambda m: "lconv.conv"),
    (r"^audio_tower\.conformer\.\d+\.norm$", lambda m: "norm"),
)
# Gemma3nMultimodalEmbedder's modules (embed_vision., embed_audio.) -> their components; embedding_projection is "linear",
# as Gemma 4's embed_vision names it (vit.py)
EMBEDDER_MODULES = {
    "embedding": "embedding",
    "hard_embedding_norm": "hard_norm",
    "soft_embedding_norm": "soft_norm",
    "embedding_projection": "linear",
}


def gemma3n_component(path: str) -> str | None:
    """A whole Gemma 3n's parameter in a tower or an embedder (``model.vision_tower.timm_model.``, ``model.audio_tower.``,
    ``model.embed_audio.``, ``model.embed_vision.``) -> its component, or None (another's)."""
    module = re.sub(r"^model\.", "", path.rsplit(".", 1)[0])
    found = re.match(r"^vision_tower\.timm_model\.((?:conv_stem|msfa|blocks\.\d+\.\d+)(?:\..*)?)$", module)
    if found:
        for pattern, name in MOBILENET_MODULES:
            hit = re.search(pattern, found[1])
            if hit:
                return "vision." + name(hit, lambda kind: "" if kind == "conv" else "_norm")
        return f"(unmatched) vision.{found[1]}"
    found = re.match(r"^embed_(audio|vision)\.(\w+)$", module)
    if found and found[2] in EMBEDDER_MODULES:
        return f"{found[1]}.projector.{EMBEDDER_MODULES[found[2]]}"
    if not module.startswith(("audio_tower.subsample_conv_projection.", "audio_tower.conformer.")):  # another's tower
        return None
    for pattern, name in AUDIO_MODULES:
        hit = re.search(pattern, module)
        if hit:
            return "audio." + name(hit)
    return f"(unmatched) audio.{module}"
