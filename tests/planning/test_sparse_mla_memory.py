"""Training memory of latent attention with DeepSeek's indexer, as FlashMLA's sparse kernel runs it absorbed (MQA over
the latent row; blocks/mla.py): each layer's kept activations and the kernel's per-sequence bytes derived by hand from
DeepSeek-V3.2's and GLM-5's published shapes (config.json), and train's activation figure without a traceback."""

import pytest

from ffncalc.api.models import load


@pytest.mark.parametrize(
    ("preset", "expected"),
    [
        # d 7168; q latent 1536 and its normed copy; the two norms' fp32 statistics (2 each); kv_a's output and the
        # kernel's latent row (512 + 64 each); 128 heads: q (128 + 64), the absorbed query (512 + 64), the kernel's output
        # (512), o's input (128)
        ("deepseek-v3.2", 7168 + 2 * 1536 + 2 * 2 + 2 * (512 + 64) + 128 * (192 + 576 + 512 + 128)),
        # GLM-5: d 6144, q latent 2048, 64 heads of nope 192 + rope 64 and v 256
        ("glm-5", 6144 + 2 * 2048 + 2 * 2 + 2 * (512 + 64) + 64 * (256 + 576 + 512 + 256)),
    ],
)
def test_indexed_layers_keep_the_absorbed_form(preset, expected):
    spec = load(preset).stack
    heads = 128 if preset == "deepseek-v3.2" else 64
    blocks = [b for run in spec.runs() for slot, b in run.layer.blocks() if slot == "attention"]
    assert blocks and all(b.indexed and b.index_topk == 2048 for b in blocks)
    for b in blocks:
        assert b.kept_elements(spec) == expected
        # a sequence: the fp32 log-sum-exp a query and head and the int32 ids, min(2048, s) a query
        assert b.score_bytes(spec, 4096, True) == 4 * heads * 4096 + 4 * 4096 * 2048
        assert b.score_bytes(spec, 1024, True) == 4 * heads * 1024 + 4 * 1024 * 1024
        assert b.score_bytes(spec, 1024, False) == 5 * heads * 1024 * 1024  # eager: the softmax's, as before


@pytest.mark.parametrize("preset", ["deepseek-v3.2", "glm-5"])
def test_train_reports_the_activations(cli, preset):
    code, out, err = cli("train", preset, "--tokens", "1e12", "--seq-len", "4096")
    assert code == 0 and "Traceback" not in err
    assert "activations" in out


def test_deepseek_v32_activations_against_the_dense_form_by_hand():
    """DeepSeek-V3.2 at 4,096 tokens, one sequence: its 61 indexed layers against the same layers without the indexer
    (dense latent attention, FlashAttention per head: the normed latent (512), Q and K (2 · 128 · 192), V and the
    output (2 · 128 · 128)). A token and layer the absorbed form keeps the latent row (576) in place of the normed
    latent and 128 · (576 + 512) − 128 · (192 + 128) more of the heads': 98,368 elements; a sequence and layer its
    int32 ids, 4 · 4,096 · 2,048 bytes."""
    from dataclasses import replace

    from ffncalc.analysis.memory import Step, activation_bytes

    spec = load("deepseek-v3.2").stack
    plain = {"index_n_heads": None, "index_head_dim": None, "index_topk": None}
    dense = replace(spec, layers=tuple(replace(layer, attention=replace(layer.attention, **plain)) for layer in spec.layers))
    per_token = (512 + 64) - 512 + 128 * (576 + 512) - 128 * (192 + 128)
    assert per_token == 98_368
    step = Step(seq_len=4096)
    assert activation_bytes(spec, step) - activation_bytes(dense, step) == 61 * (4096 * 2 * per_token + 4 * 4096 * 2048)
