"""Moonshine Streaming (Moonshine v2, arXiv:2602.12241): a streaming speech encoder over 5-ms frames of the raw
waveform, each layer attending within a sliding window with a short lookahead, and Moonshine's decoder attending to
it, as transformers' MoonshineStreamingForConditionalGeneration builds them."""

from __future__ import annotations

from ..config import Config, family
from .moonshine import LAYER_MODULES

TOP_MODULES = (
    (r"embed_tokens$", "embed"),
    (r"embedder\.linear$", "frame_proj"),
    (r"embedder\.comp$", "compress"),
    (r"conv1$", "conv1"),
    (r"conv2$", "conv2"),
    (r"decoder\.pos_emb$", "encoder.pos_embed"),  # the decoder's table, added to the encoder's output
    (r"decoder\.proj$", "encoder.bridge"),
    (r"proj_out$", "lm_head"),
    (r"(final_norm|decoder\.norm)$", "final_norm"),  # the encoder's, read within its stack: final_norm
)

# MoonshineStreamingEncoderConfig's defaults (configuration_moonshine_streaming.py), for the keys encoder_config omits
ENCODER_DEFAULTS = {
    "hidden_size": 320,
    "intermediate_size": 1280,
    "hidden_act": "gelu",
    "num_hidden_layers": 6,
    "num_attention_heads": 8,
    "num_key_value_heads": 8,
    "attention_bias": False,
    "sample_rate": 16000,
    "frame_ms": 5.0,
    "sliding_windows": [[16, 4], [16, 4], [16, 0], [16, 0], [16, 4], [16, 4]],
}


def _encoder(c: Config) -> Config:
    data = c.data.get("encoder_config") or {}
    if not isinstance(data, dict):
        raise c.fail("encoder_config", f"expected a mapping, got {type(data).__name__}")
    start = c.text.find('"encoder_config"', c.start)
    merged = {**ENCODER_DEFAULTS, **{k: v for k, v in data.items() if v is not None}}
    return Config(merged, c.text, c.source, start=max(start, c.start))


def _windows(e: Config, layers: int) -> tuple[list[int], list[int]]:
    """Each layer's keys before the query and after it: sliding_windows [left, right] lets query i meet keys j with
    0 ≤ i − j < left and 0 < j − i < right (sliding_window_mask_function): left − 1 before, right − 1 after (none at 0)."""
    windows = e.data.get("sliding_windows")
    ok = isinstance(windows, list) and len(windows) == layers
    ok = ok and all(isinstance(w, list) and len(w) == 2 and all(type(v) is int for v in w) for w in windows)
    if not ok:
        raise e.fail("sliding_windows", f"expected a [left, right] pair of integers for each of the {layers} layers")
    if any(left < 2 or right < 0 for left, right in windows):
        raise e.fail("sliding_windows", "each left window at least 2 (the query and a key before it), each right at least 0")
    return [left - 1 for left, _ in windows], [max(right - 1, 0) for _, right in windows]


@family("moonshine_streaming", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=((r"encoder\.", "encoder."),))
def moonshine_streaming(c: Config) -> dict:
    """MoonshineStreamingConfig / MoonshineStreamingForConditionalGeneration. The encoder (encoder_config):
    MoonshineStreamingEncoderEmbedder over frames of sample_rate · frame_ms / 1000 samples (80): CMVN, asinh(e^log_k
    · x), a linear to hidden_size (no bias) and a SiLU, two causal Conv1d (kernel 5, stride 2, biases; d → 2d with a
    SiLU, 2d → d); num_hidden_layers MoonshineStreamingEncoderLayers: a unit-offset LayerNorm (a gamma, no bias),
    self-attention of num_attention_heads over num_key_value_heads heads of head_dim, no positions, q, k, v and o with
    attention_bias, within the layer's sliding_windows where the forward is given an attention mask (eager attention
    computes the square either way), a second LayerNorm and fc1 → intermediate_size and fc2 back with biases and
    hidden_act; a final LayerNorm. The decoder (the top-level keys): MoonshineDecoder's layers (as Moonshine's:
    causal self-attention with partial rotary positions, cross-attention, fc1 → 2 × intermediate_size gating by
    hidden_act, fc2 back, three LayerNorms without biases; q, k, v with attention_bias, o without), a final norm,
    embed_tokens and proj_out (tied by tie_word_embeddings, default false); pos_emb, max_position_embeddings rows at
    the encoder's width, added to the encoder's output (here the encoder's position table: the same parameters and
    adds), and proj, a linear without a bias to the decoder's width where the two differ, which every cross-attention
    reads."""
    if c.data.get("pad_head_dim_to_multiple_of") is not None:
        raise c.fail("pad_head_dim_to_multiple_of", "heads padded for the attention kernel are not read")
    if c.bool("attention_bias", False):  # the cross-attention's q, k and v would take biases and its o none
        raise c.fail("attention_bias", "biased q, k and v beside an unbiased o in the cross-attention are not read")
    e = _encoder(c)
    d, ed = c.int("hidden_size"), e.int("hidden_size")
    heads, layers = c.int("num_attention_heads"), e.int("num_hidden_layers")
    hd = c.int("head_dim", d // heads)
    kv = c.int("num_key_value_heads", heads)
    e_heads = e.int("num_attention_heads")
    frame = round(e.int("sample_rate") * e.float("frame_ms", 5.0) / 1000)
    if frame < 1:
        raise e.fail("frame_ms", "a frame of no samples")
    before, after = _windows(e, layers)
    e_bias = e.bool("attention_bias", False)
    encoder_attention = {
        "n_heads": e_heads,
        "n_kv_heads": e.int("num_key_value_heads", e_heads),
        "head_dim": e.int("head_dim", ed // e_heads),
        "qkv_bias": e_bias,
        "o_bias": e_bias,
    }
    fraction = c.rope_fraction(1.0)
    encoder_ffn = {"kind": "dense", "d_ff": e.int("intermediate_size"), "bias": True, "activation": e.activation("hidden_act", "gelu")}
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": d,
        "n_layers": c.int("num_hidden_layers"),
        "context_length": c.int("max_position_embeddings", 4096),
        "positions": "rotary",
        "tie_embeddings": c.bool("tie_word_embeddings", False),
        "attention": {"n_heads": heads, "n_kv_heads": kv, "head_dim": hd, "rotary_dim": int(hd * fraction)},
        "ffn": {"kind": "gated", "d_ff": c.int("intermediate_size"), "bias": True, "activation": c.activation("hidden_act", "silu")},
        "norm": {"kind": "layernorm", "bias": False, "per_layer": 2, "final": True},
        "encoder": {
            "layers": {
                "d_model": ed,
                "n_layers": layers,
                "attention": encoder_attention,
                "ffn": encoder_ffn,
                "positions": "none",
                "windows": tuple(before),
                "aheads": tuple(after),
            },
            "final_norm": True,
            "frames": frame,
            "position_rows": c.int("max_position_embeddings", 4096),
            "bridge": ed != d,
            "bridge_bias": False,
            "cross_head_dim": hd,
            "cross_kv_heads": kv,
        },
    }
