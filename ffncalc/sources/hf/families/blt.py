"""The Byte Latent Transformer (Pagnoni et al. 2024; transformers' BltForCausalLM): the local decoder over bytes as
the model's layers, the patcher, hashed n-gram embeddings, local encoder and global transformer beside them
(parts/latent.py)."""

from __future__ import annotations

from ..config import Config, family

CROSS = (("q_proj", "q"), ("k_proj", "k"), ("v_proj", "v"), ("o_proj", "o"), ("q_norm", "q_norm"), ("k_norm", "k_norm"))
TOP_MODULES = (
    (r"encoder_hash_tok_embedding$", "hash_embed"),
    (r"local_encoder\.embed_tokens$", "embed"),
    (r"local_encoder\.patch_embedding_projection$", "encoder.patch_proj"),
    (r"local_decoder\.patch_embedding_projection$", "decoder.patch_proj"),
    (r"global_transformer\.token_embedding_projection$", "latent.embed_proj"),
    *(
        (rf"local_{side}coder\.cross_attn_layers\.\d+\.{module}$", f"{side}coder.cross.{ours}")
        for side in ("en", "de")
        for module, ours in CROSS
    ),
)
MODEL_STACKS = (
    (r"patcher\.", "patcher."),
    (r"local_encoder\.(?=layers\.)", "encoder."),
    (r"global_transformer\.(?=layers\.)", "latent."),
)

# The sub-configurations' defaults (BltLocalEncoderConfig, BltLocalDecoderConfig, BltGlobalTransformerConfig,
# BltPatcherConfig): width, heads, layers, FFN width (None: int(8·width / 3)).
DEFAULTS = {
    "encoder_config": {
        "hidden_size": 1024,
        "num_attention_heads": 16,
        "num_hidden_layers": 1,
        "intermediate_size": None,
        "vocab_size": 260,
        "cross_attn_all_layers": False,
        "cross_attn_k": 2,
    },
    "decoder_config": {
        "hidden_size": 1024,
        "num_attention_heads": 16,
        "num_hidden_layers": 9,
        "intermediate_size": 2816,
        "vocab_size": 260,
        "cross_attn_all_layers": True,
        "cross_attn_k": 2,
        "hidden_size_global": 2048,
    },
    "global_config": {"hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 25, "intermediate_size": 5632},
    "patcher_config": {
        "hidden_size": 768,
        "num_attention_heads": 12,
        "num_hidden_layers": 14,
        "intermediate_size": 2048,
        "vocab_size": 260,
        "sliding_window": 512,
    },
}


def _part(c: Config, key: str) -> Config:
    data = c.data.get(key) or {}
    if not isinstance(data, dict):
        raise c.fail(key, f"expected a mapping, got {type(data).__name__}")
    return Config({**DEFAULTS[key], **{k: v for k, v in data.items() if v is not None}}, c.text, c.source)


def _stack(c: Config, window: int | None, act: str = "hidden_act") -> dict:
    """A BltTransformerLayer stack: q/k/v/o without biases (head_dim = width // heads), SiLU-gated MLP."""
    d, heads = c.int("hidden_size"), c.int("num_attention_heads")
    attention = {"kind": "mha", "n_heads": heads, "n_kv_heads": c.int("num_key_value_heads", heads), "head_dim": d // heads}
    if window is not None:
        attention["window"] = window
    ffn = {
        "kind": "gated",
        "d_ff": c.int("intermediate_size", int(8 * d / 3)),
        "activation": c.activation(act, "silu") if act else "silu",
        "bias": False,
    }
    return {"d_model": d, "n_layers": c.int("num_hidden_layers"), "attention": attention, "ffn": ffn}


@family("blt", top_modules=TOP_MODULES, model_stacks=MODEL_STACKS)
def blt(c: Config) -> dict:
    """BltConfig / BltForCausalLM: vocab_size 260, max_position_embeddings 4096, cross_attn_k 2, patch_size 4,
    patch_in_forward true, local_attention_window_len 512, encoder_hash_byte_group_size [3, 4, 5, 6, 7, 8] × 1
    hash function of encoder_hash_byte_group_vocab 500002 rows, untied. BltLocalDecoder (decoder_config: 1024 wide,
    16 heads, 9 layers, FFN 2816, a cross-attention before every layer) is the model's stack, its norm the final norm,
    lm_head at its width over vocab_size; the byte embedding over encoder_config.vocab_size (vocab_size where tied).
    Beside it (parts/latent.py): BltLocalEncoder (encoder_config: 1024, 16 heads, 1 layer, FFN int(8·1024/3) = 2730,
    the model's embedding, a cross-attention after its last layer, patch_embedding_projection
    d -> k·d), BltGlobalTransformer (global_config: 2048, 16 heads, 25 layers, FFN 5632, no final norm;
    token_embedding_projection k·d_e -> d_g where they differ), the decoder's patch_embedding_projection d_g -> k·d,
    encoder_hash_tok_embedding, and BltPatcher (patcher_config: 768, 12 heads, 14 layers, FFN 2048, sliding window
    512, its own embedding, norm and head) when patch_in_forward. The encoder and decoder attend a sliding window of
    local_attention_window_len (null: full causal), the global transformer every earlier patch. Every attention has
    rotary positions and no biases; every norm is an RMSNorm. FLOPs: patches of patch_size bytes each (the FLOP
    convention of parts/latent.py); the patcher runs over every byte."""
    enc, dec, glob = _part(c, "encoder_config"), _part(c, "decoder_config"), _part(c, "global_config")
    k = c.int("cross_attn_k", 2)
    for part, name in ((enc, "encoder_config"), (dec, "decoder_config")):
        if part.int("cross_attn_k") != k:
            raise c.fail(
                name, f"cross_attn_k {part.int('cross_attn_k')} differs from the model's {k}: transformers' forward cannot run it"
            )
    d, g = dec.int("hidden_size"), glob.int("hidden_size")
    if enc.int("hidden_size") != d:
        raise c.fail(
            "encoder_config",
            f"the local encoder's width {enc.int('hidden_size')} differs from the "
            f"decoder's {d}: the embedding and the head would differ in width",
        )
    if dec.int("hidden_size_global") != g:
        raise c.fail(
            "decoder_config",
            f"hidden_size_global {dec.int('hidden_size_global')} differs from the global "
            f"transformer's width {g}: transformers' forward cannot run it",
        )
    vocab, tied = c.int("vocab_size", 260), c.bool("tie_word_embeddings", False)
    # BltLocalEncoder.embed_tokens has encoder_config.vocab_size rows and BltForCausalLM.lm_head the model's
    # vocab_size; tied (BltForCausalLM._tied_weights_keys), the embedding is lm_head's weight, of the model's vocab_size
    rows = vocab if tied else enc.int("vocab_size")
    window = c.int("local_attention_window_len", 512) if c.data.get("local_attention_window_len", 512) is not None else None
    decoder = _stack(dec, window)
    sizes = c.data.get("encoder_hash_byte_group_size") or [3, 4, 5, 6, 7, 8]
    if not isinstance(sizes, list):
        raise c.fail("encoder_hash_byte_group_size", f"expected a list of byte-group sizes, got {sizes!r}")
    latent = {
        "encoder": _stack(enc, window),
        "latent": _stack(glob, None),
        "cross_k": k,
        "encoder_cross": "all" if enc.bool("cross_attn_all_layers", False) else "last",
        "decoder_cross": "all" if dec.bool("cross_attn_all_layers", True) else "first",
        "hash_tables": c.int("encoder_hash_byte_group_nb_functions", 1, positive=False) * len(sizes),
        "hash_vocab": c.int("encoder_hash_byte_group_vocab", 500002, positive=False),
        "patch_size": c.int("patch_size", 4),
    }
    if c.bool("patch_in_forward", True):
        patcher = _part(c, "patcher_config")
        stated = c.data.get("patcher_config") or {}
        pw = patcher.int("sliding_window") if stated.get("sliding_window", 512) is not None else None
        latent["patcher"] = {"vocab_size": patcher.int("vocab_size"), "layers": _stack(patcher, pw, act="")}
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": vocab,
        "d_model": d,
        "n_layers": decoder["n_layers"],
        "context_length": c.int("max_position_embeddings", 4096),
        "positions": "rotary",
        "tie_embeddings": tied,
        "attention": decoder["attention"],
        "ffn": decoder["ffn"],
        "norm": {"kind": "rmsnorm", "per_layer": 2, "final": True},
        "byte_latent": latent,
        **({"embedding": {"vocab_size": rows}} if rows != vocab else {}),
    }
