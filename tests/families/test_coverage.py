"""Every public config.json in hf_configs/ counted exactly against what transformers instantiates.

The truth is recorded by ``scripts/hf_truth.py`` into hf_truth/ (the transformers class built from the
config on the meta device: every parameter by name with its element count, and the buffers); CI reruns
the script with --check, so the recording is what transformers 5.23.0 builds today. Here each config is
imported, counted and compared with it, in total and component by component, by the family's own map
of module names; and the imported spec is proven against ffncalc's reference torch modules.

FLOPs: the truth also holds one forward of the transformers class on the meta device under torch's
FlopCounterMode (eager attention, batch 1, a short sequence and one past every sliding window and attention
chunk; the record says how), each op by the module it ran in and the parameter it multiplies; ffncalc's
``exact`` count (the executed-dense view: the full attention square, as eager attention computes it, masked)
must equal it per component and run of identical layers. Where transformers' code path does other matmul
work than the architecture's, the difference is one of the KNOWN causes below, each checked by its own formula.
"""

import json
import re
from pathlib import Path

import pytest

from ffncalc.analysis import hfcheck
from ffncalc.analysis.count import tally
from ffncalc.sources import hf

HERE = Path(__file__).resolve().parents[1]
CONFIGS, TRUTH = HERE / "hf_configs", HERE / "hf_truth"
NAMES = sorted(p.stem for p in CONFIGS.glob("*.json"))
SOURCES = json.loads((HERE / "hf_configs.sources.json").read_text())


def truth(name: str) -> hfcheck.Measured:
    return hfcheck.Measured.from_record(json.loads((TRUTH / f"{name}.json").read_text()))


def test_every_config_has_its_truth_and_its_source():
    assert sorted(p.stem for p in TRUTH.glob("*.json")) == NAMES
    assert sorted(SOURCES) == NAMES
    assert all(SOURCES[name]["url"].startswith("https://huggingface.co/") for name in NAMES)
    assert {json.loads((TRUTH / f"{n}.json").read_text())["transformers"] for n in NAMES} == {"5.23.0"}


@pytest.mark.parametrize("name", NAMES)
def test_total_equals_transformers(name):
    assert tally(hf.load(CONFIGS / f"{name}.json", text=True)[1]).params == sum(n for _, n in truth(name).params)


@pytest.mark.parametrize("name", NAMES)
def test_every_component_equals_transformers(name):
    report = hfcheck.check(hf.read_config(CONFIGS / f"{name}.json"), model=name, measured=truth(name))
    assert report.ok, report.failures
    assert not any(ch.component.startswith("(unmatched)") for ch in report.checks)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.torch
def test_imported_spec_verifies_against_reference_modules(name):
    from ffncalc.analysis.verify import verify

    label, spec = hf.load(CONFIGS / f"{name}.json", text=True)
    report = verify(spec, model=label, seq_len=8)
    assert report.ok, report.failures


# Configs whose forward cannot run on the meta device, with the recorded reason: none today.
UNMEASURED: dict[str, str] = {}

# Mamba-2 mixers: ffncalc counts the SSD in its quadratic dual form over the whole sequence (blocks/mamba2.py);
# transformers' torch path runs the chunked scan (chunks of chunk_size, the sequence padded to a whole chunk, with
# B, C repeated to every head and the states passed between chunks), other products for the same map.
MAMBA2_DUAL_FORM = {
    "bamba-9b",
    "granite-4.0-h-350m",
    "mamba-codestral-7b-mlx-8bit",
    "nemotron-3-nano-30b-a3b",
    "nemotron-h-56b-base-8k",
}


def _config_ints(data, pattern: str) -> set[int]:
    """Every integer in the config (nested dicts included) under a key matching ``pattern``."""
    found = set()
    for key, value in data.items():
        if isinstance(value, dict):
            found |= _config_ints(value, pattern)
        elif type(value) is int and re.search(pattern, key):
            found.add(value)
    return found


def _known(name: str, c, check, run, ours: dict[str, int]) -> str | None:
    """The cause of a difference between our exact count and transformers' executed FLOPs, or None; ``ours``:
    our FLOPs of the pass by component in the check's layers."""
    s = check.seq_len
    # A causal depthwise convolution in transformers' torch path: conv1d with K - 1 zeros of padding on both
    # sides, then the first s outputs kept: (s + K - 1)·K multiply-adds per channel where the causal
    # convolution needs s·K, K the config's kernel width.
    if re.search(r"(conv1d|conv\.conv)$", check.component) and check.ours:
        extra = check.transformers - check.ours
        kernel = 1 + extra * s // check.ours
        if extra > 0 and extra * s % check.ours == 0 and kernel in _config_ints(c.data, r"conv|L_cache|kernel"):
            return f"conv padded to s + K - 1 outputs, K = {kernel}"
    # Llama 4's Llama4TextExperts runs every routed expert on every token, the router's scores zeroing the
    # others: n_experts / top_k times the experts' work of the tokens' top_k.
    if check.component == "ffn.experts" and c.data.get("model_type", "").startswith("llama4"):
        text = c.data.get("text_config", c.data)
        if check.transformers * text["num_experts_per_tok"] == check.ours * text["num_local_experts"]:
            return "every expert on every token"
    # NLLB-MoE: transformers 5.23's NllbMoeExperts one-hot encodes the router's one-hot top-1 mask again, running
    # expert_0 over the num_experts - 1 (token, expert) pairs it leaves out and expert_1 over the first choice:
    # num_experts rows a token where the top-2 design computes 2 (tests/families/test_encoder_decoders.py)
    if check.component.endswith("ffn.experts") and c.data.get("model_type") == "nllb-moe":
        if 2 * check.transformers == check.ours * c.data["num_experts"]:
            return "NLLB-MoE: expert_0 over every pair the top-1 mask leaves out"
    layers = range(*check.layers) if check.layers else range(0)
    core_modules = {m for m, p, _, _ in run.modules if not p and any(f".{i}." in f".{m}." for i in layers)}
    # The UT system of the gated delta rule solved by torch.linalg.solve_triangular, which FlopCounterMode has no
    # formula for (recorded as uncounted in those layers): our solve products are the difference.
    solved = {m for m, op in run.uncounted if op == "linalg_solve_triangular"}
    if check.component == hfcheck.CORE and core_modules and core_modules <= solved:
        if check.ours - ours["linear_attn.solve"] == check.transformers:
            return "UT solve uncounted by FlopCounterMode"
    # Kimi Delta Attention: a decay per key channel inside K_βKᵀ and QKᵀ, which transformers' torch path
    # (torch_chunk_kda) computes as a broadcast product summed over d_k, elementwise work FlopCounterMode does
    # not count (FLA's chunk_kda folds the decay into q and k and multiplies matrices): ours less those two.
    if check.component == hfcheck.CORE and c.data.get("model_type") == "kimi_linear" and "attn.kkt" in ours:
        if check.ours - ours["attn.kkt"] - ours["attn.qk"] == check.transformers:
            return "KDA: decayed K_βKᵀ and QKᵀ as broadcast products"
    if (
        check.component == hfcheck.CORE
        and name in MAMBA2_DUAL_FORM
        and core_modules
        and not any(re.search(r"attn|attention", m) for m in core_modules)
    ):  # the mixers, not attention
        return "Mamba-2: quadratic dual form against transformers' chunked scan"
    return None


@pytest.mark.parametrize("name", NAMES)
def test_flops_per_component_equal_transformers(name):
    c = hf.read_config(CONFIGS / f"{name}.json")
    measured = truth(name)
    if measured.unmeasured:
        assert UNMEASURED.get(name) == measured.unmeasured
        return
    assert name not in UNMEASURED
    spec = hf.to_spec(hf.text_only(c))  # the recorded class is the language model
    # batch 1; a short sequence and one past every window or chunk the config states
    assert [(r.batch, r.seq_len) for r in measured.flops] == [(1, n) for n in hfcheck.flop_lengths(c, spec)]
    assert all(measured.flops[-1].seq_len > w for w in _config_ints(c.data, r"^(sliding_window|attention_chunk_size)$"))
    checks = hfcheck.check_flops(c, measured, spec=spec)
    assert {ch.seq_len for ch in checks} == {r.seq_len for r in measured.flops}
    assert not any(ch.component.startswith("(unmatched)") for ch in checks)
    for run in measured.flops:
        rows = tally(spec, convention="exact", seq_len=run.seq_len).rows
        for ch in (ch for ch in checks if ch.seq_len == run.seq_len and not ch.ok):
            ours: dict[str, int] = {}
            for r in (r for r in rows if r.layers == ch.layers):
                ours[r.component] = ours.get(r.component, 0) + r.flops * run.seq_len
            assert _known(name, c, ch, run, ours), ch
