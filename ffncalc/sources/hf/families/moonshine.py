"""Moonshine (Jeffries et al. 2024, "Moonshine: Speech Recognition for Live Transcription and Voice Commands"): a
convolutional front end over the raw waveform before a rotary encoder, and a decoder attending to it, as transformers'
MoonshineForConditionalGeneration builds them."""

from __future__ import annotations

from ..config import Config, family

LAYER_MODULES = (
    (r"encoder_attn\.q_proj$", "encoder.cross.q"),
    (r"encoder_attn\.k_proj$", "encoder.cross.k"),
    (r"encoder_attn\.v_proj$", "encoder.cross.v"),
    (r"encoder_attn\.o_proj$", "encoder.cross.o"),
    (r"(input_layernorm|post_attention_layernorm|final_layernorm)$", "norms"),
    # fc1: the encoder's up projection; the decoder's fused value half and gate (an encoder's gate is none, 0)
    (r"fc1$", "ffn.gate+up"),
    (r"fc2$", "ffn.down"),
)
TOP_MODULES = (
    (r"embed_tokens$", "embed"),
    (r"conv1$", "conv1"),
    (r"conv2$", "conv2"),
    (r"conv3$", "conv3"),
    (r"groupnorm$", "groupnorm"),
    (r"proj_out$", "lm_head"),
    (r"((encoder\.)?layer_norm|decoder\.norm)$", "final_norm"),  # the encoder's, read within its stack: layer_norm
)


@family("moonshine", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=((r"encoder\.", "encoder."),))
def moonshine(c: Config) -> dict:
    """MoonshineConfig / MoonshineForConditionalGeneration: the encoder's conv1 (1 → hidden_size, kernel 127, stride 64,
    no bias) with a tanh, groupnorm (one group), conv2 (→ 2 × hidden_size, kernel 7, stride 3) and conv3 (→ hidden_size,
    kernel 3, stride 2) with GELUs; encoder_num_hidden_layers MoonshineEncoderLayers (input_layernorm, self-attention
    of encoder_num_attention_heads over encoder_num_key_value_heads with partial rotary positions, post_attention_layernorm,
    fc1 → intermediate_size and fc2 back with biases and encoder_hidden_act), a final layer_norm. The decoder: embed_tokens
    (vocab_size) tied to proj_out, decoder_num_hidden_layers layers of causal self-attention, the cross-attention
    (encoder_attn, no rotary) and MoonshineDecoderMLP (fc1 → 2 × intermediate_size with a bias, its second half through
    decoder_hidden_act gating the first, fc2 back), a norm before each (input_layernorm, post_attention_layernorm,
    final_layernorm), a final norm. Every norm a LayerNorm without a bias; q, k, v with attention_bias, o without;
    rotary over int(head_dim × partial_rotary_factor) features (MoonshineRotaryEmbedding)."""
    if c.data.get("pad_head_dim_to_multiple_of") is not None:
        raise c.fail("pad_head_dim_to_multiple_of", "heads padded for the attention kernel are not read")
    d, ff = c.int("hidden_size"), c.int("intermediate_size")
    rope = c.data.get("rope_parameters") or {}
    fraction = rope.get("partial_rotary_factor", 0.9) if isinstance(rope, dict) else 0.9
    bias = c.bool("attention_bias", False)
    if bias:  # the cross-attention's q, k and v would take biases and its o none: not a form the encoder part holds
        raise c.fail("attention_bias", "biased q, k and v beside an unbiased o in the cross-attention are not read")

    def attention(prefix: str) -> dict:
        heads = c.int(f"{prefix}_num_attention_heads")
        hd = d // heads
        kv = c.int(f"{prefix}_num_key_value_heads", heads)
        return {"n_heads": heads, "n_kv_heads": kv, "head_dim": hd, "qkv_bias": bias, "rotary_dim": int(hd * fraction)}

    decoder = attention("decoder")
    encoder_ffn = {"kind": "dense", "d_ff": ff, "bias": True, "activation": c.activation("encoder_hidden_act", "gelu")}
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": d,
        "n_layers": c.int("decoder_num_hidden_layers"),
        "context_length": c.int("max_position_embeddings", 512),
        "positions": "rotary",
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "attention": decoder,
        "ffn": {"kind": "gated", "d_ff": ff, "bias": True, "activation": c.activation("decoder_hidden_act", "silu")},
        "norm": {"kind": "layernorm", "bias": False, "per_layer": 2, "final": True},
        "encoder": {
            "layers": {
                "d_model": d,
                "n_layers": c.int("encoder_num_hidden_layers"),
                "attention": attention("encoder"),
                "ffn": encoder_ffn,
                "positions": "rotary",
            },
            "final_norm": True,
            "cross_head_dim": decoder["head_dim"],
            "cross_kv_heads": decoder["n_kv_heads"],
            "waveform": True,
        },
    }
