"""Gemma 3n's towers and embedders (Gemma3nForConditionalGeneration, as transformers 5.23 builds it): its audio tower
and embed_audio (parts/gemma3n_audio.py) beside the language model (families/gemma3n.py)."""

from __future__ import annotations

import re

from ..config import Config
from . import sub_config

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
EMBEDDER_MODULES = {
    "embedding": "embedding",
    "hard_embedding_norm": "hard_norm",
    "soft_embedding_norm": "soft_norm",
    "embedding_projection": "projection",
}


def gemma3n_component(path: str) -> str | None:
    """A whole Gemma 3n's parameter in its audio tower or an embedder (``model.audio_tower.``, ``model.embed_audio.``,
    ``model.embed_vision.``) -> its component, or None (another's)."""
    module = re.sub(r"^model\.", "", path.rsplit(".", 1)[0])
    found = re.match(r"^embed_(audio|vision)\.(\w+)$", module)
    if found:
        return f"{found[1]}.projector.{EMBEDDER_MODULES.get(found[2], '(unmatched) ' + found[2])}"
    if not module.startswith("audio_tower."):
        return None
    for pattern, name in AUDIO_MODULES:
        hit = re.search(pattern, module)
        if hit:
            return "audio." + name(hit)
    return f"(unmatched) audio.{module}"
