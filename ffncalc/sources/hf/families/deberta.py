"""DeBERTa (He et al. 2021): BERT's post-norm layers with one fused query-key-value projection, query and value
biases of their own, and disentangled attention over relative positions; BERT's masked-LM head."""

from __future__ import annotations

from ..config import Config, family
from .deberta_v2 import MODULES as V2_MODULES
from .deberta_v2 import TOP, embeddings, relative

MODULES = (
    (r"attention\.self\.in_proj$", "attn.q+k+v"),
    (r"attention\.self$", "attn.q+k+v"),  # q_bias and v_bias, held by the attention module itself
    (r"attention\.self\.pos_proj$", "attn.pos_k"),
    (r"attention\.self\.pos_q_proj$", "attn.pos_q"),
) + V2_MODULES


@family("deberta", layer_modules=MODULES, top_modules=TOP)
def deberta(c: Config) -> dict:
    """DebertaConfig / DebertaForMaskedLM: DebertaV2's embeddings, layer and head (hidden 768, 12 layers, 12 heads,
    intermediate 3072, vocabulary 50265, 512 positions), with DeBERTa's DisentangledSelfAttention: in_proj, one
    d -> 3·d projection without a bias, then q_bias and v_bias (none on the keys); where relative_attention (default
    false), c2p through pos_proj (no bias) and p2c through pos_q_proj (with a bias) over the 2 · min(s, span) rows
    around the middle of the encoder's rel_embeddings (2 · span × d, span max_relative_positions or
    max_position_embeddings; no norm). talking_head (projections across the heads of the scores) is not read yet:
    refused in one line."""
    if c.bool("talking_head", False):
        raise c.fail("talking_head", "the projections across the heads of the scores are not read yet")
    spec = embeddings(c)
    spec["attention"] = {**spec["attention"], "k_bias": False}
    if c.bool("relative_attention", False):
        span = relative(c, spec)  # the kind, its span and pos_att_type's scores
        spec["attention"] |= {"share_key": False, "pos_k_bias": False, "span_to_length": True}
        spec["relative_embeddings"] = {"rows": 2 * span, "norm": False}
    return spec
