"""Audio towers built as Whisper's encoder (Radford et al. 2022, §2.2; transformers' WhisperEncoder): two convolutions
over a window's log-mel frames (kernel 3, the second of stride 2, GELU after each), a learned table of
max_source_positions rows, pre-norm layers of bidirectional attention (q, v and out_proj with biases, k_proj without)
and a two-layer MLP with biases, a final LayerNorm. Qwen2-Audio's Qwen2AudioEncoder, Voxtral's VoxtralEncoder, Audio
Flamingo 3's AudioFlamingo3Encoder (Music Flamingo's too) and MOSS-Transcribe-Diarize's audio model are built so;
Qwen2-Audio and Audio Flamingo 3 average-pool every two positions before the final norm, Voxtral and MOSS concatenate
four after it."""

from __future__ import annotations

from ..config import Config
from . import sub_config

AUDIO_TYPES = (
    "whisper",
    "qwen2_audio_encoder",
    "voxtral_encoder",
    "glmasr_encoder",
    "qwen2_5_omni_audio_encoder",
    "qwen3_omni_moe_audio_encoder",
    "audioflamingo3_encoder",
    "moss_transcribe_diarize_audio",
    "qwen3_asr_encoder",  # not Whisper's front end: qwen3_asr_encoder reads it
)


def whisper_encoder(a: Config, projector: dict, **over) -> dict:
    """The ``audio`` part of a Whisper-built audio config (d_model, encoder_layers, encoder_attention_heads,
    encoder_ffn_dim, num_mel_bins, max_source_positions, activation_function), with ``projector``."""
    kind = a.model_type or "qwen2_audio_encoder"
    if kind not in AUDIO_TYPES:
        raise a.fail("model_type", f"an audio tower of {kind!r} is not read yet (read: {', '.join(AUDIO_TYPES)})")

    def key(name: str, other: str) -> int:  # either name of an attribute_map pair, whichever the class fills
        return a.int(name) if a.has(name) else a.int(other)

    d = key("d_model", "hidden_size")
    heads = key("encoder_attention_heads", "num_attention_heads")
    act = a.activation("activation_function", "gelu")
    if kind == "glmasr_encoder":  # GlmAsrEncoder: Whisper's, with rotary positions (no table) and key-value heads
        attention = {"n_heads": heads, "n_kv_heads": a.int("num_key_value_heads", heads), "qkv_bias": True, "k_bias": False}
        over = {"position_table": False, "source_positions": a.int("max_position_embeddings", 1500), **over}
        act = a.activation("hidden_act", "gelu")
    if kind == "qwen2_5_omni_audio_encoder":  # Qwen2_5OmniAudioEncoder: sinusoidal positions (a buffer), n_window chunks
        over = {"position_table": False, "chunk": a.int("n_window"), "markers": 2, **over}
    if kind == "qwen3_omni_moe_audio_encoder":  # Qwen3OmniMoeAudioEncoder: Qwen3-ASR's front end and windows
        over = {**qwen3_front(a), **over}
    return {
        "layers": {
            "d_model": d,
            "n_layers": key("encoder_layers", "num_hidden_layers"),
            "attention": {"n_heads": heads, "qkv_bias": True, "k_bias": False, "o_bias": True}
            if kind != "glmasr_encoder"
            else {**attention, "o_bias": True},
            "ffn": {"kind": "dense", "d_ff": key("encoder_ffn_dim", "intermediate_size"), "bias": True, "activation": act},
            "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
        },
        "mel_bins": a.int("num_mel_bins", 128),
        "source_positions": a.int("max_source_positions", 1500),
        "projector": projector,
        **over,
    }


def qwen3_asr_encoder(a: Config, projector: dict) -> dict:
    """The ``audio`` part of Qwen3-ASR's audio_config (Qwen3ASREncoder, Qwen3-Omni's audio encoder): chunks of
    n_window × 2 log-mel frames, each through three Conv2d of downsample_hidden_size channels (kernel 3 × 3, stride 2,
    padding 1, GELU after each) and conv_out, Linear(channels × the mel bins left, d_model) without a bias, to 13
    positions a 100-frame chunk, sinusoidal positions (a buffer); Whisper's layers (every projection of the attention
    with a bias, k_proj too), each attending only the positions of its window of n_window_infer frames; ln_post."""
    d, heads = a.int("d_model"), a.int("encoder_attention_heads")
    act = a.activation("activation_function", "gelu")
    return {
        "layers": {
            "d_model": d,
            "n_layers": a.int("encoder_layers"),
            "attention": {"n_heads": heads, "qkv_bias": True, "o_bias": True},
            "ffn": {"kind": "dense", "d_ff": a.int("encoder_ffn_dim"), "bias": True, "activation": act},
            "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
        },
        "mel_bins": a.int("num_mel_bins", 128),
        "projector": projector,
        **qwen3_front(a),
    }


def qwen3_front(a: Config) -> dict:
    """Qwen3's audio front end and windows (Qwen3ASREncoder, Qwen3OmniMoeAudioEncoder): chunks of n_window × 2 frames
    through three Conv2d of downsample_hidden_size channels and conv_out, 13 positions a 100-frame chunk, each position
    attending the positions of its window of n_window_infer frames (the window's positions: ``source_positions``),
    sinusoidal positions (a buffer)."""
    chunk, span = 2 * a.int("n_window", 50), a.int("n_window_infer", 800)
    if span % chunk:
        raise a.fail("n_window_infer", f"{span} frames are not whole chunks of n_window × 2 = {chunk}")
    positions = chunk
    for _ in range(3):  # three stride-2 convolutions: ⌊(n − 1) / 2⌋ + 1 each
        positions = (positions - 1) // 2 + 1
    return {
        "source_positions": span // chunk * positions,
        "window_seconds": max(1, span // 100),  # 100 frames a second (its feature extractor's hop of 160 at 16 kHz)
        "position_table": False,
        "front": "conv2d",
        "channels": a.int("downsample_hidden_size"),
        "chunk_frames": chunk,
    }


def voxtral_realtime_encoder(a: Config, projector: dict) -> dict:
    """The ``audio`` part of Voxtral Realtime's audio_config (VoxtralRealtimeEncoder): Whisper's two convolutions made
    causal (VoxtralRealtimeCausalConv1d: the kernel's overhang padded on the left alone, 2 frames before conv1 and 1
    before conv2 of stride 2, so as many outputs as Whisper's), no position table (rotary positions); pre-norm layers
    of RMSNorms, attention of num_attention_heads heads of head_dim (q, v and o_proj with biases, k_proj without;
    num_key_value_heads is num_attention_heads), a SwiGLU MLP (gate_proj and up_proj without biases, down_proj with
    one, hidden_act), a final RMSNorm. Its mask is causal within a sliding window of sliding_window positions, which
    transformers' eager attention applies to the whole square of scores it computes: counted as computed."""
    heads = a.int("num_attention_heads")
    attention = {"n_heads": heads, "head_dim": a.int("head_dim", 64), "qkv_bias": True, "k_bias": False, "o_bias": True}
    ffn = {"kind": "gated", "d_ff": a.int("intermediate_size"), "bias": False, "down_bias": True}
    return {
        "layers": {
            "d_model": a.int("hidden_size"),
            "n_layers": a.int("num_hidden_layers"),
            "attention": attention,
            "ffn": {**ffn, "activation": a.activation("hidden_act", "silu")},
            "norm": {"kind": "rmsnorm", "per_layer": 2, "final": False},
        },
        "mel_bins": a.int("num_mel_bins", 128),
        "source_positions": a.int("max_position_embeddings", 1500),
        "position_table": False,
        "projector": projector,
    }


def sanm_encoder(c: Config, a: Config, projector: dict) -> dict:
    """The ``audio`` part of Fun-ASR-Nano's audio_config and adaptor_config (FunAsrNanoEncoder, SAN-M: parts/sanm.py):
    num_hidden_layers layers of hidden_size with num_attention_heads heads (q, k, v, o with biases) and an FSMN of
    fsmn_kernel_size taps, an MLP of intermediate_size with biases (hidden_act), the first reading num_mel_bins ×
    num_stacked_frames features (its feature extractor's low-frame-rate positions: 7 frames stacked every 6, 60 ms
    each), num_timestamp_prediction_layers of them after the transcription layers; the adaptor_config's layers after
    the projector. A window here is 30 s: 500 positions."""
    ad = sub_config(c, "adaptor_config")
    d, heads = a.int("hidden_size"), a.int("num_attention_heads")

    def layers(x: Config, n: int, width: int = 1024, heads: int = 8, d_ff: int = 256) -> dict:
        act = x.activation("hidden_act", "relu")  # the defaults: FunAsrNanoAdaptorConfig's (no model_type of its own)
        return {
            "d_model": x.int("hidden_size", width),
            "n_layers": n,
            "attention": {"n_heads": x.int("num_attention_heads", heads), "qkv_bias": True, "o_bias": True},
            "ffn": {"kind": "dense", "d_ff": x.int("intermediate_size", d_ff), "bias": True, "activation": act},
            "norm": {"kind": "layernorm", "per_layer": 2, "final": False},
        }

    if d % heads:
        raise a.fail("num_attention_heads", f"{heads} heads do not divide hidden_size {d}")
    out = {
        "layers": layers(a, a.int("num_hidden_layers")),
        "mel_bins": a.int("num_mel_bins", 80) * a.int("num_stacked_frames", 7),
        "source_positions": 500,  # 30 s: 3,000 frames of 10 ms, one position every 6
        "position_table": False,
        "final_norm": False,
        "fsmn_kernel": a.int("fsmn_kernel_size", 11),
        "timestamp_layers": a.int("num_timestamp_prediction_layers", 20),
        "projector": projector,
    }
    if ad.int("num_hidden_layers", 2):
        out["adaptor"] = layers(ad, ad.int("num_hidden_layers", 2))
    return out


LAYER_MODULES = (
    (r"self_attn\.fsmn\.conv$", "attn.fsmn"),  # Fun-ASR-Nano's SAN-M memory
    (r"(^|\.)final_layernorm$", "norms"),  # Fun-ASR-Nano's last transcription and timestamp layers'
    (r"mlp\.gate_proj$", "ffn.gate"),  # Voxtral Realtime's SwiGLU
    (r"mlp\.up_proj$", "ffn.up"),
    (r"mlp\.down_proj$", "ffn.down"),
    (r"self_attn\.q_proj$", "attn.q"),
    (r"self_attn\.k_proj$", "attn.k"),
    (r"self_attn\.v_proj$", "attn.v"),
    (r"self_attn\.out_proj$", "attn.o"),
    (r"(^|\.)fc1$", "ffn.up"),
    (r"(^|\.)fc2$", "ffn.down"),
    (r"self_attn\.o_proj$", "attn.o"),  # GLM-ASR's
    (r"(self_attn_layer_norm|final_layer_norm|input_layernorm|post_attention_layernorm)$", "norms"),
)
TOP_MODULES = (
    (r"^conv1$", "conv1"),
    (r"^conv2$", "conv2"),
    (r"^embedder\.conv1$", "conv1"),  # Voxtral Realtime's causal convolutions
    (r"^embedder\.conv2$", "conv2"),
    (r"^conv2d1$", "conv1"),  # Qwen3-ASR's and Qwen3-Omni's front end: three Conv2d and a linear
    (r"^conv2d2$", "conv2"),
    (r"^conv2d3$", "conv3"),
    (r"^conv_out$", "conv_out"),
    (r"^ln_post$", "final_norm"),
    (r"^embed_positions$", "pos_embed"),
    (r"^(layer_norm|norm|ln_post)$", "final_norm"),
    (r"^proj$", "projector.linear"),  # Qwen2.5-Omni's, within its tower
    (r"^proj1$", "projector.linear_1"),  # Qwen3-Omni's
    (r"^proj2$", "projector.linear_2"),
    (r"^audio_bos_eos_token$", "markers"),
)


# Granite Speech's GraniteSpeechCTCEncoder (encoder.) and GraniteSpeechEncoderProjector (projector.), by module
GRANITE_MODULES = (
    (r"^encoder\.input_linear$", "input_linear"),
    (r"^encoder\.layers\.\d+\.(ff1\.pre_norm|attn\.pre_norm|conv\.norm|ff2\.pre_norm|post_norm)$", "norms"),
    (r"^encoder\.layers\.\d+\.ff1\.up_proj$", "attn.ff1.up"),
    (r"^encoder\.layers\.\d+\.ff1\.down_proj$", "attn.ff1.down"),
    (r"^encoder\.layers\.\d+\.attn\.to_q$", "attn.q"),
    (r"^encoder\.layers\.\d+\.attn\.to_kv$", "attn.k+v"),
    (r"^encoder\.layers\.\d+\.attn\.to_out$", "attn.o"),
    (r"^encoder\.layers\.\d+\.attn\.rel_pos_emb$", "attn.rel_pos"),
    (r"^encoder\.layers\.\d+\.conv\.up_conv$", "attn.conv.up"),
    (r"^encoder\.layers\.\d+\.conv\.depth_conv\.conv$", "attn.conv.depthwise"),
    (r"^encoder\.layers\.\d+\.conv\.batch_norm$", "attn.conv.norm"),
    (r"^encoder\.layers\.\d+\.conv\.down_conv$", "attn.conv.down"),
    (r"^encoder\.layers\.\d+\.ff2\.up_proj$", "ffn.up"),
    (r"^encoder\.layers\.\d+\.ff2\.down_proj$", "ffn.down"),
    (r"^encoder\.out$", "ctc.out"),
    (r"^encoder\.out_mid$", "ctc.out_mid"),
    (r"^projector\.query$", "projector.qformer.queries"),
    (r"^projector\.linear$", "projector.linear"),
)


def granite_component(path: str) -> str | None:
    """A Granite Speech whole model's parameter in its encoder or projector -> its audio component, or None."""
    import re

    from .vit import QFORMER_MODULES

    found = re.search(r"(?:^|\.)(?=(encoder|projector)\.)", path)
    if not found or path.startswith("language_model.") or ".language_model." in path:
        return None
    rest = path[found.end() :]
    module = rest.rsplit(".", 1)[0] if rest.count(".") and not rest.endswith("query") else rest
    if module.startswith("projector.qformer."):
        inner = module.removeprefix("projector.qformer.")
        return "audio.projector.qformer." + next((n for pat, n in QFORMER_MODULES if re.search(pat, inner)), f"(unmatched) {inner}")
    return "audio." + next((n for pat, n in GRANITE_MODULES if re.search(pat, module)), f"(unmatched) {module}")


def audio_component(path: str) -> str | None:
    """A whole model's parameter in a Whisper-built audio tower -> its component of the audio part, or None."""
    import re

    from ..names import LAYER

    if re.search(r"(?:^|\.)(audio_tower\.(asr_encoder|diarization_model|asr_norm|speaker_norm)\.|word_timestamp_)", path) or re.search(
        r"(?:^|\.)multi_modal_projector\.(weight|bias)$", path
    ):  # Nemotron 3.5 Transcribe's (transcribe.py)
        from .transcribe import transcribe_component

        return transcribe_component(path)
    if re.search(r"(?:^|\.)(encoder\.(input_linear|layers\.\d+\.(ff1|attn|conv|ff2|post_norm)|out|out_mid)|projector)\.", path):
        return granite_component(path)
    adaptor = re.search(r"(?:^|\.)multi_modal_projector\.layers\.\d+\.", path)  # Fun-ASR-Nano's adaptor layers
    if adaptor:
        module = path[adaptor.end() :].rsplit(".", 1)[0]
        name = next((n for pat, n in LAYER_MODULES if re.search(pat, module)), f"(unmatched) {module}")
        return "audio.projector.adaptor." + name
    found = re.search(r"(?:^|\.)audio_tower\.", path)
    if not found:
        return None
    rest = path[found.end() :]
    module = rest.rsplit(".", 1)[0] if "." in rest else ""
    layer = LAYER.search(module)
    table = LAYER_MODULES if layer else TOP_MODULES
    inner = layer.group(2) if layer else module
    for pattern, name in table:
        found = re.search(pattern, inner)
        if found:
            return "audio." + (name or found.group(1))
    return f"(unmatched) audio.{module}"
