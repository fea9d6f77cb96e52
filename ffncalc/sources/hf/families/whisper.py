"""Whisper (Radford et al. 2022, Robust Speech Recognition via Large-Scale Weak Supervision, §2.2): a speech encoder
over a 30-s window of log-mel frames and a text decoder attending to it, as transformers' WhisperForConditionalGeneration
builds them."""

from __future__ import annotations

from ..config import Config, family
from .bart import LAYER_MODULES, STACKS  # the same layers' module names, and the encoder beside the decoder

TOP_MODULES = (
    (r"embed_tokens$", "embed"),
    (r"embed_positions$", "pos_embed"),
    (r"conv1$", "conv1"),
    (r"conv2$", "conv2"),
    (r"((encoder|decoder)\.)?layer_norm$", "final_norm"),  # the encoder's, read within its stack: layer_norm
    (r"proj_out$", "lm_head"),
)


@family("whisper", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=STACKS)
def whisper(c: Config) -> dict:
    """WhisperConfig / WhisperForConditionalGeneration: the encoder's conv1 (num_mel_bins -> d_model, kernel 3) and
    conv2 (stride 2) over 2 × max_source_positions frames (3,000: 30 s), GELUs after each, its learned table of
    max_source_positions rows (1,500), encoder_layers pre-norm WhisperEncoderLayers and a final layer_norm; the
    decoder's embed_tokens (vocab_size) and a learned table of max_target_positions rows (448), decoder_layers
    layers with self-attention and the cross-attention (encoder_attn) each before the FFN, a final layer_norm, and
    proj_out tied to embed_tokens. Every attention's k_proj has no bias (its q, v and out_proj have one), the FFNs
    fc1 and fc2 have biases, activation_function (gelu). FLOPs: the encoder over its one window whatever the decoder
    reads (source_length max_source_positions)."""
    d = c.int("d_model")
    act = c.activation("activation_function", "gelu")
    source = c.int("max_source_positions", 1500)

    def layers(prefix: str) -> dict:
        return {
            "d_model": d,
            "n_layers": c.int(f"{prefix}_layers"),
            "attention": {"n_heads": c.int(f"{prefix}_attention_heads"), "qkv_bias": True, "k_bias": False, "o_bias": True},
            "ffn": {"kind": "dense", "d_ff": c.int(f"{prefix}_ffn_dim"), "bias": True, "activation": act},
            "positions": "learned",
        }

    decoder = layers("decoder")
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": d,
        "n_layers": decoder["n_layers"],
        "context_length": c.int("max_target_positions", 448),
        "positions": "learned",
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "attention": decoder["attention"],
        "ffn": decoder["ffn"],
        "norm": {"kind": "layernorm", "per_layer": 2, "final": True, "placement": "pre"},
        "encoder": {
            "layers": layers("encoder"),
            "position_rows": source,
            "final_norm": True,
            "cross_bias": True,
            "cross_k_bias": False,
            "mel_bins": c.int("num_mel_bins", 80),
            "source_length": source,
        },
    }
