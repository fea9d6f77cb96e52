"""Kyutai's speech-to-text (Kyutai 2025, "Delayed Streams Modeling"; kyutai/stt-2.6b-en): a decoder over frames of text
and audio codebooks (Défossez et al. 2024, "Moshi": Mimi's codes of a 12.5 Hz frame), with the Mimi codec beside it,
as transformers' KyutaiSpeechToTextForConditionalGeneration builds them."""

from __future__ import annotations

from ..config import Config, attention, common, family, gated

LAYER_MODULES = (
    (r"self_attn\.q_proj\.linear$", "attn.q"),
    (r"self_attn\.k_proj\.linear$", "attn.k"),
    (r"self_attn\.v_proj\.linear$", "attn.v"),
    (r"self_attn\.o_proj\.linear$", "attn.o"),
    (r"mlp\.fc1$", "ffn.gate+up"),  # one Linear to both halves, the first the gate's (KyutaiSpeechToTextGatingMLP)
    (r"mlp\.fc2$", "ffn.down"),
    (r"(input|post_attention)_layernorm$", "norms"),
    (r"", ""),  # within the codec, each of its stacks one component (its prefix)
)
TOP_MODULES = (
    (r"embed_tokens\.embed_tokens$", "embed"),
    (r"lm_head$", "lm_head"),
    (r"model\.norm$", "final_norm"),
    (r"", ""),  # within the codec, each of its modules one component (its prefix)
)
STACKS = tuple(
    (rf"codec_model\.{path}\.", f"codec.{name}")
    for path, name in (
        ("encoder\\.encoder_seanet", "encoder_seanet"),
        ("encoder\\.encoder_transformer\\.layers\\.\\d+", "encoder_transformer"),  # past the layer: its names are the LM's
        ("encoder\\.downsample", "downsample"),
        ("decoder\\.upsample", "upsample"),
        ("decoder\\.decoder_transformer\\.layers\\.\\d+", "decoder_transformer"),
        ("decoder\\.decoder_seanet", "decoder_seanet"),
        ("quantizer", "quantizer"),
    )
)

# MimiConfig's defaults (transformers 5.23) for the keys read: a codec_config states only what differs from them
MIMI = {
    "model_type": "mimi",
    "sampling_rate": 24_000,
    "audio_channels": 1,
    "hidden_size": 512,
    "num_filters": 64,
    "num_residual_layers": 1,
    "upsampling_ratios": [8, 6, 5, 4],
    "kernel_size": 7,
    "last_kernel_size": 3,
    "residual_kernel_size": 3,
    "compress": 2,
    "num_hidden_layers": 8,
    "num_attention_heads": 8,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "intermediate_size": 2048,
    "attention_bias": False,
    "upsample_groups": 512,
    "vector_quantization_hidden_dimension": 256,
}


@family("kyutai_speech_to_text", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=STACKS)
def kyutai_speech_to_text(c: Config) -> dict:
    """KyutaiSpeechToTextConfig / KyutaiSpeechToTextForConditionalGeneration: model.embed_tokens, one table of
    vocab_size (4,001 text tokens) + num_codebooks (32) × codebook_vocab_size (2,049) + 1 rows × hidden_size (2,048),
    each frame the sum of its text token's row and its 32 codes' (KyutaiSpeechToTextEmbeddings: a position is a frame);
    num_hidden_layers (48) layers of input_layernorm, causal self_attn (q, k, v, o of num_attention_heads 32 and
    num_key_value_heads 32 × head_dim 64, no biases, rotary; the mask create_causal_mask's: sliding_window is not applied
    by the 5.23 class), post_attention_layernorm and KyutaiSpeechToTextGatingMLP (fc1 hidden → ffn_dim 11,264, its halves
    silu(first) ⊙ second, fc2 ffn_dim / 2 → hidden; no biases), RMSNorms with a weight; a final norm; lm_head
    (hidden → vocab_size, no bias, untied). codec_model: MimiModel of codec_config (parts/codec.py), held and not run by
    the forward, which reads the codes."""
    spec = {
        **common(c, tie=False, context_default=750),
        "attention": attention(c),
        "ffn": gated(c, width=c.int("ffn_dim") // 2),
        "norm": {"kind": "rmsnorm"},
    }
    spec["attention"]["head_dim"] = c.int("head_dim", 64)
    rows = c.int("vocab_size") + c.int("num_codebooks") * c.int("codebook_vocab_size") + 1
    spec["embedding"] = {"vocab_size": rows}
    codec = c.data.get("codec_config")
    if codec is not None and not isinstance(codec, dict):
        raise c.fail("codec_config", f"expected an object of MimiConfig keys, got {codec!r}")
    m = Config({**MIMI, **(codec or {})}, c.text, c.source, start=c.start)
    ratios = list(m.data["upsampling_ratios"])
    hop, rate = _product(ratios), m.int("sampling_rate", 24000)
    # MimiConfig: frame_rate (a stated one, or sampling_rate / frame_size, hop × 2), encodec_frame_rate ⌈rate / hop⌉
    frame_rate = m.data.get("frame_rate") or rate / (2 * hop)
    stride = int(-(-rate // hop) / frame_rate) if frame_rate != -(-rate // hop) else 0
    spec["codec"] = {
        "hidden": m.int("hidden_size"),
        "filters": m.int("num_filters"),
        "ratios": tuple(ratios),
        "kernel": m.int("kernel_size"),
        "last_kernel": m.int("last_kernel_size"),
        "residual_kernel": m.int("residual_kernel_size"),
        "residual_layers": m.int("num_residual_layers"),
        "compress": m.int("compress"),
        "channels": m.int("audio_channels"),
        "layers": m.int("num_hidden_layers"),
        "heads": m.int("num_attention_heads"),
        "kv_heads": m.int("num_key_value_heads", m.int("num_attention_heads")),
        "head_dim": m.int("head_dim", m.int("hidden_size") // m.int("num_attention_heads")),
        "intermediate": m.int("intermediate_size"),
        "attention_bias": m.bool("attention_bias", False),
        "stride": stride,
        "upsample_groups": m.int("upsample_groups"),
        "quantizer_width": m.int("vector_quantization_hidden_dimension"),
    }
    return spec


def _product(values: list) -> int:
    out = 1
    for v in values:
        out *= v
    return out
