"""BERT (Devlin et al. 2019) and the encoders built as it is: bidirectional self-attention over learned absolute
positions and token types, post-norm layers (the norm after each residual add), and the masked-LM head: a dense
transform, its activation and a LayerNorm, then the unembedding tied to the token table with a bias of its own.
RoBERTa (Liu et al. 2019) and its kin differ in their positions' offset; the pre-norm variants (RoBERTa-PreLN,
XLM-R XL, Megatron-BERT) put the norms before the sublayers and end in a final norm."""

from __future__ import annotations

from ..config import Config, alias, family

LAYER_MODULES = (
    (r"attention\.self\.query$", "attn.q"),
    (r"attention\.self\.key$", "attn.k"),
    (r"attention\.self\.value$", "attn.v"),
    (r"attention\.output\.dense$", "attn.o"),
    (r"intermediate\.dense$", "ffn.up"),
    (r"(?<!attention\.)output\.dense$", "ffn.down"),
    # post-norm: attention.output.LayerNorm and output.LayerNorm; pre-norm: attention.LayerNorm (RoBERTa-PreLN),
    # attention.self_attn_layer_norm (XLM-R XL), attention.ln (Megatron-BERT) and the FFN's
    (r"(LayerNorm|layer_norm|\bln)$", "norms"),
)
TOP_MODULES = (
    (r"embeddings\.word_embeddings$", "embed"),
    (r"embeddings\.position_embeddings$", "pos_embed"),
    (r"embeddings\.token_type_embeddings$", "token_type_embed"),
    (r"embeddings\.LayerNorm$", "embed_norm"),
    (r"(transform\.dense|lm_head\.dense)$", "prediction_head.dense"),
    (r"(transform\.LayerNorm|lm_head\.layer_norm)$", "prediction_head.norm"),
    (r"(encoder\.LayerNorm|encoder\.ln|roberta_prelayernorm\.LayerNorm)$", "final_norm"),
    (r"(cls\.predictions|lm_head|decoder)$", "lm_head"),
)


def encoder(c: Config, *, pre_norm: bool = False, embedding_norm: bool = True, offset: int = 0, mixer: dict | None = None) -> dict:
    """The keys BertConfig and the configurations built as it share: hidden_size (default 768), num_hidden_layers
    (12), num_attention_heads (12) of hidden_size / heads, intermediate_size (3072), hidden_act (gelu),
    max_position_embeddings (512) learned positions, type_vocab_size (2) token types, every linear with a bias,
    every LayerNorm with a weight and a bias. ``offset``: the rows of the position table before the first
    position (RoBERTa's padding_idx + 1). ``mixer``: the token mixer in place of BERT's attention (FNet's Fourier
    transform)."""
    d = c.int("hidden_size")
    table = c.int("max_position_embeddings", 512)
    if table <= offset:
        raise c.fail("max_position_embeddings", f"{table} rows leave no position after the first {offset}")
    types = c.int("type_vocab_size", 2, positive=False)  # 0: no token-type table (DeBERTa-v2's default)
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": d,
        "n_layers": c.int("num_hidden_layers"),
        "context_length": table - offset,
        "position_offset": offset,
        "positions": "learned",
        "mask": "bidirectional",
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "lm_head_bias": True,  # BertLMPredictionHead.bias (decoder.bias is the same tensor)
        "embedding_norm": embedding_norm,
        **({"token_types": types} if types else {}),
        "attention": mixer or {"n_heads": c.int("num_attention_heads"), "qkv_bias": True, "o_bias": True},
        "ffn": {"kind": "dense", "d_ff": c.int("intermediate_size"), "bias": True, "activation": c.activation("hidden_act", "gelu")},
        "norm": {"kind": "layernorm", "per_layer": 2, "final": pre_norm, "placement": "pre" if pre_norm else "residual"},
        # BertPredictionHeadTransform: dense d -> d with a bias, hidden_act, LayerNorm
        "prediction_head": {"activation": c.activation("hidden_act", "gelu"), "bias": True},
    }


@family("bert", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES)
def bert(c: Config) -> dict:
    """BertConfig / BertForMaskedLM: BertEmbeddings (word, position and token-type tables, summed, then a
    LayerNorm); BertLayer: BertSelfAttention's query, key and value and BertSelfOutput's dense, each with a bias,
    then a LayerNorm on the residual sum; BertIntermediate's dense d -> intermediate_size and hidden_act,
    BertOutput's dense back, then a LayerNorm on the sum; no pooler (BertForMaskedLM builds BertModel with
    add_pooling_layer=False); BertOnlyMLMHead: the transform (dense, hidden_act, LayerNorm) and the decoder, tied
    to word_embeddings, with its bias. Vocabulary 30522, 512 positions."""
    return encoder(c)


@family("roberta", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES)
def roberta(c: Config) -> dict:
    """RobertaConfig / RobertaForMaskedLM: BERT's layers; RobertaEmbeddings number positions from padding_idx + 1
    (pad_token_id, default 1), so the table's first pad_token_id + 1 rows precede every sequence's first position
    (max_position_embeddings 514 in the released models: 512 positions); RobertaLMHead: dense, gelu, layer_norm,
    decoder tied to the embeddings with its bias. Vocabulary 50265."""
    return encoder(c, offset=c.int("pad_token_id", 1) + 1)


# Camembert, XLM-RoBERTa and data2vec's text model are RoBERTa's classes under their own names and configurations
# (CamembertConfig, XLMRobertaConfig, Data2VecTextConfig: RoBERTa's keys and defaults).
for _type in ("camembert", "xlm-roberta", "data2vec-text"):
    alias(_type, of="roberta")


@family("ibert", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES)
def ibert(c: Config) -> dict:
    """IBertConfig / IBertForMaskedLM (Kim et al. 2021, integer-only BERT): RoBERTa's layout under RoBERTa's module
    names, each linear a QuantLinear and each LayerNorm an IntLayerNorm holding RoBERTa's parameters; the integer
    copies, scaling factors and activation ranges they keep are buffers. Positions from pad_token_id + 1."""
    return roberta(c)


@family("roberta-prelayernorm", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES)
def roberta_prelayernorm(c: Config) -> dict:
    """RobertaPreLayerNormConfig / RobertaPreLayerNormForMaskedLM: RoBERTa with each sublayer's LayerNorm before it
    (attention.LayerNorm, intermediate.LayerNorm), the embeddings' LayerNorm kept, and a final LayerNorm
    (roberta_prelayernorm.LayerNorm) before the head."""
    return encoder(c, pre_norm=True, offset=c.int("pad_token_id", 1) + 1)


@family("xlm-roberta-xl", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES)
def xlm_roberta_xl(c: Config) -> dict:
    """XLMRobertaXLConfig / XLMRobertaXLForMaskedLM (Goyal et al. 2021): pre-norm layers
    (attention.self_attn_layer_norm, LayerNorm before the FFN), no LayerNorm on the embeddings, a final
    encoder.LayerNorm; hidden 2560, 36 layers, 32 heads, intermediate 10240, vocabulary 250880, 514 positions
    numbered from pad_token_id + 1, one token type."""
    return encoder(c, pre_norm=True, embedding_norm=False, offset=c.int("pad_token_id", 1) + 1)


@family("megatron-bert", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES)
def megatron_bert(c: Config) -> dict:
    """MegatronBertConfig / MegatronBertForMaskedLM (Shoeybi et al. 2019 §3.5: the norms moved before the
    sublayers): no LayerNorm on the embeddings, attention.ln before self-attention and ln before the FFN, a final
    encoder.ln; BERT's head. Hidden 1024, 24 layers, 16 heads, intermediate 4096, vocabulary 29056."""
    return encoder(c, pre_norm=True, embedding_norm=False)


@family("ernie", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES + ((r"embeddings\.task_type_embeddings$", "task_type_embed"),))
def ernie(c: Config) -> dict:
    """ErnieConfig / ErnieForMaskedLM (Baidu's ERNIE 1.0 to 3.0 in transformers): BERT's layers and head; where
    use_task_id (default false), ErnieEmbeddings adds a task-type table of task_type_vocab_size rows (default 3)
    beside the token types."""
    spec = encoder(c)
    if c.bool("use_task_id", False):
        spec["task_types"] = c.int("task_type_vocab_size", 3)
    return spec


DISTIL_LAYERS = (
    (r"attention\.q_lin$", "attn.q"),
    (r"attention\.k_lin$", "attn.k"),
    (r"attention\.v_lin$", "attn.v"),
    (r"attention\.out_lin$", "attn.o"),
    (r"ffn\.lin1$", "ffn.up"),
    (r"ffn\.lin2$", "ffn.down"),
    (r"(sa_layer_norm|output_layer_norm)$", "norms"),
)
DISTIL_TOP = (
    (r"embeddings\.word_embeddings$", "embed"),
    (r"embeddings\.position_embeddings$", "pos_embed"),
    (r"embeddings\.LayerNorm$", "embed_norm"),
    (r"vocab_transform$", "prediction_head.dense"),
    (r"vocab_layer_norm$", "prediction_head.norm"),
    (r"vocab_projector$", "lm_head"),
)


@family("distilbert", layer_modules=DISTIL_LAYERS, top_modules=DISTIL_TOP)
def distilbert(c: Config) -> dict:
    """DistilBertConfig / DistilBertForMaskedLM (Sanh et al. 2019): BERT's post-norm layers under their own names
    (q_lin, k_lin, v_lin, out_lin; sa_layer_norm; ffn.lin1, ffn.lin2; output_layer_norm), dim (default 768),
    n_layers (6), n_heads (12), hidden_dim (3072), activation (gelu); no token types; a position table of
    max_position_embeddings rows (512), learned, or with sinusoidal_pos_embds filled with fixed sines and cosines
    but held as a parameter all the same; the head: vocab_transform (dim -> dim with a bias), the activation,
    vocab_layer_norm, and vocab_projector tied to the word table with its bias."""
    d = c.int("dim")
    act = c.activation("activation", "gelu")
    return {
        "name": c.data.get("_name_or_path") or None,
        "vocab_size": c.int("vocab_size"),
        "d_model": d,
        "n_layers": c.int("n_layers"),
        "context_length": c.int("max_position_embeddings", 512),
        "positions": "learned",
        "mask": "bidirectional",
        "tie_embeddings": c.bool("tie_word_embeddings", True),
        "lm_head_bias": True,
        "embedding_norm": True,
        "attention": {"n_heads": c.int("n_heads"), "qkv_bias": True, "o_bias": True},
        "ffn": {"kind": "dense", "d_ff": c.int("hidden_dim"), "bias": True, "activation": act},
        "norm": {"kind": "layernorm", "per_layer": 2, "final": False, "placement": "residual"},
        "prediction_head": {"activation": act, "bias": True},
    }


ELECTRA_TOP = (
    (r"embeddings_project$", "embed_project"),
    (r"generator_predictions\.dense$", "prediction_head.dense"),
    (r"generator_predictions\.LayerNorm$", "prediction_head.norm"),
    (r"generator_lm_head$", "lm_head"),
) + TOP_MODULES


@family("electra", layer_modules=LAYER_MODULES, top_modules=ELECTRA_TOP)
def electra(c: Config) -> dict:
    """ElectraConfig / ElectraForMaskedLM (Clark et al. 2020), the generator: BERT's post-norm layers at hidden_size
    (default 256, 12 layers, 4 heads, intermediate 1024); ElectraEmbeddings' word, position and token-type tables and
    their LayerNorm embedding_size wide (default 128), and where embedding_size differs from hidden_size,
    embeddings_project (E -> d, with a bias) after them; ElectraGeneratorPredictions: dense d -> E (with a bias),
    gelu (whatever hidden_act), a LayerNorm of E; generator_lm_head E -> vocabulary, with a bias, tied to the word
    table. Vocabulary 30522, 512 positions."""
    spec = encoder(c)
    width = c.int("embedding_size", 128)
    if width != spec["d_model"]:
        spec["factorized_embedding"] = {"width": width, "bias": True}
    spec["prediction_head"] = {"activation": "gelu", "bias": True, "width": width}
    return spec


REMBERT_TOP = (
    (r"embedding_hidden_mapping_in$", "embed_project"),
    (r"predictions\.dense$", "prediction_head.dense"),
    (r"predictions\.LayerNorm$", "prediction_head.norm"),
) + TOP_MODULES


@family("rembert", layer_modules=LAYER_MODULES, top_modules=REMBERT_TOP)
def rembert(c: Config) -> dict:
    """RemBertConfig / RemBertForMaskedLM (Chung et al. 2020, decoupled embeddings): BERT's post-norm layers
    (hidden 1152, 32 layers, 18 heads, intermediate 4608); RemBertEmbeddings' word, position and token-type tables and
    their LayerNorm input_embedding_size wide (default 256), projected to the hidden size by the encoder's
    embedding_hidden_mapping_in (with a bias); the head RemBertLMPredictionHead: dense d -> output_embedding_size
    (default 1664, with a bias), hidden_act, a LayerNorm of that width, and the decoder to the vocabulary (250300) with
    a bias, untied (tie_word_embeddings default false). No pooler."""
    spec = encoder(c)
    spec["tie_embeddings"] = c.bool("tie_word_embeddings", False)
    spec["factorized_embedding"] = {"width": c.int("input_embedding_size", 256), "bias": True}
    spec["prediction_head"] = {**spec["prediction_head"], "width": c.int("output_embedding_size", 1664)}
    return spec


ROFORMER_TOP = (
    (r"embeddings_project$", "embed_project"),
    (r"encoder\.embed_positions$", "sine_table"),
    (r"transform\.dense$", "prediction_head.dense"),
    (r"transform\.LayerNorm$", "prediction_head.norm"),
) + TOP_MODULES


@family("roformer", layer_modules=LAYER_MODULES, top_modules=ROFORMER_TOP)
def roformer(c: Config) -> dict:
    """RoFormerConfig / RoFormerForMaskedLM (Su et al. 2021): BERT's post-norm layers with rotary positions over
    the whole head (queries and keys; values too where rotary_value, no weights) in place of a position table;
    RoFormerEmbeddings' word and token-type tables and LayerNorm embedding_size wide (default: hidden_size), projected
    to the hidden size by embeddings_project (with a bias) where the two differ; RoFormerEncoder.embed_positions, a
    frozen sine table of max_position_embeddings (1536) × head_dim held as a parameter; the head: transform dense
    d -> embedding_size (with a bias), hidden_act, LayerNorm, and the decoder tied to the word table with its bias.
    Vocabulary 50000."""
    spec = encoder(c)
    d, heads = spec["d_model"], spec["attention"]["n_heads"]
    del spec["position_offset"]
    spec["positions"] = "rotary"
    spec["sine_table"] = {"rows": c.int("max_position_embeddings", 1536), "width": d // heads}
    width = c.int("embedding_size", d)
    if width != d:
        spec["factorized_embedding"] = {"width": width, "bias": True}
    spec["prediction_head"] = {**spec["prediction_head"], "width": width}
    return spec


LAYOUTLM_TOP = (
    (r"embeddings\.x_position_embeddings$", "layout.x"),
    (r"embeddings\.y_position_embeddings$", "layout.y"),
    (r"embeddings\.h_position_embeddings$", "layout.h"),
    (r"embeddings\.w_position_embeddings$", "layout.w"),
    (r"pooler\.dense$", "pooler.dense"),
) + TOP_MODULES


@family("layoutlm", layer_modules=LAYER_MODULES, top_modules=LAYOUTLM_TOP)
def layoutlm(c: Config) -> dict:
    """LayoutLMConfig / LayoutLMForMaskedLM (Xu et al. 2020): BERT's embeddings, layers and head, with four more
    tables of max_2d_position_embeddings (default 1024) rows in LayoutLMEmbeddings (x, y, height, width of each
    token's bounding box, six rows added to the token's embedding); LayoutLMModel's pooler (dense d -> d with a bias,
    tanh, over the first position), which LayoutLMForMaskedLM builds and runs."""
    return {**encoder(c), "layout_positions": {"rows": c.int("max_2d_position_embeddings", 1024)}, "pooler": {}}


MPNET_LAYERS = (
    (r"attention\.attn\.q$", "attn.q"),
    (r"attention\.attn\.k$", "attn.k"),
    (r"attention\.attn\.v$", "attn.v"),
    (r"attention\.attn\.o$", "attn.o"),
) + LAYER_MODULES
MPNET_TOP = ((r"encoder\.relative_attention_bias$", "relative_bias"),) + TOP_MODULES


@family("mpnet", layer_modules=MPNET_LAYERS, top_modules=MPNET_TOP)
def mpnet(c: Config) -> dict:
    """MPNetConfig / MPNetForMaskedLM (Song et al. 2020): RoBERTa's embeddings without token types (positions
    numbered from padding_idx + 1, padding_idx fixed at 1, so the table's first two rows precede every sequence's
    first position), BERT's post-norm layers (attention.attn.q, k, v, o with biases, attention.LayerNorm,
    intermediate, output), and one table of relative-position biases, relative_attention_num_buckets (32) ×
    num_attention_heads, held by MPNetEncoder (relative_attention_bias) and added to every layer's scores; MPNetLMHead:
    dense, gelu, layer_norm, the decoder tied to the word table with its bias. Vocabulary 30527, 512 positions."""
    spec = encoder(c, offset=2)  # MPNetEmbeddings.padding_idx = 1, whatever pad_token_id
    del spec["token_types"]
    buckets = c.int("relative_attention_num_buckets", 32)
    return {
        **spec,
        "relative_bias": {"buckets": buckets, "heads": spec["attention"]["n_heads"], "segments": 0},
        "prediction_head": {"activation": "gelu", "bias": True},  # MPNetLMHead: gelu, whatever hidden_act
    }


TAPAS_TOP = tuple((rf"embeddings\.token_type_embeddings_{i}$", f"type_tables.table_{i}") for i in range(32)) + TOP_MODULES


@family("tapas", layer_modules=LAYER_MODULES, top_modules=TAPAS_TOP)
def tapas(c: Config) -> dict:
    """TapasConfig / TapasForMaskedLM (Herzig et al. 2020): BERT's layers and head over TapasEmbeddings, whose one
    token-type table is seven (type_vocab_sizes, default [3, 256, 256, 2, 256, 256, 10]: segment, column, row, previous
    answer, column rank, inverse column rank, numeric relation), each added; positions reset at each cell's start
    where reset_position_index_per_cell (indices only); max_position_embeddings 1024. No pooler."""
    sizes = c.data.get("type_vocab_sizes", [3, 256, 256, 2, 256, 256, 10])
    if not isinstance(sizes, list) or not sizes or not all(type(n) is int and n > 0 for n in sizes):
        raise c.fail("type_vocab_sizes", f"expected a list of positive table sizes, got {sizes!r}")
    spec = encoder(c)
    spec.pop("token_types", None)
    return {**spec, "type_tables": sizes}


ROC_TOP = (
    (r"embeddings\.shape_embed$", "char_features.shape"),
    (r"embeddings\.pronunciation_embed$", "char_features.pronunciation"),
    (r"embeddings\.map_inputs_layer$", "char_features.project"),
) + TOP_MODULES


@family("roc_bert", layer_modules=LAYER_MODULES, top_modules=ROC_TOP)
def roc_bert(c: Config) -> dict:
    """RoCBertConfig / RoCBertForMaskedLM (Su et al. 2022): BERT's layers and head; RoCBertEmbeddings adds a glyph
    table (shape_vocab_size 24858 × shape_embed_dim 512) and a pronunciation table (pronunciation_vocab_size 910 ×
    pronunciation_embed_dim 768), both built whatever enable_shape and enable_pronunciation; with concat_input
    (default true) each token's rows of the enabled ones are concatenated with its word embedding and
    map_inputs_layer projects them back to the hidden size (with a bias) before the token types, positions and the
    LayerNorm."""
    features = {
        "concat": c.bool("concat_input", True),
        "use_shape": c.bool("enable_shape", True),
        "use_pronunciation": c.bool("enable_pronunciation", True),
        "shape_vocab": c.int("shape_vocab_size", 24858),
        "shape_dim": c.int("shape_embed_dim", 512),
        "pronunciation_vocab": c.int("pronunciation_vocab_size", 910),
        "pronunciation_dim": c.int("pronunciation_embed_dim", 768),
    }
    return {**encoder(c), "char_features": features}


FNET_LAYERS = ((r"fourier\.output\.LayerNorm$", "norms"),) + LAYER_MODULES
FNET_TOP = (
    (r"embeddings\.projection$", "embed_project"),
    (r"pooler\.dense$", "pooler.dense"),
) + TOP_MODULES


@family("fnet", layer_modules=FNET_LAYERS, top_modules=FNET_TOP)
def fnet(c: Config) -> dict:
    """FNetConfig / FNetForMaskedLM (Lee-Thorp et al. 2022): BERT's embeddings (type_vocab_size 4, 512 positions),
    their LayerNorm and then FNetEmbeddings.projection (d -> d with a bias); layers of Fourier mixing (the real part
    of a 2-D FFT, no parameters) in place of attention, the sum then fourier.output.LayerNorm, and BERT's FFN
    (hidden_act gelu_new) and LayerNorm; FNetModel's pooler, which FNetForMaskedLM builds and runs; BERT's head.
    Vocabulary 32000. The TPU optimizations (use_tpu_fourier_optimizations: the DFT as products with DFT matrices)
    are not read yet: refused in one line."""
    if c.bool("use_tpu_fourier_optimizations", False):
        raise c.fail("use_tpu_fourier_optimizations", "the DFT as products with DFT matrices is not read yet")
    spec = encoder(c, mixer={"kind": "fourier"})
    d = spec["d_model"]
    return {
        **spec,
        "factorized_embedding": {"width": d, "bias": True},
        "prediction_head": {**spec["prediction_head"], "width": d},
        "pooler": {},
    }


XMOD_LAYERS = (
    (r"output\.adapter_modules\.[^.]+\.dense1$", "language_adapters.dense1"),
    (r"output\.adapter_modules\.[^.]+\.dense2$", "language_adapters.dense2"),
    (r"output\.adapter_layer_norm$", "language_adapters.norm"),
) + LAYER_MODULES


@family("xmod", layer_modules=XMOD_LAYERS, top_modules=TOP_MODULES)
def xmod(c: Config) -> dict:
    """XmodConfig / XmodForMaskedLM (Pfeiffer et al. 2022): RoBERTa's embeddings, layers and head, with one adapter per
    language of languages (default ["en_XX"]) after each layer's FFN: dense1 d -> d / adapter_reduction_factor (2),
    hidden_act, dense2 back, with biases, a LayerNorm of its own where adapter_layer_norm (default false). The
    pre-norm layout (pre_norm) is not read yet: refused in one line."""
    if c.bool("pre_norm", False):
        raise c.fail("pre_norm", "X-MOD's pre-norm layers (the FFN's LayerNorm before it) are not read yet")
    languages = c.data.get("languages", ["en_XX"])
    if not isinstance(languages, list) or not languages:
        raise c.fail("languages", f"expected a list of language codes, got {languages!r}")
    spec = encoder(c, offset=c.int("pad_token_id", 1) + 1)
    d = spec["d_model"]
    return {
        **spec,
        "language_adapters": {
            "languages": len(languages),
            "bottleneck": d // c.int("adapter_reduction_factor", 2),
            "activation": c.activation("hidden_act", "gelu"),
            "own_norm": c.bool("adapter_layer_norm", False),
            "reuse_norm": c.bool("adapter_reuse_layer_norm", True),
        },
    }


LUKE_LAYERS = tuple((rf"attention\.self\.{q}$", f"entities.{q}") for q in ("w2e_query", "e2w_query", "e2e_query")) + LAYER_MODULES
LUKE_TOP = (
    (r"entity_embeddings\.entity_embeddings$", "entities.table"),
    (r"entity_embeddings\.entity_embedding_dense$", "entities.dense"),
    (r"entity_embeddings\.position_embeddings$", "entities.pos_embed"),
    (r"entity_embeddings\.token_type_embeddings$", "entities.token_type_embed"),
    (r"entity_embeddings\.LayerNorm$", "entities.norm"),
    (r"entity_predictions\.transform\.dense$", "entities.head.dense"),
    (r"entity_predictions\.transform\.LayerNorm$", "entities.head.norm"),
    (r"entity_predictions$", "entities.head"),
    (r"pooler\.dense$", "pooler.dense"),
) + TOP_MODULES


@family("luke", layer_modules=LUKE_LAYERS, top_modules=LUKE_TOP)
def luke(c: Config) -> dict:
    """LukeConfig / LukeForMaskedLM (Yamada et al. 2020): RoBERTa's embeddings, layers and head over the words (the
    head's decoder a matrix of its own), and LukeModel's pooler, which a forward runs; the entity side
    (entity_vocab_size 500000 × entity_emb_size 256, its projection, position and type tables and LayerNorm, the w2e,
    e2w and e2e queries of every layer where use_entity_aware_attention, the entity prediction head) held and idle
    without entity inputs."""
    spec = encoder(c, offset=c.int("pad_token_id", 1) + 1)
    return {
        **spec,
        # LukeForMaskedLM ties the entity head to the entity table, and its word head to nothing, whatever
        # tie_word_embeddings says (its _tied_weights_keys)
        "tie_embeddings": False,
        "pooler": {},
        "entities": {
            "vocab": c.int("entity_vocab_size", 500000),
            "width": c.int("entity_emb_size", 256),
            "position_rows": c.int("max_position_embeddings", 512),
            "types": c.int("type_vocab_size", 2),
            "aware": c.bool("use_entity_aware_attention", True),
        },
    }


SQUEEZE_LAYERS = (
    (r"attention\.query$", "attn.q"),
    (r"attention\.key$", "attn.k"),
    (r"attention\.value$", "attn.v"),
    (r"post_attention\.conv1d$", "attn.o"),
    (r"intermediate\.conv1d$", "ffn.up"),
    (r"output\.conv1d$", "ffn.down"),
    (r"(post_attention|output)\.layernorm$", "norms"),
)
SQUEEZE_TOP = ((r"pooler\.dense$", "pooler.dense"),) + TOP_MODULES


@family("squeezebert", layer_modules=SQUEEZE_LAYERS, top_modules=SQUEEZE_TOP)
def squeezebert(c: Config) -> dict:
    """SqueezeBertConfig / SqueezeBertForMaskedLM (Iandola et al. 2020): BERT's embeddings, post-norm layers, pooler and
    head with every linear layer of the layers a grouped 1×1 convolution: query, key and value of q_groups, k_groups
    and v_groups (default 4), post_attention's of post_attention_groups (1), the FFN's intermediate of
    intermediate_groups (4) and output of output_groups (4), each with a bias. An embedding_size other than
    hidden_size (which SqueezeBertEmbeddings' LayerNorm of hidden_size cannot normalise) is refused."""
    d = c.int("hidden_size")
    if c.int("embedding_size", d) != d:
        raise c.fail("embedding_size", f"SqueezeBERT's embeddings are normalised at hidden_size {d}: embedding_size must equal it")
    spec = encoder(c)
    groups = {f"{k}_groups": c.int(f"{k}_groups", 4) for k in ("q", "k", "v")}
    return {
        **spec,
        "attention": {**spec["attention"], "kind": "grouped_mha", **groups, "o_groups": c.int("post_attention_groups", 1)},
        "ffn": {
            **spec["ffn"],
            "kind": "grouped_dense",
            "up_groups": c.int("intermediate_groups", 4),
            "down_groups": c.int("output_groups", 4),
        },
        "pooler": {},
    }


CONVBERT_LAYERS = (
    (r"attention\.self\.key_conv_attn_layer\.depthwise$", "attn.key_conv.depthwise"),
    (r"attention\.self\.key_conv_attn_layer\.pointwise$", "attn.key_conv.pointwise"),
    (r"attention\.self\.key_conv_attn_layer$", "attn.key_conv"),
    (r"attention\.self\.conv_kernel_layer$", "attn.conv_kernel"),
    (r"attention\.self\.conv_out_layer$", "attn.conv_out"),
) + LAYER_MODULES


@family("convbert", layer_modules=CONVBERT_LAYERS, top_modules=ELECTRA_TOP)
def convbert(c: Config) -> dict:
    """ConvBertConfig / ConvBertForMaskedLM (Jiang et al. 2020): ELECTRA's embeddings (embedding_size, default 768,
    projected to the hidden size by embeddings_project where they differ) and generator head (dense d -> E, gelu,
    LayerNorm, tied decoder with a bias), and BERT's post-norm layers whose attention is mixed: num_attention_heads
    / head_ratio (12 / 2) heads of hidden_size / heads / 2 beside a span-based dynamic convolution of
    conv_kernel_size (9) over as many heads, their outputs concatenated into attention.output.dense; the FFN's two
    linears grouped into num_groups (default 1) where above 1."""
    d, heads, ratio = c.int("hidden_size"), c.int("num_attention_heads"), c.int("head_ratio", 2)
    h = heads // ratio if heads // ratio >= 1 else 1  # ConvBertSelfAttention: at least one head
    spec = encoder(c, mixer={"kind": "span_conv", "n_heads": h, "head_dim": d // h // 2, "kernel": c.int("conv_kernel_size", 9)})
    groups = c.int("num_groups", 1)
    if groups > 1:  # GroupedLinearLayer: a (groups, in / groups, out / groups) weight and a bias
        spec["ffn"] = {**spec["ffn"], "kind": "grouped_dense", "up_groups": groups, "down_groups": groups}
    width = c.int("embedding_size", d)
    if width != d:
        spec["factorized_embedding"] = {"width": width, "bias": True}
    spec["prediction_head"] = {"activation": "gelu", "bias": True, "width": width}
    return spec


LONGFORMER_LAYERS = (
    (r"attention\.self\.query_global$", "attn.q_global"),
    (r"attention\.self\.key_global$", "attn.k_global"),
    (r"attention\.self\.value_global$", "attn.v_global"),
) + LAYER_MODULES


@family("longformer", layer_modules=LONGFORMER_LAYERS, top_modules=TOP_MODULES)
def longformer(c: Config) -> dict:
    """LongformerConfig / LongformerForMaskedLM (Beltagy et al. 2020): RoBERTa's embeddings (positions from
    pad_token_id + 1), post-norm layers and head (LongformerLMHead: dense, gelu, layer_norm, the decoder tied to the
    word table with its bias), no pooler; each layer's attention a sliding window of attention_window keys (default
    512: 256 either side) computed in overlapping chunks, with query_global, key_global and value_global held beside
    query, key and value (idle without global tokens); the sequence padded to a whole number of the largest window
    (LongformerModel._pad_to_window_size), the layers running over the padding, the head over the sequence's own
    positions. Windows that differ by layer are not read yet: refused in one line."""
    layers = c.int("num_hidden_layers")
    window = c.data.get("attention_window", 512)
    windows = [window] * layers if type(window) is int else window
    if not isinstance(windows, list) or len(windows) != layers or not all(type(x) is int and x > 0 and x % 2 == 0 for x in windows):
        raise c.fail("attention_window", f"expected an even positive window, or one for each of {layers} layers, got {window!r}")
    if len(set(windows)) > 1:
        raise c.fail("attention_window", "windows that differ by layer are not read yet")
    spec = encoder(c, offset=c.int("pad_token_id", 1) + 1)
    return {
        **spec,
        "attention": {**spec["attention"], "kind": "sliding_chunks", "attention_window": windows[0]},
        "padding": {"multiple": windows[0]},
        "prediction_head": {"activation": "gelu", "bias": True},  # LongformerLMHead: gelu, whatever hidden_act
    }


BIGBIRD_TOP = ((r"bert\.pooler$", "pooler.dense"),) + TOP_MODULES


@family("big_bird", layer_modules=LAYER_MODULES, top_modules=BIGBIRD_TOP)
def big_bird(c: Config) -> dict:
    """BigBirdConfig / BigBirdForMaskedLM (Zaheer et al. 2020): BERT's embeddings (4096 positions from 0, two token
    types; rescale_embeddings multiplies the word rows by √d, elementwise), post-norm layers (query, key and value with
    biases where use_bias, default true) and head (cls.predictions: dense, hidden_act gelu_new, LayerNorm, the decoder
    tied with its bias); BigBirdModel's pooler (a Linear d -> d with a bias and tanh over the first position), which
    BigBirdForMaskedLM builds and runs. With attention_type block_sparse (the default) a sequence longer than
    (5 + 2·num_random_blocks)·block_size tokens is padded to whole blocks of block_size (64) and attends block-sparse
    (num_random_blocks 3); a shorter one, and every one under original_full, attends fully. Vocabulary 50358."""
    spec = encoder(c)
    bias = c.bool("use_bias", True)
    spec["attention"] = {**spec["attention"], "qkv_bias": bias}
    kind = c.data.get("attention_type", "block_sparse")
    if kind not in ("block_sparse", "original_full"):
        raise c.fail("attention_type", f"expected block_sparse or original_full, got {kind!r}")
    if kind == "block_sparse":
        size, random = c.int("block_size", 64), c.int("num_random_blocks", 3, positive=False)
        spec["attention"] = {**spec["attention"], "kind": "bigbird", "block_size": size, "random_blocks": random}
        spec["padding"] = {"multiple": size, "above": (5 + 2 * random) * size}
    return {**spec, "pooler": {}}


NYSTROM_LAYERS = ((r"attention\.self\.conv$", "attn.conv"),) + LAYER_MODULES


@family("nystromformer", layer_modules=NYSTROM_LAYERS, top_modules=TOP_MODULES)
def nystromformer(c: Config) -> dict:
    """NystromformerConfig / NystromformerForMaskedLM (Xiong et al. 2021): BERT's embeddings (a position table of
    max_position_embeddings + 2 rows, positions numbered from 2: 510 positions), post-norm layers and head
    (hidden_act gelu_new); each layer's attention Nyström-approximated through num_landmarks (64) landmarks over
    segments of segment_means_seq_len (64) positions (the whole square where the two are equal, as at the defaults),
    with a depthwise convolution of conv_kernel_size (65) taps over each head's values. No pooler. Vocabulary 30000.
    The exact initial coefficient of the pseudo-inverse (inv_coeff_init_option) changes no matmul."""
    positions = c.int("max_position_embeddings", 510)
    spec = encoder(c)
    kernel = c.data.get("conv_kernel_size", 65)
    if kernel is not None and (type(kernel) is not int or kernel < 1):
        raise c.fail("conv_kernel_size", f"expected a positive kernel or null, got {kernel!r}")
    attention = {
        **spec["attention"],
        "kind": "nystrom",
        "landmarks": c.int("num_landmarks", 64),
        "segment_length": c.int("segment_means_seq_len", 64),
        "conv_kernel": kernel or 0,
    }
    # NystromformerEmbeddings: max_position_embeddings + 2 rows, position_ids from 2
    return {**spec, "attention": attention, "context_length": positions, "position_offset": 2}


@family("yoso", layer_modules=NYSTROM_LAYERS, top_modules=TOP_MODULES)
def yoso(c: Config) -> dict:
    """YosoConfig / YosoForMaskedLM (Zeng et al. 2021): BERT's embeddings (a position table of max_position_embeddings
    + 2 rows, positions numbered from 2: 4096 positions; one token type), post-norm layers and head (hidden_act gelu);
    each layer's attention weighted by the expected collision of hash_code_len-bit (9) hashes (use_expectation, the
    default), with a depthwise convolution of conv_window taps over the values where it is set (default none). No pooler.
    Vocabulary 50265. The sampled form (use_expectation false) runs only in transformers' CUDA kernels: refused."""
    if not c.bool("use_expectation", True):
        raise c.fail("use_expectation", "YOSO's sampled hashing runs only in transformers' CUDA kernels: not read")
    spec = encoder(c)
    window = c.data.get("conv_window")
    if window is not None and (type(window) is not int or window < 1):
        raise c.fail("conv_window", f"expected a positive window or null, got {window!r}")
    attention = {**spec["attention"], "kind": "yoso", "hash_code_len": c.int("hash_code_len", 9), "conv_kernel": window or 0}
    # YosoEmbeddings: max_position_embeddings + 2 rows, position_ids from 2
    return {**spec, "attention": attention, "context_length": c.int("max_position_embeddings", 4096), "position_offset": 2}


@family("mra", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES)
def mra(c: Config) -> dict:
    """MraConfig / MraForMaskedLM (Zeng et al. 2022): BERT's embeddings (a position table of max_position_embeddings
    + 2 rows, positions numbered from 2: 512 positions; one token type), post-norm layers and head (hidden_act gelu);
    each layer's attention MRA-2 (approx_mode "full" by default, or "sparse") over blocks of 32, its top num_block
    blocks at full resolution: num_block = min(max_position_embeddings // 32 · block_per_row, (… // 32)²)
    (MraSelfAttention), 64 at the defaults. No pooler. Vocabulary 50265. Sequences run in whole blocks of 32
    (mra2_attention refuses others): a sequence is counted padded to them. initial_prior_first_n_blocks and
    initial_prior_diagonal_n_blocks bias which blocks are picked, not how many."""
    positions = c.int("max_position_embeddings", 512)
    mode = c.data.get("approx_mode", "full")
    if mode not in ("full", "sparse"):
        raise c.fail("approx_mode", f"expected full or sparse, got {mode!r}")
    rows = positions // 32
    blocks = min(rows * c.int("block_per_row", 4), rows * rows)
    if blocks < 1:
        raise c.fail("max_position_embeddings", f"{positions} positions leave no block of 32 to attend")
    spec = encoder(c)
    attention = {**spec["attention"], "kind": "mra", "blocks": blocks, "approx_mode": mode}
    # MraEmbeddings: max_position_embeddings + 2 rows, position_ids from 2
    return {**spec, "attention": attention, "context_length": positions, "position_offset": 2, "padding": {"multiple": 32}}
