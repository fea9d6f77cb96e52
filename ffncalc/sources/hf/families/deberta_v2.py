"""DeBERTa-v2 and DeBERTa-v3 (He et al. 2021; He et al. 2023): BERT's post-norm layers with disentangled attention
over a table of relative-position embeddings the stack shares, and BERT's masked-LM head."""

from __future__ import annotations

from ..config import Config, family
from .bert import LAYER_MODULES, TOP_MODULES, encoder

MODULES = (
    (r"attention\.self\.query_proj$", "attn.q"),
    (r"attention\.self\.key_proj$", "attn.k"),
    (r"attention\.self\.value_proj$", "attn.v"),
    (r"attention\.self\.pos_key_proj$", "attn.pos_k"),
    (r"attention\.self\.pos_query_proj$", "attn.pos_q"),
) + LAYER_MODULES
TOP = (
    (r"encoder\.rel_embeddings$", "rel_embed"),
    (r"encoder\.LayerNorm$", "rel_embed.norm"),
    (r"lm_predictions\.lm_head\.dense$", "prediction_head.dense"),
    (r"lm_predictions\.lm_head\.LayerNorm$", "prediction_head.norm"),
    (r"lm_predictions\.lm_head$", "lm_head"),
) + TOP_MODULES


def relative(c: Config, spec: dict) -> int:
    """The disentangled attention pos_att_type asks for, over the span of relative positions each way the config
    gives (position_buckets where above 0, else max_relative_positions where 1 or more, else
    max_position_embeddings), written into ``spec``; the span."""
    kinds = c.data.get("pos_att_type") or []
    if isinstance(kinds, str):  # DeBERTa's own configs write "p2c|c2p"
        kinds = [k.strip() for k in kinds.lower().split("|")]
    if not isinstance(kinds, list) or not set(kinds) <= {"c2p", "p2c"}:
        raise c.fail("pos_att_type", f'expected a list of "c2p" and "p2c", got {kinds!r}')
    span = c.int("max_relative_positions", -1, positive=False)
    span = span if span >= 1 else c.int("max_position_embeddings", 512)
    buckets = c.int("position_buckets", -1, positive=False)
    span = buckets if buckets > 0 else span
    spec["attention"] = {**spec["attention"], "kind": "disentangled", "span": span, "c2p": "c2p" in kinds, "p2c": "p2c" in kinds}
    return span


def embeddings(c: Config) -> dict:
    """BERT's layout with DebertaEmbeddings' and the legacy head's keys: a position table where position_biased_input,
    token types where type_vocab_size (default 0)."""
    d = c.int("hidden_size")
    if c.int("embedding_size", d) != d:
        raise c.fail("embedding_size", "an embedding of its own width (embed_proj after the sum) is not read yet")
    heads = c.int("num_attention_heads")
    if c.int("attention_head_size", d // heads) * heads != d:
        raise c.fail("attention_head_size", "heads other than hidden_size / num_attention_heads are not read yet")
    spec = encoder(c)
    types = c.int("type_vocab_size", 0, positive=False)
    if types:
        spec["token_types"] = types
    else:
        spec.pop("token_types", None)
    if not c.bool("position_biased_input", True):
        spec.pop("position_offset")
        spec["positions"] = "none"
    return spec


@family("deberta-v2", layer_modules=MODULES, top_modules=TOP)
def deberta_v2(c: Config) -> dict:
    """DebertaV2Config / DebertaV2ForMaskedLM: DebertaV2Embeddings' word table, a position table of
    max_position_embeddings (512) rows where position_biased_input (default true; DeBERTa-v3: false), token types
    where type_vocab_size (default 0), then a LayerNorm; DebertaV2Layer: BERT's post-norm layer with
    DisentangledSelfAttention (query_proj, key_proj, value_proj with biases; where relative_attention, default false,
    content-to-position and position-to-content scores for pos_att_type over a span of position_buckets, else
    max_relative_positions (or max_position_embeddings where below 1), relative positions each way, projected by the
    layer's own query and key projections where share_att_key, else by pos_key_proj and pos_query_proj);
    DebertaV2Encoder.rel_embeddings (2 · span × d) and its LayerNorm where norm_rel_ebd has layer_norm; the head
    (legacy, default: cls.predictions; else lm_predictions.lm_head): dense, hidden_act, LayerNorm, the word table
    again with a bias. Hidden 1536, 24 layers, 24 heads, intermediate 6144, vocabulary 128100. A convolution after
    the first layer (conv_kernel_size, DeBERTa-v2 xlarge and xxlarge) and an embedding_size of its own are not read
    yet: refused in one line."""
    if c.int("conv_kernel_size", 0, positive=False) > 0:
        raise c.fail("conv_kernel_size", "DeBERTa-v2's convolution beside the first layer is not read yet")
    spec = embeddings(c)
    if c.bool("relative_attention", False):
        span = relative(c, spec)
        norm = c.data.get("norm_rel_ebd", "none")
        spec["attention"]["share_key"] = c.bool("share_att_key", False)
        spec["relative_embeddings"] = {"rows": 2 * span, "norm": "layer_norm" in str(norm).lower().split("|")}
    return spec
