"""Canary (NVIDIA 2024, "Canary-1B") and Cohere ASR: a Conformer speech encoder (Parakeet's ParakeetEncoder: 2-D
convolutional subsampling, then Conformer layers) and a Transformer decoder whose every layer cross-attends the
encoder's output, as transformers' CanaryForConditionalGeneration and CohereAsrForConditionalGeneration build them."""

from __future__ import annotations

from ..config import Config, family

LAYER_MODULES = (
    (r"encoder_attn\.q_proj$", "encoder.cross.q"),
    (r"encoder_attn\.k_proj$", "encoder.cross.k"),
    (r"encoder_attn\.v_proj$", "encoder.cross.v"),
    (r"encoder_attn\.o_proj$", "encoder.cross.o"),
    (r"feed_forward1\.linear1$", "attn.ff1.up"),
    (r"feed_forward1\.linear2$", "attn.ff1.down"),
    (r"feed_forward2\.linear1$", "ffn.up"),
    (r"feed_forward2\.linear2$", "ffn.down"),
    (r"self_attn\.relative_k_proj$", "attn.rel"),
    (r"self_attn$", "attn.pos_bias"),  # bias_u and bias_v, held by the attention module itself
    (r"self_attn\.o_proj$", "attn.o"),
    (r"conv\.pointwise_conv1$", "attn.conv.up"),
    (r"conv\.depthwise_conv$", "attn.conv.depthwise"),
    (r"conv\.norm$", "attn.conv.norm"),
    (r"conv\.pointwise_conv2$", "attn.conv.down"),
    (r"mlp\.fc1$", "ffn.up"),
    (r"mlp\.fc2$", "ffn.down"),
    (r"(norm_feed_forward1|norm_self_att|norm_conv|norm_feed_forward2|norm_out|final_layernorm)$", "norms"),
)
TOP_MODULES = (
    (r"subsampling\.layers\.0$", "sub.conv0"),
    *((rf"subsampling\.layers\.{3 * i - 1}$", f"sub.dw{i}") for i in range(1, 8)),
    *((rf"subsampling\.layers\.{3 * i}$", f"sub.pw{i}") for i in range(1, 8)),
    (r"subsampling\.linear$", "sub.linear"),
    (r"decoder\.proj$", "encoder.bridge"),
    (r"embed_tokens$", "embed"),
    (r"pos_emb$", "pos_embed"),
    (r"embedding_layernorm$", "embed_norm"),
    (r"proj_out$", "lm_head"),
    (r"norm$", "final_norm"),
)
STACKS = ((r"model\.encoder\.", "encoder."),)

# ParakeetEncoderConfig's and CanaryDecoderConfig's defaults (transformers 5.23): an entry states what differs
ENCODER = {
    "hidden_size": 1024,
    "num_hidden_layers": 32,
    "num_attention_heads": 8,
    "intermediate_size": 4096,
    "hidden_act": "silu",
    "attention_bias": True,
    "convolution_bias": True,
    "conv_kernel_size": 9,
    "subsampling_factor": 8,
    "subsampling_conv_channels": 256,
    "subsampling_conv_kernel_size": 3,
    "subsampling_conv_stride": 2,
    "num_mel_bins": 128,
    "max_position_embeddings": 5000,
}
DECODER = {
    "hidden_size": 1024,
    "num_hidden_layers": 8,
    "num_attention_heads": 8,
    "head_dim": 128,
    "intermediate_size": 4096,
    "hidden_act": "relu",
    "attention_bias": True,
    "max_position_embeddings": 1024,
    "vocab_size": 16384,
}


def entry(c: Config, key: str, defaults: dict) -> Config:
    data = c.data.get(key)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise c.fail(key, f"expected an object of {key} keys, got {data!r}")
    return Config({**defaults, **data}, c.text, c.source, start=c.start)


def conformer(enc: Config) -> dict:
    """The Parakeet encoder as the encoder part: ParakeetEncoderSubsamplingConv2D (a Conv2d of subsampling_conv_channels
    filters and log2(subsampling_factor) − 1 depthwise-separable ones, kernel subsampling_conv_kernel_size, stride 2,
    then linear to hidden_size), and num_hidden_layers ParakeetEncoderBlocks (blocks/conformer.py; feed_forward2 the
    FFN slot); scale_input multiplies; no final norm beyond each block's norm_out."""
    factor = enc.int("subsampling_factor")
    layers = factor.bit_length() - 1
    if factor != 2**layers or enc.int("subsampling_conv_stride") != 2:
        raise enc.fail("subsampling_factor", "a subsampling of stride 2 convolutions to a power of two is read")
    d, heads, act, bias = (
        enc.int("hidden_size"),
        enc.int("num_attention_heads"),
        enc.activation("hidden_act", "silu"),
        enc.bool("attention_bias", True),
    )
    return {
        "layers": {
            "d_model": d,
            "n_layers": enc.int("num_hidden_layers"),
            "attention": {
                "kind": "conformer",
                "n_heads": heads,
                "qkv_bias": bias,
                "o_bias": bias,
                "d_ff": enc.int("intermediate_size"),
                "activation": act,
                "kernel": enc.int("conv_kernel_size"),
                "conv_bias": enc.bool("convolution_bias", True),
            },
            "ffn": {"kind": "dense", "d_ff": enc.int("intermediate_size"), "bias": bias, "activation": act},
            "positions": "none",
        },
        "features": enc.int("num_mel_bins"),
        "sub_layers": layers,
        "sub_channels": enc.int("subsampling_conv_channels"),
        "sub_kernel": enc.int("subsampling_conv_kernel_size"),
    }


def decoder(c: Config, dec: Config, *, learned: bool, tie: bool) -> dict:
    """The Transformer decoder: embed_tokens (vocab_size × hidden_size), its positions (a fixed sinusoidal buffer, or
    a learned table) and embedding_layernorm; num_hidden_layers of input_layernorm, self_attn (q, k, v, o of
    num_attention_heads × head_dim, biases with attention_bias), post_attention_layernorm, encoder_attn (the same, from
    the encoder's output), final_layernorm and the MLP (fc1, hidden_act, fc2, biases); a final norm; proj_out (a bias of
    its own)."""
    bias = dec.bool("attention_bias", True)
    heads = dec.int("num_attention_heads")
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": dec.int("vocab_size"),
        "d_model": dec.int("hidden_size"),
        "n_layers": dec.int("num_hidden_layers"),
        "context_length": dec.int("max_position_embeddings"),
        "positions": "learned" if learned else "sinusoidal",
        "tie_embeddings": tie,
        "lm_head_bias": True,
        "embedding_norm": True,
        "attention": {
            "n_heads": heads,
            "head_dim": dec.int("head_dim", dec.int("hidden_size") // heads),
            "qkv_bias": bias,
            "o_bias": bias,
        },
        "ffn": {
            "kind": "dense",
            "d_ff": dec.int("intermediate_size"),
            "bias": True,
            "activation": dec.activation("hidden_act", "relu"),
        },
        "norm": {"kind": "layernorm", "per_layer": 2, "final": True},
    }


@family("canary", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=STACKS)
def canary(c: Config) -> dict:
    """CanaryConfig / CanaryForConditionalGeneration: encoder_config a ParakeetEncoderConfig (conformer), decoder_config
    a CanaryDecoderConfig (decoder: CanaryPositionalEmbedding a fixed sinusoidal buffer); proj_out tied to the decoder's
    embed_tokens (tie_word_embeddings, default true), with a bias. The encoder's output is the decoder's width."""
    enc, dec = entry(c, "encoder_config", ENCODER), entry(c, "decoder_config", DECODER)
    spec = decoder(c, dec, learned=False, tie=c.bool("tie_word_embeddings", True))
    spec["encoder"] = {**conformer(enc), "cross_bias": spec["attention"]["qkv_bias"], "cross_head_dim": spec["attention"]["head_dim"]}
    if enc.int("hidden_size") != spec["d_model"]:
        raise enc.fail("hidden_size", f"Canary's cross-attention reads the encoder at the decoder's width, {spec['d_model']}")
    return spec


@family("cohere_asr", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=STACKS)
def cohere_asr(c: Config) -> dict:
    """CohereAsrConfig / CohereAsrForConditionalGeneration: encoder_config a ParakeetEncoderConfig (conformer), the
    decoder's keys at the top (decoder); pos_emb a learned table of max_position_embeddings rows; CohereAsrDecoder.proj
    (encoder hidden_size → hidden_size, a bias) over the encoder's output before every cross-attention; proj_out untied
    (tie_word_embeddings, default false), with a bias."""
    enc = entry(c, "encoder_config", {**ENCODER, "hidden_size": 1280, "num_hidden_layers": 48, "intermediate_size": 5120})
    spec = decoder(c, c, learned=True, tie=c.bool("tie_word_embeddings", False))
    spec["encoder"] = {
        **conformer(enc),
        "cross_bias": spec["attention"]["qkv_bias"],
        "cross_head_dim": spec["attention"]["head_dim"],
        "bridge": True,
    }
    return spec
