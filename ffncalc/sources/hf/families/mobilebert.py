"""MobileBERT (Sun et al. 2020): bottlenecked layers with stacked FFNs, a trigram embedding and a head of its own rows."""

from __future__ import annotations

from ..config import Config, family
from .bert import encoder

LAYER_MODULES = (
    (r"bottleneck\.input\.dense$", "attn.bottleneck_in"),
    (r"bottleneck\.attention\.dense$", "attn.bottleneck_qk"),
    (r"output\.bottleneck\.dense$", "attn.bottleneck_out"),
    (r"attention\.self\.query$", "attn.q"),
    (r"attention\.self\.key$", "attn.k"),
    (r"attention\.self\.value$", "attn.v"),
    (r"attention\.output\.dense$", "attn.o"),
    (r"ffn\.\d+\.intermediate\.dense$", "attn.ffns.up"),
    (r"ffn\.\d+\.output\.dense$", "attn.ffns.down"),
    (r"intermediate\.dense$", "attn.up"),
    (r"output\.dense$", "attn.down"),
    (r"LayerNorm$", "attn.norms"),
)
TOP_MODULES = (
    (r"embeddings\.word_embeddings$", "embed"),
    (r"predictions\.dense$", "embed"),  # the head's own rows, stored with the table (parts/embedding.py)
    (r"embeddings\.embedding_transformation$", "embed.project_in"),
    (r"embeddings\.position_embeddings$", "pos_embed"),
    (r"embeddings\.token_type_embeddings$", "token_type_embed"),
    (r"embeddings\.LayerNorm$", "embed_norm"),
    (r"transform\.dense$", "prediction_head.dense"),
    (r"transform\.LayerNorm$", "prediction_head.norm"),
    (r"(cls\.predictions|decoder)$", "lm_head"),
)


@family("mobilebert", layer_modules=LAYER_MODULES, top_modules=TOP_MODULES)
def mobilebert(c: Config) -> dict:
    """MobileBertConfig / MobileBertForMaskedLM: MobileBertEmbeddings' word table embedding_size wide (default 128),
    with trigram_input (true) each position's next, own and previous rows concatenated and embedding_transformation
    (3·E -> hidden_size 512, with a bias), then position (512) and token-type (2) tables of hidden_size and a norm;
    num_hidden_layers (24) MobileBertLayers (blocks/bottleneck.py: intra_bottleneck_size 128, num_attention_heads 4,
    intermediate_size 512, num_feedforward_networks 4, hidden_act relu); every norm NoNorm (normalization_type
    no_norm: a weight and a bias, as a LayerNorm's; the embeddings' is counted and built as the model's LayerNorm, the
    layers' as NoNorm); no pooler; MobileBertLMPredictionHead: transform (dense d -> d
    with a bias, hidden_act, a LayerNorm) and the unembedding by the tied table concatenated with its dense's
    vocabulary × (hidden_size − embedding_size) rows, with a bias. Vocabulary 30522. Refused in one line: no bottleneck
    (use_bottleneck false), values through the bottleneck (use_bottleneck_attention), queries and keys without their
    shared bottleneck (key_query_shared_bottleneck false) and an untied head."""
    for key, want in (("use_bottleneck", True), ("use_bottleneck_attention", False), ("key_query_shared_bottleneck", True)):
        if c.bool(key, want) != want:
            raise c.fail(key, f"MobileBERT's layers with {key} {str(not want).lower()} are not read yet")
    if not c.bool("tie_word_embeddings", True):
        raise c.fail("tie_word_embeddings", "an untied MobileBERT head (its decoder beside the table) is not read yet")
    spec = encoder(c)
    d, width = spec["d_model"], c.int("embedding_size", 128)
    if width > d:
        raise c.fail("embedding_size", f"the head's own rows are hidden_size − embedding_size: {width} > {d}")
    act = c.activation("hidden_act", "relu")
    return {
        **spec,
        "attention": {
            "kind": "bottleneck",
            "n_heads": c.int("num_attention_heads"),
            "inner": c.int("intra_bottleneck_size", 128),
            "d_ff": c.int("intermediate_size"),
            "ffns": c.int("num_feedforward_networks", 4),
            "activation": act,
        },
        "ffn": {"kind": "none"},
        "norm": {"kind": "layernorm", "per_layer": 0, "final": False, "placement": "residual"},
        "trigram_embedding": {"width": width, "trigram": c.bool("trigram_input", True)},
        "prediction_head": {"activation": act, "bias": True},
    }
