"""Reformer's parts (parts/streams.py, blocks/lsh.py): reversible streams, axial positions, the sequence padded to
whole chunks, local and LSH attention, counted by hand and proven against the reference torch modules."""

import pytest

from ffncalc.analysis.count import tally
from ffncalc.model import SpecError, from_data

LOCAL = {"kind": "local", "n_heads": 2, "head_dim": 4, "chunk_length": 4}
LSH = {"kind": "lsh", "n_heads": 2, "head_dim": 4, "chunk_length": 4, "num_hashes": 2, "num_buckets": 4}
DATA = dict(
    vocab_size=10,
    d_model=8,
    n_layers=2,
    context_length=16,
    positions="none",
    attention=LOCAL,
    layers=[{"repeat": 1}, {"repeat": 1, "attention": LSH}],
    ffn={"kind": "dense", "d_ff": 16, "activation": "relu", "bias": True},
    norm={"kind": "layernorm"},
    lm_head_bias=True,
    reversible=True,
    axial_positions={"shape": [4, 4], "dims": [3, 5]},
    padding={"multiple": 4, "above": 4},
)


def test_parameters_by_hand():
    ffn, norms = 8 * 16 + 16 + 16 * 8 + 8, 2 * 16
    local, lsh = 4 * 64 + ffn + norms, 3 * 64 + ffn + norms  # q, k, v, o; qk, v, o
    model = 80 + 4 * 3 + 4 * 5 + 2 * 16 + 10 * 16 + 10  # embedding, axial tables, final norm over 2·d, head and bias
    assert tally(from_data(DATA)).params == model + local + lsh


def test_padded_chunks_by_hand():
    # 6 tokens padded to 8; chunks of 4 meeting one chunk before: 8 keys a query
    local = 2 * (4 * 64 + 2 * 128) + 2 * 2 * (2 * 8 * 4)
    lsh = 2 * (3 * 64 + 2 * 128) + 2 * (2 * 4 * 2 * 2) + 2 * 2 * (2 * 2 * 8 * 4)  # hashing: 2 rounds of 4/2 rotations
    assert tally(from_data(DATA), seq_len=6).forward_flops == 8 * (local + lsh) + 6 * 2 * 160
    # within one chunk, no padding and the whole square
    short = 2 * (4 * 64 + 2 * 128) + 2 * 2 * (2 * 3 * 4) + 2 * (3 * 64 + 2 * 128) + 2 * 2 * (2 * 3 * 4)
    assert tally(from_data(DATA), seq_len=3).forward_flops == 3 * short + 3 * 2 * 160


def test_reversible_streams_take_an_untied_head():
    with pytest.raises(SpecError, match="reversible"):
        from_data({**DATA, "tie_embeddings": True}, check=False)


@pytest.mark.torch
@pytest.mark.parametrize("seq_len", [3, 6, 8])
def test_against_reference_modules(seq_len):
    from ffncalc.analysis.verify import verify

    report = verify(from_data(DATA), seq_len=seq_len)
    assert report.ok, report.failures
