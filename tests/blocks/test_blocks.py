"""Blocks are plugins: a kind defined here, in the test, works in every command with no edit under ffncalc/.

Also: the registry's kinds, the trusted preset path against the validated one, and the absence of type
tests outside the block modules.
"""

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from ffncalc import blocks
from ffncalc.analysis.count import tally
from ffncalc.blocks import Block, register
from ffncalc.model import from_data
from ffncalc.model.schema import Positive
from ffncalc.sources import presets

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class ScaledResidual(Block):
    """A toy FFN-slot block: y = s ⊙ (W x) + b, one d×d weight, a learned scale of d and an optional bias."""

    kind = "scaled_residual"
    slot = "ffn"
    summary = "a toy block: a square projection and a learned per-feature scale"

    rank: Positive = 1  # a spec field, to prove the schema is the block's own (unused by the maths)
    bias: bool = False

    def describe(self) -> str:
        return "scaled residual"

    def terms(self, e, model, seq_len):
        d, n = model.d_model, e.n
        e.linear("ffn.proj", d, d, self.bias, n)
        e.term("ffn.scale", "norm", (d,), n, elementwise=n * d)

    def kept_elements(self, model):
        return 2 * model.d_model  # the input (for proj's weight gradient) and proj's output (for the scale's)

    def torch_module(self, model, causal):
        return _toy_module()(model.d_model, self.bias)


@cache
def _toy_module():
    import torch
    from torch import nn

    from ffncalc.blocks._torch import Linear

    class Toy(nn.Module):
        def __init__(self, d, bias):
            super().__init__()
            self.proj = Linear(d, d, bias=bias)
            self.scale = nn.Parameter(torch.ones(d))

        def forward(self, x):
            return self.scale * self.proj(x)

    return Toy


@pytest.fixture
def toy():
    register(ScaledResidual)
    yield ScaledResidual
    blocks.unregister("ffn", "scaled_residual")


D, LAYERS, VOCAB, HEADS = 64, 3, 100, 4
SPEC = f"""name: toy
vocab_size: {VOCAB}
d_model: {D}
n_layers: {LAYERS}
context_length: 32
attention: {{n_heads: {HEADS}}}
ffn: {{kind: scaled_residual, rank: 2, bias: true}}
layers:
  - {{repeat: 1, ffn: {{kind: gated, d_ff: 96}}}}
  - {{repeat: 2}}
"""


def hand_params() -> int:
    """Embedding and head (untied), attention q/k/v/o without biases, 2 RMSNorms a layer and a final one;
    layer 0 a SwiGLU of 96, layers 1-2 the toy: W (d×d) + bias (d) + scale (d)."""
    attention = 4 * D * D
    toy = D * D + D + D
    gated = 3 * D * 96
    return 2 * VOCAB * D + LAYERS * (attention + 2 * D) + D + gated + 2 * toy


@pytest.fixture
def spec_file(tmp_path, toy):
    path = tmp_path / "toy.yaml"
    path.write_text(SPEC)
    return str(path)


def test_count_every_format(cli, spec_file):
    code, out, err = cli("count", spec_file, "--format", "json", "--per-layer")
    assert code == 0, err
    data = json.loads(out)
    assert data["totals"]["params"] == hand_params()
    proj = [c for c in data["components"] if c["component"] == "ffn.proj.weight"]
    assert proj == [{**proj[0], "layers": [1, 3], "params": 2 * D * D, "forward_flops_per_token": 2 * 2 * D * D}]
    for fmt in ("table", "markdown", "csv", "latex"):
        code, out, err = cli("count", spec_file, "--format", fmt)
        assert code == 0 and "ffn.scale" in out, err


@pytest.mark.torch
def test_verify_against_torch(cli, spec_file):
    code, out, err = cli("verify", spec_file, "--seq-len", "8", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["ok"], out + err
    names = {c["component"] for c in data["components"]}
    assert {"ffn.proj.weight", "ffn.proj.bias", "ffn.scale"} <= names


def test_train_and_infer(cli, spec_file):
    code, out, err = cli("train", spec_file, "--tokens", "1M", "--seq-len", "16", "--recompute", "selective", "--format", "json")
    assert code == 0, err
    figures = json.loads(out)["figures"]
    # Korthikanti's layer with each block's own kept elements: attention d + 2·(h + kv)·head_dim, the toy 2d,
    # SwiGLU d + 4·d_ff; a 1-byte mask per sublayer; two norms of 2·d bytes each; and a flash kernel's fp32
    # log-sum-exp per query and head, 4 · heads · 16 bytes a layer.
    attention = 2 * (D + 2 * (HEADS + HEADS) * (D // HEADS)) + D
    per_token = [attention + 2 * (D + 4 * 96) + D + 4 * D] + 2 * [attention + 2 * 2 * D + D + 4 * D]
    assert figures["activation_bytes_per_device"]["value"] == 16 * sum(per_token) + LAYERS * 4 * HEADS * 16
    assert figures["params"]["value"] == hand_params()
    code, out, err = cli("infer", spec_file, "--prompt", "10", "--generate", "5", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["figures"]["kv_bytes_per_token"]["value"] == LAYERS * 2 * D * 2  # K and V, bf16
    for fmt in ("table", "markdown", "csv", "latex"):
        for args in (
            ("train", spec_file, "--tokens", "1M", "--seq-len", "16"),
            ("infer", spec_file, "--prompt", "10", "--generate", "5"),
        ):
            code, out, err = cli(*args, "--format", fmt)
            assert code == 0 and out, err


def test_table_and_presets_style_listing(cli, spec_file):
    code, out, err = cli("table", spec_file, "--format", "json")
    row = json.loads(out)["models"][0]
    assert code == 0 and row["ffn"] == [[1, "SwiGLU"], [2, "scaled residual"]], err


def test_bad_field_of_a_new_kind_names_it(cli, spec_file):
    Path(spec_file).write_text(SPEC.replace("rank: 2", "rank: 0"))
    code, _, err = cli("count", spec_file)
    assert code == 2 and ":7: ffn.rank: Input should be greater than 0" in err


def test_unregistered_kind_is_refused(cli, tmp_path):
    path = tmp_path / "toy.yaml"
    path.write_text(SPEC)
    code, _, err = cli("count", str(path))
    assert code == 2 and "ffn: Input tag 'scaled_residual'" in err


def test_registry_holds_the_builtin_kinds():
    assert {"mha", "mla", "mamba2", "none"} <= set(blocks.kinds("attention"))
    assert {"dense", "gated", "moe", "none"} <= set(blocks.kinds("ffn"))
    for slot in ("attention", "ffn"):
        for kind, cls in blocks.kinds(slot).items():
            assert cls.kind == kind and cls.slot == slot and cls.summary


@pytest.mark.parametrize("name", presets.names())
def test_trusted_presets_equal_validated(name):
    """Presets are built without validation; validated, they must be the same model."""
    import yaml

    data = yaml.safe_load(presets.text(name))
    assert from_data(data, check=False) == from_data(data)


def test_counting_a_preset_needs_no_pydantic():
    code = (
        "import sys; from ffncalc.sources import presets; from ffncalc.analysis.count import tally; "
        "tally(presets.load('deepseek-v3')[1]); print('pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr


def test_no_type_tests_of_blocks_or_specs_outside_blocks():
    """Only block modules and the schema reader may ask what type a spec object is."""
    names = {cls.__name__ for slot in ("attention", "ffn") for cls in blocks.kinds(slot).values()}
    names |= {"ModelSpec", "Norm", "LayerGroup", "LlamaWidth", "Layer", "Model", "Block"}
    pattern = re.compile(r"isinstance\([^)]*\b(" + "|".join(sorted(names)) + r")\b")
    # ffncalc/api/'s own Model is the public model (a label and a resolved stack), not a spec object: the API may
    # ask whether it was given one
    public = re.compile(r"isinstance\([^)]*\b(" + "|".join(sorted(names - {"Model"})) + r")\b")
    offenders = [
        f"{path}:{i}"
        for path in (ROOT / "ffncalc").rglob("*.py")
        if "blocks" not in path.parts and path.name != "schema.py"
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if (public if path.parent.name == "api" else pattern).search(line)
    ]
    assert offenders == []


# What names a block outside blocks/: a loop's or a parameter's usual name for one, a layer's slots, a block's body.
BLOCK_NAMES = {
    "b",
    "block",
    "blk",
    "blocks",
    "mixer",
    "mixers",
    "member",
    "ffn",
    "attn",
    "attention",
    "moe",
    "expert",
    "inner",
    "body",
}
SLOTS = {"attention", "ffn", "shared", "mixer", "body"}


def kind_attributes() -> set[str]:
    """The names some block kind answers to beyond the Block protocol: its spec fields, properties and methods."""
    import dataclasses

    names: set[str] = set()
    for slot in ("attention", "ffn", "shared"):
        for cls in blocks.kinds(slot).values():
            names |= {f.name for f in dataclasses.fields(cls)}
            for k in cls.__mro__[: cls.__mro__.index(Block)]:
                names |= set(vars(k))
    return {n for n in names if not n.startswith("__")} - set(vars(Block)) - set(Block.__annotations__)


def looks_like_a_block(node) -> bool:
    import ast

    if isinstance(node, ast.Name):
        return node.id in BLOCK_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr in SLOTS
    if isinstance(node, ast.Call):  # block.body(), block.resolve(d), ...
        return isinstance(node.func, ast.Attribute) and node.func.attr in {"body", "resolve"}
    return False


def test_no_attribute_probes_of_blocks_outside_blocks():
    """Outside blocks/ a block is asked through the Block protocol, never probed for what its kind has. Caught:
    any getattr or hasattr (i) whose attribute is a literal name that some kind has beyond the protocol (n_heads,
    kv_lora_rank, n_experts, chunk_size, ...), whatever the object is called (but ``self``, never a block outside
    blocks/); or (ii) whose object is named as a block is (b, block, mixer, ffn, layer.attention, block.body(), ...),
    whatever the attribute, a computed one too. Not caught: a computed attribute name on an object named otherwise,
    and other reflection (vars, __dict__)."""
    import ast

    kinds = kind_attributes()
    assert {"n_heads", "kv_heads", "kv_lora_rank", "n_experts", "top_k", "chunk_size"} <= kinds
    offenders = []
    for path in (ROOT / "ffncalc").rglob("*.py"):
        if "blocks" in path.relative_to(ROOT / "ffncalc").parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2
            ):
                continue
            target, name = node.args[:2]
            literal = name.value if isinstance(name, ast.Constant) else None
            is_self = isinstance(target, ast.Name) and target.id in ("self", "cls")
            if (literal in kinds and not is_self) or looks_like_a_block(target):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert offenders == []


def test_deepseek_layers_differ_per_layer():
    model = presets.load("deepseek-v3")[1]
    runs = model.runs()
    assert [(r.first, r.stop) for r in runs] == [(0, 3), (3, 61)]
    assert tally(model).params == 671_026_404_352  # DeepSeek-V3 technical report: 671B total


@pytest.mark.torch
def test_block_options_by_hand_and_against_torch():
    """Attention sinks, a norm per head, LayerNorm1p, OPT's position offset and a learned router correction
    bias, counted by hand and proven against the reference torch modules in both attention views."""
    from ffncalc.analysis.verify import verify

    data = dict(
        vocab_size=50,
        d_model=32,
        n_layers=2,
        context_length=16,
        positions="learned",
        position_offset=2,
        attention={"n_heads": 4, "n_kv_heads": 2, "qk_norm": "each_head", "sinks": True},
        ffn={"kind": "moe", "n_experts": 4, "top_k": 2, "correction_bias": True, "expert": {"kind": "gated", "d_ff": 8}},
        norm={"kind": "layernorm1p"},
    )
    model = from_data(data)
    embeddings = 50 * 32 + (16 + 2) * 32 + 50 * 32  # tokens, positions (2 more rows), untied head
    norms = 2 * 2 * 32  # two LayerNorm1p a layer, weight and bias
    attention = 32 * 32 + 2 * (32 * 16) + 32 * 32 + 2 * 4 * 8 + 2 * 2 * 8 + 4  # q, k, v, o, per-head norms, sinks
    moe = 32 * 4 + 4 + 4 * 3 * 32 * 8  # router, correction bias, 4 SwiGLU experts
    assert tally(model).params == embeddings + 2 * (norms + attention + moe) + 2 * 32
    for convention in ("exact", "causal"):
        report = verify(model, seq_len=8, convention=convention)
        assert report.ok, report.failures


@pytest.mark.torch
def test_a_layer_may_be_its_ffn_alone():
    """attention kind none: the layers of a hybrid stack that hold only an MLP or a mixture (Nemotron-H's "-"
    and "E" layers); one norm a layer, before the FFN."""
    from ffncalc.analysis.verify import verify

    model = from_data(
        dict(
            vocab_size=20,
            d_model=16,
            n_layers=3,
            context_length=8,
            attention={"n_heads": 2},
            ffn={"kind": "none"},
            norm={"per_layer": 1},
            layers=[
                {"repeat": 1},
                {"repeat": 2, "attention": {"kind": "none"}, "ffn": {"kind": "dense", "d_ff": 32, "activation": "relu2"}},
            ],
        )
    )
    per_layer = [16 + 4 * 16 * 16, 16 + 2 * 16 * 32, 16 + 2 * 16 * 32]  # norm + q/k/v/o; norm + up/down
    assert tally(model).params == 2 * 20 * 16 + sum(per_layer) + 16
    assert sum(b.cache_elements(model) for b in model.blocks()) == 2 * 16  # K and V of the one attention layer
    for convention in ("exact", "causal"):
        report = verify(model, seq_len=4, convention=convention)
        assert report.ok, report.failures


@pytest.mark.torch
def test_a_layer_may_be_its_mixer_alone():
    """ffn kind none: no parameters and no work after the mixer; one norm a layer, before the mixer."""
    from ffncalc.analysis.verify import verify

    model = from_data(
        dict(
            vocab_size=20,
            d_model=16,
            n_layers=2,
            context_length=8,
            attention={"n_heads": 2},
            ffn={"kind": "none"},
            norm={"per_layer": 1},
        )
    )
    assert tally(model).params == 2 * 20 * 16 + 2 * (16 + 4 * 16 * 16) + 16  # embed, head; norm + q/k/v/o; final
    report = verify(model, seq_len=4)
    assert report.ok, report.failures


def test_the_block_index_is_current():
    """Reading a spec imports only the block modules it uses, found through blocks/_index.py: every built-in
    kind must be in it, at its module (python -m ffncalc.blocks rewrites it)."""
    from ffncalc import blocks

    assert blocks.KINDS == blocks.index()


def test_counting_a_preset_imports_only_the_blocks_it_uses():
    import subprocess
    import sys

    code = (
        "import sys; from ffncalc.sources import presets; from ffncalc.analysis.count import tally; "
        "tally(presets.load('llama3-8b')[1]); "
        "print(sorted(m for m in sys.modules if m.startswith('ffncalc.blocks.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "ffncalc.blocks.mla" not in out and "ffncalc.blocks.mamba2" not in out, out
    assert "ffncalc.blocks.attention" in out and "ffncalc.blocks.gated_ffn" in out, out
