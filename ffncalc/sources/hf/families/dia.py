"""Dia (Nari Labs 2025, "Dia-1.6B"): a byte-level text encoder and a decoder over the frames of an audio codec's
channels (codebooks), each decoder layer with a cross-attention to the encoder's output, as transformers'
DiaForConditionalGeneration builds them."""

from __future__ import annotations

from ..config import Config, family

LAYER_MODULES = (
    (r"cross_attention\.q_proj$", "encoder.cross.q"),
    (r"cross_attention\.k_proj$", "encoder.cross.k"),
    (r"cross_attention\.v_proj$", "encoder.cross.v"),
    (r"cross_attention\.o_proj$", "encoder.cross.o"),
    (r"self_attention\.o_proj$", "attn.o"),
    (r"mlp\.gate_up_proj$", "ffn.gate+up"),
    (r"(pre_sa_norm|post_sa_norm|pre_ca_norm|pre_mlp_norm)$", "norms"),
)
TOP_MODULES = (
    (r"embedding$", "embed"),  # the encoder's, read within its stack: encoder.embed
    (r"embeddings\.embed$", "embed"),
    (r"logits_dense$", "lm_head"),
    (r"((encoder|decoder)\.)?norm$", "final_norm"),  # the encoder's, read within its stack: norm
)


# DiaEncoderConfig's and DiaDecoderConfig's defaults (transformers 5.23): an entry states only what differs from them
DEFAULTS = {
    "encoder_config": {
        "max_position_embeddings": 1024,
        "num_hidden_layers": 12,
        "hidden_size": 1024,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "head_dim": 128,
        "intermediate_size": 4096,
        "vocab_size": 256,
        "hidden_act": "silu",
    },
    "decoder_config": {
        "max_position_embeddings": 3072,
        "num_hidden_layers": 18,
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_attention_heads": 16,
        "num_key_value_heads": 4,
        "head_dim": 128,
        "cross_num_attention_heads": 16,
        "cross_head_dim": 128,
        "cross_num_key_value_heads": 16,
        "cross_hidden_size": 1024,
        "vocab_size": 1028,
        "hidden_act": "silu",
        "num_channels": 9,
    },
}


def part(c: Config, key: str) -> Config:
    """The encoder's or decoder's configuration (DiaEncoderConfig, DiaDecoderConfig): its entry over the class's
    defaults (an absent entry is all defaults)."""
    data = c.data.get(key)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise c.fail(key, f"expected an object of {key} keys, got {data!r}")
    return Config({**DEFAULTS[key], **data}, c.text, c.source, start=c.start)


@family("dia", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=((r"encoder\.", "encoder."),))
def dia(c: Config) -> dict:
    """DiaConfig / DiaForConditionalGeneration: model.encoder (encoder_config): embedding (vocab_size, 256 bytes, ×
    hidden_size, 1024), num_hidden_layers (12) DiaEncoderLayers of pre_sa_norm, self_attention (q, k, v of
    num_attention_heads (16) × head_dim (128), o back; no biases; rotary, bidirectional), post_sa_norm and DiaMLP
    (gate_up_proj hidden → 2 × intermediate_size (4096), SiLU-gated, down_proj back), every norm an RMSNorm with a
    weight, and a final norm. model.decoder (decoder_config): DiaMultiChannelEmbedding, one table of num_channels (9)
    × vocab_size (1028) rows × hidden_size (2048), each frame the sum of its channels' rows; num_hidden_layers (18)
    DiaDecoderLayers of pre_sa_norm, causal self_attention (num_attention_heads 16, num_key_value_heads 4, head_dim
    128, rotary), pre_ca_norm, cross_attention (q from the decoder, k and v from the encoder's output at
    cross_hidden_size, cross_num_attention_heads (16) and cross_num_key_value_heads (16) of cross_head_dim (128), o
    back; no rotary), pre_mlp_norm and DiaMLP; a final norm. logits_dense: hidden_size → num_channels × vocab_size, no
    bias, untied. A position is one frame (its channels' codes together)."""
    enc, dec = part(c, "encoder_config"), part(c, "decoder_config")
    d, channels, vocab = dec.int("hidden_size"), dec.int("num_channels"), dec.int("vocab_size")
    heads = dec.int("num_attention_heads")
    if dec.int("cross_num_attention_heads") != heads:
        raise dec.fail("cross_num_attention_heads", f"a cross-attention of other heads than the self-attention's {heads} is not read")
    if dec.int("cross_hidden_size") != enc.int("hidden_size"):
        raise dec.fail("cross_hidden_size", f"the encoder's output is {enc.int('hidden_size')} wide")

    def layers(p: Config) -> dict:
        attention = {
            "n_heads": p.int("num_attention_heads"),
            "n_kv_heads": p.int("num_key_value_heads"),
            "head_dim": p.int("head_dim"),
        }
        ffn = {"kind": "gated", "d_ff": p.int("intermediate_size"), "activation": p.activation("hidden_act", "silu")}
        return {"d_model": p.int("hidden_size"), "n_layers": p.int("num_hidden_layers"), "attention": attention, "ffn": ffn}

    decoder = layers(dec)
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": channels * vocab,  # the table's rows and the head's outputs
        "d_model": d,
        "n_layers": decoder["n_layers"],
        "context_length": dec.int("max_position_embeddings"),
        "positions": "rotary",
        "tie_embeddings": False,
        "attention": decoder["attention"],
        "ffn": decoder["ffn"],
        "norm": {"kind": "rmsnorm", "per_layer": 2, "final": True},
        "encoder": {
            "layers": {**layers(enc), "positions": "rotary"},
            "table_rows": enc.int("vocab_size"),
            "final_norm": True,
            "cross_head_dim": dec.int("cross_head_dim"),
            "cross_kv_heads": dec.int("cross_num_key_value_heads"),
        },
    }
