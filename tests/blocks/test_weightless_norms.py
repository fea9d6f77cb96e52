"""Norms without a learned weight where the model's norm has one (MUSE Glimmer's: MuseGlimmerRMSNorm(with_scale=False)
over each query and key head, and over the embeddings): no parameters, their square, add and scale still counted, and
the reference torch modules built the same."""

import pytest

from ffncalc.analysis.count import tally
from ffncalc.model import SpecError, from_data

D, HEADS, HD, LAYERS = 32, 4, 8, 2
DATA = dict(
    vocab_size=50,
    d_model=D,
    n_layers=LAYERS,
    context_length=16,
    attention={"n_heads": HEADS, "head_dim": HD, "qk_norm": "head", "qk_norm_affine": False},
    ffn={"kind": "gated", "d_ff": 64},
    norm={"kind": "rmsnorm"},
    embedding_norm=True,
    embedding_norm_affine=False,
)
WEIGHTED = {**DATA, "attention": {**DATA["attention"], "qk_norm_affine": True}, "embedding_norm_affine": True}


def test_weightless_norms_hold_no_parameters():
    # the weighted form: one weight of head_dim for the query heads' norm and one for the keys', each layer, and one of
    # d_model after the embeddings
    assert tally(from_data(WEIGHTED)).params - tally(from_data(DATA)).params == LAYERS * 2 * HD + D
    rows = {r.name: r for r in tally(from_data(DATA), seq_len=8).rows}
    assert {name: rows[name].params for name in ("embed_norm", "attn.q_norm", "attn.k_norm")} == dict.fromkeys(
        ("embed_norm", "attn.q_norm", "attn.k_norm"), 0
    )


def test_weightless_norms_keep_their_elementwise_work():
    """An RMSNorm without a weight: square, add and scale per element (3), one fewer than with its weight (4); the
    query heads' norms in each of the two layers."""
    from ffncalc.analysis.count import terms

    def work(data):
        return {t.component: t.elementwise for t in terms(from_data(data), 8) if t.component in ("embed_norm", "attn.q_norm")}

    assert work(DATA) == {"embed_norm": 3 * D, "attn.q_norm": LAYERS * 3 * HEADS * HD}
    assert work(WEIGHTED) == {"embed_norm": 4 * D, "attn.q_norm": LAYERS * 4 * HEADS * HD}


@pytest.mark.torch
def test_reference_modules_hold_the_count():
    from ffncalc.analysis.verify import verify

    assert verify(from_data(DATA), seq_len=8).ok


def test_qk_norm_affine_without_qk_norms_is_refused():
    with pytest.raises(SpecError, match="qk_norm_affine"):
        from_data({**DATA, "attention": {"n_heads": HEADS, "head_dim": HD, "qk_norm_affine": False}}, check=False)
