"""BART (Lewis et al. 2020) and the encoder–decoders built as it is (mBART, PLBART, Marian, Pegasus, Blenderbot,
M2M-100): a bidirectional encoder and a causal decoder, each with its position table and optional LayerNorm on its
embeddings, one token table shared by both stacks and the head, and in every decoder layer a cross-attention to the
encoder's output. BART, PLBART, Marian and Blenderbot-small put each norm after its residual sum; mBART, Pegasus,
Blenderbot and M2M-100 before each sublayer, with a final norm in each stack."""

from __future__ import annotations

from ..config import Config, family

LAYER_MODULES = (
    (r"encoder_attn\.q_proj$", "encoder.cross.q"),
    (r"encoder_attn\.k_proj$", "encoder.cross.k"),
    (r"encoder_attn\.v_proj$", "encoder.cross.v"),
    (r"encoder_attn\.out_proj$", "encoder.cross.o"),
    (r"self_attn\.out_proj$", "attn.o"),
    (r"fc1$", "ffn.up"),
    (r"fc2$", "ffn.down"),
    (r"(self_attn_layer_norm|encoder_attn_layer_norm|final_layer_norm)$", "norms"),
)
TOP_MODULES = (
    (r"shared$", "embed"),
    (r"embed_tokens$", "embed"),
    (r"embed_positions$", "pos_embed"),
    (r"layernorm_embedding$", "embed_norm"),
    (r"((encoder|decoder)\.)?layer_norm$", "final_norm"),  # the encoder's, read within its stack: layer_norm
)
STACKS = ((r"encoder\.", "encoder."),)


def seq2seq(
    c: Config, *, pre_norm: bool, embedding_norm: bool, offset: int = 0, table: str = "learned", vocab: int | None = None
) -> dict:
    """The keys BartConfig and the configurations built as it share: d_model, encoder_layers and decoder_layers,
    encoder_attention_heads and decoder_attention_heads, encoder_ffn_dim and decoder_ffn_dim, activation_function,
    max_position_embeddings, vocab_size; q/k/v/out_proj, fc1 and fc2 all with biases. ``table``: the position
    table, "learned" (max_position_embeddings + ``offset`` rows), "parameter" (sines and cosines held in an
    nn.Embedding's weight: a parameter all the same) or "buffer" (a fixed buffer: no parameters); ``vocab``: the
    decoder's vocabulary where the configuration names it otherwise (FSMT's tgt_vocab_size)."""
    d = c.int("d_model")
    act = c.activation("activation_function", "gelu")
    rows = c.int("max_position_embeddings", 1024)
    positions = "sinusoidal" if table == "buffer" else "learned"

    def layers(prefix: str) -> dict:
        return {
            "d_model": d,
            "n_layers": c.int(f"{prefix}_layers"),
            "attention": {"n_heads": c.int(f"{prefix}_attention_heads"), "qkv_bias": True, "o_bias": True},
            "ffn": {"kind": "dense", "d_ff": c.int(f"{prefix}_ffn_dim"), "bias": True, "activation": act},
            "positions": positions,
        }

    decoder = layers("decoder")
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": vocab or c.int("vocab_size"),
        "d_model": d,
        "n_layers": decoder["n_layers"],
        "context_length": rows,
        "position_offset": offset,
        "positions": positions,
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "embedding_norm": embedding_norm,
        "attention": decoder["attention"],
        "ffn": decoder["ffn"],
        "norm": {"kind": "layernorm", "per_layer": 2, "final": pre_norm, "placement": "pre" if pre_norm else "residual"},
        "encoder": {
            "layers": layers("encoder"),
            "position_rows": rows + offset if table != "buffer" else 0,
            "embedding_norm": embedding_norm,
            "final_norm": pre_norm,
            "cross_bias": True,
        },
    }


@family("bart", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=STACKS)
def bart(c: Config) -> dict:
    """BartConfig / BartForConditionalGeneration: model.shared (vocab_size, default 50265, × d_model, default 1024)
    is both stacks' embed_tokens and, tied (tie_word_embeddings, default true), lm_head; final_logits_bias is a
    buffer. Each stack: embed_positions of max_position_embeddings + 2 rows (BartLearnedPositionalEmbedding: position
    p at row p + 2), layernorm_embedding; BartEncoderLayer (encoder_layers, default 12): self_attn over
    encoder_attention_heads (16), self_attn_layer_norm after the residual sum, fc1 d -> encoder_ffn_dim (4096), fc2
    back, activation_function (gelu), final_layer_norm after the sum. BartDecoderLayer (decoder_layers, 12): self_attn
    and its norm, encoder_attn (q from the decoder, k and v from the encoder's output, out_proj) and
    encoder_attn_layer_norm, the FFN and final_layer_norm, each norm after its residual sum. No final norm."""
    return seq2seq(c, pre_norm=False, embedding_norm=True, offset=2)


@family("plbart", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=STACKS)
def plbart(c: Config) -> dict:
    """PLBartConfig / PLBartForConditionalGeneration (Ahmad et al. 2021): BART's layout at its own defaults (d_model
    768, 6 layers in each stack, 12 heads, FFN 3072, vocabulary 50005); scale_embedding multiplies, adding nothing."""
    return seq2seq(c, pre_norm=False, embedding_norm=True, offset=2)


@family("mbart", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=STACKS)
def mbart(c: Config) -> dict:
    """MBartConfig / MBartForConditionalGeneration (Liu et al. 2020): BART with each norm before its sublayer and a
    final layer_norm in each stack; layernorm_embedding and the offset-2 position tables kept."""
    return seq2seq(c, pre_norm=True, embedding_norm=True, offset=2)


@family("blenderbot-small", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=STACKS)
def blenderbot_small(c: Config) -> dict:
    """BlenderbotSmallConfig / BlenderbotSmallForConditionalGeneration: BART's post-norm layers with
    layernorm_embedding, position tables of max_position_embeddings rows (default 512) without an offset."""
    return seq2seq(c, pre_norm=False, embedding_norm=True)


@family("blenderbot", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=STACKS)
def blenderbot(c: Config) -> dict:
    """BlenderbotConfig / BlenderbotForConditionalGeneration (Roller et al. 2021): pre-norm layers with a final
    layer_norm in each stack, no norm on the embeddings, position tables of max_position_embeddings rows (128)."""
    return seq2seq(c, pre_norm=True, embedding_norm=False)


@family("pegasus", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=STACKS)
def pegasus(c: Config) -> dict:
    """PegasusConfig / PegasusForConditionalGeneration (Zhang et al. 2020): pre-norm layers with a final layer_norm
    in each stack, no norm on the embeddings; PegasusSinusoidalPositionalEmbedding holds its max_position_embeddings
    (1024) rows of sines and cosines as an nn.Embedding's weight: a parameter, counted."""
    return seq2seq(c, pre_norm=True, embedding_norm=False, table="parameter")


@family("marian", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=STACKS)
def marian(c: Config) -> dict:
    """MarianConfig / MarianMTModel (Junczys-Dowmunt et al. 2018): post-norm layers, no norm on the embeddings, no
    final norm; MarianSinusoidalPositionalEmbedding's max_position_embeddings rows held as a parameter. One table
    (share_encoder_decoder_embeddings, default true) of vocab_size rows; decoder_vocab_size (default vocab_size) is the
    head's; where the tables are not shared the encoder has its own."""
    spec = seq2seq(c, pre_norm=False, embedding_norm=False, table="parameter")
    vocab = c.int("vocab_size")
    if not c.bool("share_encoder_decoder_embeddings", True):
        spec["vocab_size"] = c.int("decoder_vocab_size", vocab)
        spec["encoder"]["table_rows"] = vocab
    elif c.int("decoder_vocab_size", vocab) != vocab:
        raise c.fail("decoder_vocab_size", f"a shared table has one vocabulary: vocab_size {vocab}")
    return spec


@family("m2m_100", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=STACKS)
def m2m_100(c: Config) -> dict:
    """M2M100Config / M2M100ForConditionalGeneration (Fan et al. 2020): pre-norm layers with a final layer_norm in
    each stack, no norm on the embeddings; M2M100SinusoidalPositionalEmbedding is a buffer (no parameters); FFN
    activation relu; vocabulary 128112."""
    return seq2seq(c, pre_norm=True, embedding_norm=False, offset=2, table="buffer")


@family("fsmt", layer_modules=LAYER_MODULES, top_modules=((r"output_projection$", "lm_head"),) + TOP_MODULES, model_stacks=STACKS)
def fsmt(c: Config) -> dict:
    """FSMTConfig / FSMTForConditionalGeneration (FairSeq's WMT19 translation models, Ng et al. 2019): BART's post-norm
    layers with relu (activation_function), no norm on the embeddings and no final norm; a token table a stack, the
    encoder's of src_vocab_size (default 42024) and the decoder's of tgt_vocab_size (42024), and the decoder's
    output_projection (d_model → tgt_vocab_size, no bias); SinusoidalPositionalEmbedding an nn.Embedding of
    max_position_embeddings + pad_token_id + 1 rows (1024 + 1 + 1) whose weight holds the sines and cosines, a
    parameter. tie_word_embeddings (default false) ties the encoder's table and output_projection to the decoder's
    table (FSMTModel._tied_weights_keys), which needs one vocabulary."""
    pad = c.int("pad_token_id", 1)
    source, target = c.int("src_vocab_size"), c.int("tgt_vocab_size")
    spec = seq2seq(c, pre_norm=False, embedding_norm=False, offset=pad + 1, table="parameter", vocab=target)
    if spec["tie_embeddings"] and source != target:
        raise c.fail("tie_word_embeddings", f"tied tables need one vocabulary: src_vocab_size {source}, tgt_vocab_size {target}")
    if not spec["tie_embeddings"]:
        spec["encoder"]["table_rows"] = source
    return spec


@family("mvp", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=STACKS)
def mvp(c: Config) -> dict:
    """MvpConfig / MvpForConditionalGeneration (Tang et al. 2023): BART's layout and defaults (vocabulary 50267).
    With use_prompt (default false) each stack adds MvpPrompt modules (a prompt_length × d_model table through a
    two-layer MLP of prompt_mid_dim into every layer's keys and values): not read, refused."""
    if c.bool("use_prompt", False):
        raise c.fail("use_prompt", "MVP's layer-wise prompts (prefix keys and values in every attention) are not read yet")
    return seq2seq(c, pre_norm=False, embedding_norm=True, offset=2)


LED_LAYER_MODULES = (
    (r"longformer_self_attn\.query$", "attn.q"),
    (r"longformer_self_attn\.key$", "attn.k"),
    (r"longformer_self_attn\.value$", "attn.v"),
    (r"longformer_self_attn\.query_global$", "attn.q_global"),
    (r"longformer_self_attn\.key_global$", "attn.k_global"),
    (r"longformer_self_attn\.value_global$", "attn.v_global"),
    (r"self_attn\.output$", "attn.o"),
) + LAYER_MODULES


@family("led", layer_modules=LED_LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=STACKS)
def led(c: Config) -> dict:
    """LEDConfig / LEDForConditionalGeneration (Beltagy et al. 2020, "Longformer", §5, the Longformer-Encoder-Decoder):
    BART's post-norm layers and layernorm_embedding in each stack, one shared table (vocab_size, 50265) tied to lm_head
    (tie_word_embeddings, default true), no final norm; position tables of max_encoder_position_embeddings (16384) and
    max_decoder_position_embeddings (1024) rows without an offset (LEDLearnedPositionalEmbedding). Each encoder layer's
    self-attention is LEDEncoderSelfAttention (blocks/sliding_chunks.py): query, key, value and output with biases,
    query_global, key_global and value_global beside them, a window of attention_window (512, one a layer where a list)
    positions; LEDEncoder pads the source to a whole multiple of the largest window before its positions, norm and
    layers, and unpads its output. A forward given no global_attention_mask has no global token."""
    spec = seq2seq(c, pre_norm=False, embedding_norm=True)
    layers = c.int("encoder_layers")
    window = c.data.get("attention_window", 512)
    windows = window if isinstance(window, list) else [window]
    if not windows or any(type(w) is not int or w <= 0 or w % 2 for w in windows):
        raise c.fail("attention_window", f"expected a positive even integer or a list of them, got {window!r}")
    if isinstance(window, list) and len(window) != layers:
        raise c.fail("attention_window", f"{len(window)} windows for {layers} encoder layers")
    if len(set(windows)) > 1:
        raise c.fail("attention_window", "windows that differ between encoder layers are not read yet")
    rows = c.int("max_decoder_position_embeddings", 1024)
    spec["context_length"] = rows
    encoder = spec["encoder"]
    attention = {**encoder["layers"]["attention"], "kind": "sliding_chunks", "attention_window": windows[0]}
    encoder["layers"] = {**encoder["layers"], "attention": attention}
    encoder["position_rows"] = c.int("max_encoder_position_embeddings", 16384)
    encoder["pad_to"] = windows[0]
    return spec


PEGASUS_X_LAYER_MODULES = ((r"global_self_attn_layer_norm$", "attn.global_norm"),) + LAYER_MODULES
PEGASUS_X_TOP_MODULES = ((r"embed_global$", "global_embed"),) + TOP_MODULES


@family("pegasus_x", layer_modules=PEGASUS_X_LAYER_MODULES, top_modules=PEGASUS_X_TOP_MODULES, model_stacks=STACKS)
def pegasus_x(c: Config) -> dict:
    """PegasusXConfig / PegasusXForConditionalGeneration (Phang et al. 2022): Pegasus's pre-norm layers with a final
    layer_norm in each stack, no norm on the embeddings, one shared table (vocab_size, 96103) tied to lm_head
    (tie_word_embeddings, default true); PegasusXSinusoidalPositionalEmbedding computes its sines and cosines in the
    forward (no parameters, no buffer); q, k, v and out_proj without biases in every attention, fc1 and fc2 with them.
    Each encoder layer's self-attention is PegasusXGlobalLocalAttention (blocks/global_local.py): blocks of block_size
    (512), num_global_tokens (32) global tokens from embed_global carried through every layer with a LayerNorm of
    their own (global_self_attn_layer_norm), every odd layer's blocks staggered (stagger_local_blocks, default true);
    PegasusXEncoder pads the source to whole blocks and unpads its output before its final layer_norm."""
    spec = seq2seq(c, pre_norm=True, embedding_norm=False, table="buffer")
    spec["context_length"] = c.int("max_position_embeddings", 16384)
    block, tokens = c.int("block_size", 512), c.int("num_global_tokens", 32)
    plain = {**spec["attention"], "qkv_bias": False, "o_bias": False}
    spec["attention"] = plain
    encoder = spec["encoder"]
    attention = {**encoder["layers"]["attention"], "qkv_bias": False, "o_bias": False, "kind": "global_local"}
    attention.update(block_size=block, global_tokens=tokens, stagger=c.bool("stagger_local_blocks", True))
    encoder["layers"] = {**encoder["layers"], "attention": attention}
    encoder.update(cross_bias=False, pad_to=block, global_rows=tokens)
    return spec


BIGBIRD_LAYER_MODULES = (
    (r"self_attn\.self\.query$", "attn.q"),
    (r"self_attn\.self\.key$", "attn.k"),
    (r"self_attn\.self\.value$", "attn.v"),
    (r"self_attn\.output$", "attn.o"),
) + LAYER_MODULES
# each stack's layernorm_embedding is the norm after its last layer (BigBirdPegasusEncoder.forward, and the decoder's)
BIGBIRD_TOP_MODULES = ((r"layernorm_embedding$", "final_norm"),) + TOP_MODULES


@family("bigbird_pegasus", layer_modules=BIGBIRD_LAYER_MODULES, top_modules=BIGBIRD_TOP_MODULES, model_stacks=STACKS)
def bigbird_pegasus(c: Config) -> dict:
    """BigBirdPegasusConfig / BigBirdPegasusForConditionalGeneration (Zaheer et al. 2020): Pegasus's pre-norm layers,
    each stack's final norm named layernorm_embedding (applied after its last layer), no norm on the embeddings; one
    shared table (vocab_size, 96103) tied to lm_head; learned position tables of max_position_embeddings (4096) rows
    without an offset; every attention's projections biased with use_bias (default false), fc1 and fc2 with biases,
    activation_function gelu_new. attention_type "block_sparse" (the default): each encoder layer's
    BigBirdPegasusBlockSparseAttention (blocks/bigbird.py, as big_bird's) over blocks of block_size (64) with num_random_blocks (3)
    random ones, the source padded to whole blocks where it is longer than (5 + 2·num_random_blocks)·block_size tokens
    (shorter ones run full attention, unpadded); "original_full": full attention throughout."""
    kind = c.data.get("attention_type", "block_sparse")
    if kind not in ("block_sparse", "original_full"):
        raise c.fail("attention_type", f'expected "block_sparse" or "original_full", got {kind!r}')
    spec = seq2seq(c, pre_norm=True, embedding_norm=False)
    bias = c.bool("use_bias", False)
    spec["attention"] = {**spec["attention"], "qkv_bias": bias, "o_bias": bias}
    encoder = spec["encoder"]
    attention = {**encoder["layers"]["attention"], "qkv_bias": bias, "o_bias": bias}
    encoder["cross_bias"] = bias
    if kind == "block_sparse":
        block, random = c.int("block_size", 64), c.int("num_random_blocks", 3)
        attention.update(kind="bigbird", block_size=block, random_blocks=random)
        encoder.update(pad_to=block, pad_above=(5 + 2 * random) * block)
    encoder["layers"] = {**encoder["layers"], "attention": attention}
    return spec


SEAMLESS_LAYER_MODULES = (
    (r"cross_attention\.q_proj$", "encoder.cross.q"),
    (r"cross_attention\.k_proj$", "encoder.cross.k"),
    (r"cross_attention\.v_proj$", "encoder.cross.v"),
    (r"cross_attention\.out_proj$", "encoder.cross.o"),
    (r"(ffn_layer_norm|cross_attention_layer_norm)$", "norms"),
) + LAYER_MODULES
SEAMLESS_STACKS = ((r"text_encoder\.", "encoder."),)


@family("seamless_m4t", "seamless_m4t_v2", layer_modules=SEAMLESS_LAYER_MODULES, top_modules=TOP_MODULES, model_stacks=SEAMLESS_STACKS)
def seamless_m4t(c: Config) -> dict:
    """SeamlessM4TConfig / SeamlessM4TForTextToText and SeamlessM4Tv2Config / SeamlessM4Tv2ForTextToText: the classes
    transformers' seq2seq mapping builds for these types (Seamless Communication 2023): the text encoder and text decoder
    alone (no speech encoder, text-to-unit model or vocoder), NLLB's layout as M2M-100's (m2m_100 above) under its own
    keys. shared (vocab_size, 256102, × hidden_size, 1024) is both stacks' embed_tokens and lm_head's (tied:
    _tied_weights_keys); encoder_layers and decoder_layers (24) of encoder_attention_heads and decoder_attention_heads
    (16), q, k, v and out_proj with biases, ffn.fc1 (→ encoder_ffn_dim or decoder_ffn_dim, 8192) and ffn.fc2 with biases,
    activation_function (relu), each LayerNorm before its sublayer and a final layer_norm a stack; the sinusoidal
    position tables (max_position_embeddings + 2 rows: 1024 for v1, 4096 for v2) are buffers; scale_embedding
    multiplies."""
    data = {**c.data, "d_model": c.int("hidden_size")}
    return seq2seq(Config(data, c.text, c.source, start=c.start), pre_norm=True, embedding_norm=False, offset=2, table="buffer")
