"""Parts beside the layers are plugins: a part defined here, in the test, is read from a spec, counted, proven against
torch and planned with, in every output format, with no edit under ffncalc/; and nothing outside a part's own module
names a part."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from pathlib import Path

import pytest

from ffncalc import parts
from ffncalc.analysis.count import tally
from ffncalc.model import from_data
from ffncalc.model.schema import Positive
from ffncalc.model.stacks import Stack
from ffncalc.parts import Part, register

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Prefix(Part):
    """A learned prefix (Lester et al. 2021, "The Power of Scale for Parameter-Efficient Prompt Tuning"): ``length``
    vectors of d_model prepended to every sequence's embeddings; the layers run over them too, the head does not."""

    key = "prefix"
    order = 12
    summary = "learned prefix vectors before every sequence"

    length: Positive

    @property
    def prompt_length(self) -> int:
        return self.length

    def positions(self, n: int) -> int:
        return n + self.length

    def input_terms(self, e, model, seq_len):
        e.term("prefix.weight", "position", (self.length, model.d_model))  # a concatenation: no arithmetic

    def model_module(self, model):
        return _prefix_module()(self.length, model.d_model)


@cache
def _prefix_module():
    import torch
    from torch import nn

    class PrefixModule(nn.Module):
        def __init__(self, length, d):
            super().__init__()
            self.weight = nn.Parameter(torch.zeros(length, d))

        def enter(self, x, ctx):
            return torch.cat([self.weight.expand(x.shape[0], -1, -1).to(x.dtype), x], dim=1)

    return PrefixModule


@pytest.fixture
def prefix():
    register(Prefix)
    yield Prefix
    parts.unregister("prefix")


D, LAYERS, VOCAB, HEADS, P, FF = 64, 2, 100, 4, 5, 96
BASE = dict(
    name="prefixed",
    vocab_size=VOCAB,
    d_model=D,
    n_layers=LAYERS,
    context_length=64,
    attention={"n_heads": HEADS},
    ffn={"kind": "gated", "d_ff": FF},
)
SPEC = f"""name: prefixed
vocab_size: {VOCAB}
d_model: {D}
n_layers: {LAYERS}
context_length: 64
attention: {{n_heads: {HEADS}}}
ffn: {{kind: gated, d_ff: {FF}}}
prefix: {{length: {P}}}
"""


def hand_params() -> int:
    """Embedding and head (untied), q/k/v/o, SwiGLU, two RMSNorms a layer and a final one, and the prefix's P × d."""
    return 2 * VOCAB * D + LAYERS * (4 * D * D + 3 * D * FF + 2 * D) + D + P * D


def hand_matmul_flops(s: int, prefix: int = P) -> Fraction:
    """Forward matmul FLOPs per token of a sequence of s tokens, the full attention square (convention exact): the
    layers run over s + P positions, each position's weight products 2·(4d² + 3d·d_ff) and its scores and values
    2·2·(s + P)·d; per token of the sequence (s + P) / s of that; the head over the s tokens, 2·V·d each."""
    positions = s + prefix
    per_position = LAYERS * (2 * (4 * D * D + 3 * D * FF) + 2 * 2 * positions * D)
    return Fraction(positions * per_position, s) + 2 * VOCAB * D


@pytest.fixture
def spec_file(tmp_path, prefix):
    path = tmp_path / "prefixed.yaml"
    path.write_text(SPEC)
    return str(path)


def test_count_every_format(cli, spec_file):
    code, out, err = cli("count", spec_file, "--format", "json", "--seq-len", "20")
    assert code == 0, err
    data = json.loads(out)
    assert data["totals"]["params"] == hand_params()
    rows = [c for c in data["components"] if c["component"] == "prefix.weight"]
    assert [(r["params"], r["forward_flops_per_token"]) for r in rows] == [(P * D, 0)]
    for fmt in ("table", "markdown", "csv", "latex"):
        code, out, err = cli("count", spec_file, "--format", fmt)
        assert code == 0 and "prefix" in out, err


def test_layers_run_over_the_prefix(prefix):
    with_prefix = tally(from_data({**BASE, "prefix": {"length": P}}), seq_len=20, convention="exact")
    without = tally(from_data(BASE), seq_len=20, convention="exact")
    assert with_prefix.params - without.params == P * D
    assert with_prefix.flops_per_token == hand_matmul_flops(20)
    assert without.flops_per_token == hand_matmul_flops(20, prefix=0)


@pytest.mark.torch
def test_verify_against_torch(cli, spec_file):
    code, out, err = cli("verify", spec_file, "--seq-len", "8", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["ok"], out + err
    assert "prefix.weight" in {c["component"] for c in data["components"]}


def test_train_and_infer_every_format(cli, spec_file):
    code, out, err = cli("train", spec_file, "--tokens", "1M", "--seq-len", "16", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["figures"]["params"]["value"] == hand_params()
    code, out, err = cli("infer", spec_file, "--prompt", "10", "--generate", "5", "--format", "json")
    assert code == 0, err
    for fmt in ("table", "markdown", "csv", "latex"):
        for args in (
            ("train", spec_file, "--tokens", "1M", "--seq-len", "16"),
            ("infer", spec_file, "--prompt", "10", "--generate", "5"),
            ("fit", spec_file, "--hardware", "h100-sxm"),
        ):
            code, out, err = cli(*args, "--format", fmt)
            assert code == 0 and out, err


def test_bad_field_of_a_new_part_names_it(cli, spec_file):
    Path(spec_file).write_text(SPEC.replace(f"length: {P}", "length: 0"))
    code, _, err = cli("count", spec_file)
    assert code == 2 and ":8: prefix.length: Input should be greater than 0" in err, err


def test_unregistered_part_is_an_unknown_key(cli, tmp_path):
    path = tmp_path / "prefixed.yaml"
    path.write_text(SPEC)
    code, _, err = cli("count", str(path))
    assert code == 2 and "prefix: unknown key" in err, err


def test_parts_key_is_not_a_spec_key(cli, tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.replace(f"prefix: {{length: {P}}}", "parts: []"))
    code, _, err = cli("count", str(path))
    assert code == 2 and "parts: unknown key" in err, err


def test_every_shipped_part_is_registered_with_a_summary():
    found = parts.registry()
    assert {
        "embedding",
        "altup",
        "laurel",
        "per_layer_inputs",
        "hyper",
        "residual_scale",
        "block_residuals",
        "prediction_head",
        "prompts",
        "segments",
        "relative_bias",
        "reversible",
        "axial_positions",
        "padding",
        "shared_blocks",
        "cycles",
        "byte_latent",
    } <= set(found)
    for key, cls in found.items():
        assert cls.key == key and cls.summary


CORE = ["model/spec.py", "model/stack.py", "model/reference.py", "analysis/count.py"]


@pytest.mark.parametrize("path", CORE)
def test_the_core_names_no_part(path):
    """The spec, the stack, the reference model and the count walk parts without naming one: no part's key, class
    or module appears in their code (comments and docstrings aside)."""
    registry = parts.registry()
    # the token embedding itself is the core's (nn.Embedding, the "embedding" terms); "shared" blocks are a layer's
    words = (set(registry) | {cls.__name__ for cls in registry.values()} | set(parts.MODULES)) - {"embedding", "Embedding", "shared"}
    code = _code(ROOT / "ffncalc" / path)
    found = sorted(w for w in words if re.search(rf"\b{w}\b", code))
    assert found == []


def test_no_type_tests_of_parts():
    names = {cls.__name__ for cls in parts.registry().values()} | {"Part"}
    pattern = re.compile(r"isinstance\([^)]*\b(" + "|".join(sorted(names)) + r")\b")
    offenders = [
        f"{path}:{i}"
        for path in (ROOT / "ffncalc").rglob("*.py")
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []


def _code(path: Path) -> str:
    """The file's code without comments and string literals."""
    import io
    import tokenize

    out = []
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if tok.type not in (tokenize.COMMENT, tokenize.STRING):
            out.append(tok.string)
    return " ".join(out)


@dataclass(frozen=True)
class Tower(Part):
    """A stack of layers of its own beside the model's, run over the sequence before the model's layers (an encoder
    tower), its terms model-level under ``tower.``."""

    key = "tower"
    order = 60
    summary = "a stack of layers beside the model's"

    stack: Stack

    def input_terms(self, e, model, seq_len):
        e.out.extend(self.stack.terms(model, "tower.", seq_len, 1))


@pytest.fixture
def tower():
    register(Tower)
    yield Tower
    parts.unregister("tower")


@pytest.mark.parametrize("mask", ["causal", "bidirectional"])
def test_a_stack_beside_the_layers_counts_at_its_own_width_and_mask(tower, mask):
    """A 2-layer stack 32 wide (4 heads, SwiGLU 48) beside the model: its parameters per layer 4·w² (q, k, v, o) +
    3·w·48 + two norms of w; its matmul FLOPs per token 2·(4·w² + 3·w·48) per layer, and the scores and values
    2·2·w per key met: in the causal view (s + 1) / 2 keys on average under a causal mask, all s keys under a
    bidirectional one (every view)."""
    w, ff, s = 32, 48, 20
    stack = {"d_model": w, "n_layers": 2, "attention": {"n_heads": 4}, "ffn": {"kind": "gated", "d_ff": ff}, "mask": mask}
    with_tower = tally(from_data({**BASE, "tower": {"stack": stack}}), seq_len=s, convention="causal")
    without = tally(from_data(BASE), seq_len=s, convention="causal")
    assert with_tower.params - without.params == 2 * (4 * w * w + 3 * w * ff + 2 * w)
    keys = Fraction(s + 1, 2) if mask == "causal" else s
    assert with_tower.flops_per_token - without.flops_per_token == 2 * (2 * (4 * w * w + 3 * w * ff) + 2 * 2 * w * keys)


@dataclass(frozen=True)
class Kept(Part):
    """A part that keeps ``elements`` 16-bit elements per token in every layer for backward (a stream's copy)."""

    key = "kept"
    order = 61
    summary = "kept elements in every layer"

    elements: Positive

    def kept_elements(self, model):
        return self.elements


@pytest.fixture
def kept():
    register(Kept)
    yield Kept
    parts.unregister("kept")


def test_training_memory_counts_what_parts_keep_and_the_positions_they_add(prefix, kept):
    """Activations: the layers run over the prefix's P positions as over the sequence's own, so a sequence of s
    tokens keeps what one of s + P keeps without the prefix; a part that keeps k elements per token in each layer
    adds 2·k bytes per token and layer (16-bit), L·2·k·s·b in all."""
    from ffncalc.analysis.memory import activation_bytes
    from ffncalc.analysis.plan import Step

    s, b, k = 16, 2, 24
    base = from_data(BASE)
    for recompute in ("none", "selective"):
        step = Step(seq_len=s, micro_batch=b, recompute=recompute)
        longer = Step(seq_len=s + P, micro_batch=b, recompute=recompute)
        assert activation_bytes(from_data({**BASE, "prefix": {"length": P}}), step) == activation_bytes(base, longer)
        with_kept = activation_bytes(from_data({**BASE, "kept": {"elements": k}}), step)
        assert with_kept - activation_bytes(base, step) == LAYERS * 2 * k * s * b
