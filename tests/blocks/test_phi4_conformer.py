"""Phi-4-multimodal's Conformer layer (blocks/phi4_conformer.py) as a model's own layer: its reference module holds the
count's parameters and runs to its FLOPs, and the activations it keeps for backward are what autograd saves (its
depthwise-separable convolution's kernel − 1 extra positions a sequence's), at two kernels and widths."""

import pytest

SPEC = """name: conformer probe
d_model: 64
n_layers: 1
vocab_size: 128
context_length: 256
positions: none
mask: bidirectional
attention: {{kind: phi4_conformer, n_heads: 4, qkv_bias: true, o_bias: true, d_ff: 96, kernel: {kernel}, multiplier: {mult}}}
ffn: {{kind: gated, d_ff: 96, bias: true, activation: silu}}
norm: {{kind: layernorm, per_layer: 2}}
"""


@pytest.mark.torch
@pytest.mark.parametrize(("kernel", "mult", "seq"), [(3, 1, 64), (5, 2, 128)])
def test_phi4_conformer_verifies_and_keeps_what_autograd_saves(cli, tmp_path, kernel, mult, seq):
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.format(kernel=kernel, mult=mult))
    code, out, _ = cli("verify", str(path), "--seq-len", str(seq))
    assert code == 0 and "components agree" in out
    code, out, _ = cli("verify", str(path), "--memory", "--seq-len", str(seq))
    assert code == 0 and "✓ every block's kept activations equal what its module saves" in out


def test_phi4_conformer_parameters_by_hand():
    """A layer of width 64, FFN 96, kernel 3: feed_forward_in 64 → 192 → 64 with biases, q, k, v, o with biases, the
    GLU 64 → 128 with its bias and b1, b2, dw_conv 64 × 3 and a bias, pw_conv and ext_pw_conv_1d 64 → 64 with biases,
    three LayerNorms; beside the layer's two norms and feed_forward_out (the FFN slot)."""
    import yaml

    from ffncalc.model import from_data
    from ffncalc.model.terms import Emitter

    model = from_data(yaml.safe_load(SPEC.format(kernel=3, mult=1)))
    block = model.layers[0].attention
    e = Emitter("layers", (0, 1))
    block.terms(e, model, 64)
    d, f = 64, 96
    expected = (d * 2 * f + 2 * f) + (f * d + d) + 4 * (d * d + d) + (d * 2 * d + 2 * d) + 2 * d + (3 * d + d)
    expected += 2 * (d * d + d) + 3 * 2 * d
    assert sum(t.numel * t.count for t in e.out) == expected
