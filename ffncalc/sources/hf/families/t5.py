"""T5 (Raffel et al. 2020) and its kin (T5 v1.1, Flan-T5, mT5): an encoder and a decoder of pre-norm layers with RMS
norms without biases, no position table but one table of relative-position buckets per stack (in its first layer,
read by every layer), bias-free projections, a ReLU or gated-GELU FFN, a final norm in each stack, one token table
shared by both stacks, and in every decoder layer a cross-attention to the encoder's output."""

from __future__ import annotations

from ..config import Config, alias, family

LAYER_MODULES = (
    (r"EncDecAttention\.q$", "encoder.cross.q"),
    (r"EncDecAttention\.k$", "encoder.cross.k"),
    (r"EncDecAttention\.v$", "encoder.cross.v"),
    (r"EncDecAttention\.o$", "encoder.cross.o"),
    (r"SelfAttention\.q$", "attn.q"),
    (r"SelfAttention\.k$", "attn.k"),
    (r"SelfAttention\.v$", "attn.v"),
    (r"SelfAttention\.o$", "attn.o"),
    (r"DenseReluDense\.wi$", "ffn.up"),
    (r"DenseReluDense\.wi_0$", "ffn.gate"),
    (r"DenseReluDense\.wi_1$", "ffn.up"),
    (r"DenseReluDense\.wo$", "ffn.down"),
    (r"layer_norm$", "norms"),
)
TOP_MODULES = (
    (r"shared$", "embed"),
    (r"embed_tokens$", "embed"),
    (r"final_layer_norm$", "final_norm"),
    # the first block holds its stack's table, which every block reads: a model-level component
    (r"block\.0\.layer\.0\.SelfAttention\.relative_attention_bias$", "relative_bias"),
)


@family(
    "t5",
    layer_modules=LAYER_MODULES,
    top_modules=TOP_MODULES,
    model_stacks=((r"encoder\.", "encoder."),),
)
def t5(c: Config) -> dict:
    """T5Config / T5ForConditionalGeneration: shared (vocab_size, default 32128, × d_model, 512) is both stacks'
    embed_tokens, and lm_head tied to it whatever tie_word_embeddings says: T5Config.__post_init__ (and MT5Config's)
    sets it true ("in fact we tie weights always"), the stated false (T5 v1.1, Flan-T5) only choosing
    scale_decoder_outputs, which changes no shape; their checkpoints' own lm_head is not loaded as a tensor of its
    own. Each stack:
    T5Block (num_layers, default 6, in the encoder; num_decoder_layers, default num_layers, in the decoder) of
    T5LayerSelfAttention (layer_norm, then SelfAttention's q, k, v of num_heads (8) heads of d_kv (64) and o, no
    biases), in the decoder T5LayerCrossAttention (layer_norm, EncDecAttention's q, k, v, o), and T5LayerFF
    (layer_norm, DenseReluDense: wi d -> d_ff (2048) and wo back, or with feed_forward_proj "gated-gelu" wi_0 and
    wi_1, no biases); the first block's SelfAttention holds relative_attention_bias (relative_attention_num_buckets,
    32, × heads), which every layer of its stack reads; final_layer_norm. Every norm an RMS norm with a weight."""
    d, heads, kv = c.int("d_model"), c.int("num_heads"), c.int("d_kv")
    proj = c.data.get("feed_forward_proj", "relu")
    if not isinstance(proj, str) or proj.split("-")[-1] not in ("relu", "gelu", "silu", "new"):
        raise c.fail("feed_forward_proj", f'expected "ACT" or "gated-ACT", got {proj!r}')
    gated = proj.startswith("gated-")
    act = {"gelu": "gelu_tanh", "new": "gelu_tanh"}.get(proj.split("-")[-1], proj.split("-")[-1])
    ffn = {"kind": "gated" if gated else "dense", "d_ff": c.int("d_ff"), "activation": act}
    attention = {"n_heads": heads, "head_dim": kv}
    buckets = c.int("relative_attention_num_buckets", 32)
    encoder_layers = c.int("num_layers")
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": d,
        "n_layers": c.int("num_decoder_layers", encoder_layers),
        "context_length": c.int("n_positions", 512),
        "positions": "none",
        "tie_embeddings": True,  # T5Config.__post_init__: self.tie_word_embeddings = True
        "attention": attention,
        "ffn": ffn,
        "norm": {"kind": "rmsnorm", "per_layer": 2, "final": True},
        "relative_bias": {"buckets": buckets, "heads": heads, "segments": 0},
        "encoder": {
            "layers": {"d_model": d, "n_layers": encoder_layers, "attention": attention, "ffn": ffn, "positions": "none"},
            "final_norm": True,
            "cross_head_dim": kv,
            "relative_buckets": buckets,
        },
    }


UMT5_LAYER_MODULES = ((r"SelfAttention\.relative_attention_bias$", "relative_bias"),) + LAYER_MODULES
UMT5_TOP_MODULES = TOP_MODULES[:-1]  # no table in the first block alone: each block holds its own


@family("umt5", layer_modules=UMT5_LAYER_MODULES, top_modules=UMT5_TOP_MODULES, model_stacks=((r"encoder\.", "encoder."),))
def umt5(c: Config) -> dict:
    """UMT5Config / UMT5ForConditionalGeneration (Chung et al. 2023, "UniMax"): T5's layout (t5 above) with every
    block's UMT5Attention holding its own relative_attention_bias (relative_attention_num_buckets, 32, × num_heads, 6)
    in each stack, where T5 has one in the first block; UMT5Config.__post_init__ forces tie_word_embeddings true
    whatever the config states, so lm_head is shared (_tied_weights_keys); feed_forward_proj defaults to
    "gated-gelu"."""
    spec = t5(c)  # tied, as T5Config (UMT5Config.__post_init__: "force it for T5 family")
    spec["relative_bias"] = {**spec["relative_bias"], "per_layer": True}
    spec["encoder"] = {**spec["encoder"], "relative_per_layer": True}
    return spec


# mT5 (Xue et al. 2021) is T5's classes under its own configuration (MT5Config: T5 v1.1's gated-GELU FFN, a
# 250112-token vocabulary; its head tied as T5Config's, whatever the file says).
alias("mt5", of="t5")


@family(
    "pop2piano",
    layer_modules=LAYER_MODULES,
    top_modules=((r"mel_conditioner\.embedding$", "encoder.prefix_embed"),) + TOP_MODULES,
    model_stacks=((r"encoder\.", "encoder."),),
)
def pop2piano(c: Config) -> dict:
    """Pop2PianoConfig / Pop2PianoForConditionalGeneration (Choi and Lee 2023, "Pop2Piano"): T5's layout (t5 above) over
    a vocabulary of 2,400 MIDI tokens, the encoder reading spectrogram features (input_features at d_model) in place
    of the token table, with Pop2PianoConcatEmbeddingToMel's table (composer_vocab_size, 21, × d_model) putting one
    composer's row before them; the FFN's activation is dense_act_fn (relu) whatever feed_forward_proj names
    (Pop2PianoDenseGatedActDense: ACT2FN[config.dense_act_fn]); lm_head is a table of its own (not among
    _tied_weights_keys), though Pop2PianoConfig.__post_init__ sets tie_word_embeddings true."""
    spec = t5(c)
    act = c.activation("dense_act_fn", "relu")
    spec["ffn"] = {**spec["ffn"], "activation": act}
    spec["encoder"]["layers"] = {**spec["encoder"]["layers"], "ffn": spec["ffn"]}
    spec["tie_embeddings"] = False
    spec["encoder"]["prefix_rows"] = c.int("composer_vocab_size", 21)
    return spec


LONGT5_LAYER_MODULES = ((r"global_input_layer_norm$", "attn.global_norm"),) + tuple(
    (pattern.replace("SelfAttention", "(Local|TransientGlobal)?SelfAttention"), name) for pattern, name in LAYER_MODULES
)
LONGT5_TOP_MODULES = TOP_MODULES[:-1] + (
    (r"block\.0\.layer\.0\.(Local|TransientGlobal)?SelfAttention\.(global_)?relative_attention_bias$", "relative_bias"),
)


@family("longt5", layer_modules=LONGT5_LAYER_MODULES, top_modules=LONGT5_TOP_MODULES, model_stacks=((r"encoder\.", "encoder."),))
def longt5(c: Config) -> dict:
    """LongT5Config / LongT5ForConditionalGeneration (Guo et al. 2022): T5's layout (t5 above) with the encoder's
    self-attention LongT5LocalAttention (encoder_attention_type "local"): the sequence in blocks of local_radius + 1
    (128) positions, each block's queries meeting its own block's keys and its neighbours' (blocks/local_attention.py);
    its relative-position table in the first block, as T5's; or (encoder_attention_type "transient-global")
    LongT5TransientGlobalAttention: the same blocks and a global token per global_block_size (16) positions, their
    global_input_layer_norm in every layer and global_relative_attention_bias in the first. The decoder is T5's."""
    kind = c.data.get("encoder_attention_type", "local")
    if kind not in ("local", "transient-global"):
        raise c.fail("encoder_attention_type", f'expected "local" or "transient-global", got {kind!r}')
    spec = t5(c)
    layers = spec["encoder"]["layers"]
    attention = {**layers["attention"], "kind": "block_local", "radius": c.int("local_radius", 127)}
    if kind == "transient-global":
        attention["global_block"] = c.int("global_block_size", 16)
        spec["encoder"]["relative_global"] = True
    spec["encoder"]["layers"] = {**layers, "attention": attention}
    return spec
