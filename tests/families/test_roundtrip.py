"""Configs as transformers itself writes them, counted exactly.

``scripts/hf_roundtrip.py`` starts from each supported type's default configuration and from every public
config.json of that type, draws perturbations of the fields that shape the model (Hypothesis, a fixed seed per
base), has transformers save each with ``save_pretrained`` and records what transformers builds from the file it
wrote, parameter by parameter (tests/hf_roundtrip/); CI reruns it with --check. Here each recorded file is read as
a user's config.json would be and compared with that build, component by component; no transformers needed.
"""

import json
import sys
from pathlib import Path

import pytest

from ffncalc.analysis.count import tally
from ffncalc.errors import InputError
from ffncalc.sources import hf
from ffncalc.sources.hf import coverage

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE.parent / "scripts"))
import hf_roundtrip  # noqa: E402  (the recorder's own readers of its records: no transformers at import)

RECORDS = {p.stem: hf_roundtrip.named(json.loads(p.read_text())) for p in sorted(hf_roundtrip.OUT.glob("*.json"))}
BUILT = hf_roundtrip.types()  # every supported type transformers builds at its defaults (tests/hf_defaults)


def test_every_type_built_at_its_defaults_is_recorded():
    """Perturbations of each type's defaults (and of each public config of the type), each changing something, all
    distinct; recorded with the transformers release the counts are proven against."""
    assert sorted(RECORDS) == sorted(BUILT)
    for model_type, record in RECORDS.items():
        assert record["transformers"] == coverage.TRANSFORMERS_VERSION
        assert all(c["set"]["changed"] or c["set"]["removed"] for c in record["cases"])
        sets = [(c["base"], json.dumps(c["set"], sort_keys=True)) for c in record["cases"]]
        assert len(set(sets)) == len(sets), model_type


# A case whose base cannot run a forward on the meta device (a data-dependent op) was only built, not run, so it may
# be no model at all; ffncalc may refuse such a case, in one line that names why transformers' forward would fail
# (each checked with a small real forward on the CPU): KV heads that do not divide the query heads, BLT's sub-configs
# with another number of cross-attention keys than the model's.
NOT_MODELS = ("do not divide", "transformers' forward cannot run it")


def _outcomes(record: dict) -> tuple[list[int], list[int], dict]:
    """(cases counted exactly, cases refused as no model, the rest with their differences)."""
    exact, refused, failures = [], [], {}
    for i, c in enumerate(record["cases"]):
        diffs = hf_roundtrip.compare(c, record["written"])
        if not diffs:
            exact.append(i)
        elif not c["runs"] and len(diffs) == 1 and diffs[0].startswith("refused:") and any(r in diffs[0] for r in NOT_MODELS):
            refused.append(i)
        else:
            failures[i] = diffs
    return exact, refused, failures


@pytest.mark.parametrize("model_type", BUILT)
def test_configs_transformers_wrote_count_exactly_per_component(model_type):
    """Every case counted exactly, component by component, twenty or more of them from the type's defaults."""
    record = RECORDS[model_type]
    exact, refused, failures = _outcomes(record)
    assert not failures, failures
    from_defaults = [
        i for i in exact if record["cases"][i]["base"] == f"defaults:{model_type}" and not record["cases"][i].get("pinned")
    ]
    assert len(from_defaults) >= 20, (len(from_defaults), refused)


def _qwen3_moe_saved(tmp_path: Path, **changes) -> Path:
    """Qwen3MoeConfig's defaults as transformers 5.23.0's save_pretrained writes them: the expert count under
    num_local_experts, the name attribute_map gives num_experts."""
    data = json.loads((HERE / "hf_defaults" / "configs" / "qwen3_moe.json").read_text())
    data.pop("num_local_experts")  # 128, the class default, as to_dict writes it
    data.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data, indent=2, sort_keys=True))
    return path


def test_the_expert_count_transformers_writes_is_the_one_counted(tmp_path):
    """Qwen3-MoE at its defaults with 8 experts, saved as transformers writes it, by hand: 24 layers of attention
    (q and o 2048×2048, k and v 2048×256 for 4 KV heads of 64, q/k norms of 64), 8 experts of three 2048×768
    matrices, a 2048×8 router and two norms; untied 151936×2048 embeddings and head; a final norm."""
    per_layer = (2 * 2048 * 2048 + 2 * 2048 * 256 + 2 * 64) + 8 * 3 * 2048 * 768 + 8 * 2048 + 2 * 2048
    expected = 24 * per_layer + 2 * 151936 * 2048 + 2048
    assert expected == 1_755_288_576  # transformers' own build of that file
    assert tally(hf.load(_qwen3_moe_saved(tmp_path, num_local_experts=8))[1]).params == expected


def test_the_reported_configs_are_recorded_and_counted():
    """Qwen3-MoE (its defaults and Qwen3-30B-A3B, whose file states num_experts) and Mellum with 8 experts, saved by
    transformers, which writes the count as num_local_experts: recorded with what transformers builds, and counted
    exactly above."""
    pinned = {(t, c["base"], json.dumps(c["set"]["changed"])) for t, r in RECORDS.items() for c in r["cases"] if c.get("pinned")}
    assert pinned == {
        ("qwen3_moe", "defaults:qwen3_moe", '{"num_local_experts": 8}'),
        ("qwen3_moe", "public:qwen3-30b-a3b", '{"num_experts": 8}'),
        ("mellum", "defaults:mellum", '{"num_local_experts": 8}'),
    }
    qwen = next(c for c in RECORDS["qwen3_moe"]["cases"] if c.get("pinned") and c["base"] == "defaults:qwen3_moe")
    assert sum(n for _, n in hf_roundtrip.expand(qwen["params"])) == 1_755_288_576  # the transformers figure
    assert qwen["saved"]["changed"] == {"num_local_experts": 8}  # the name transformers writes


def test_a_name_that_is_not_a_field_wins_as_in_transformers(tmp_path):
    """A file stating both names: transformers sets the class's fields first (num_experts) and every other key
    after it (num_local_experts, through attribute_map), so the second is the one it builds."""
    both = tally(hf.load(_qwen3_moe_saved(tmp_path, num_local_experts=8, num_experts=64))[1]).params
    assert both == tally(hf.load(_qwen3_moe_saved(tmp_path, num_local_experts=8))[1]).params
    per_expert = 24 * (3 * 2048 * 768 + 2048)  # three matrices and a router row in each of 24 layers
    alone = tally(hf.load(_qwen3_moe_saved(tmp_path, num_experts=64))[1]).params  # an older file's name
    assert alone - both == 56 * per_expert


def test_every_alias_is_honoured_as_transformers_honours_it():
    """Each attribute_map pair of each type, stated by hand under the alias alone, the attribute alone and both
    names at once (transformers builds the name that is not a field): ffncalc counts what transformers builds,
    component by component; where the new value changes transformers' build (``shapes``) it changes ours with it."""
    failures, shaping = {}, 0
    for model_type, record in RECORDS.items():
        start = hf_roundtrip.base_config(f"defaults:{model_type}")
        base_total = tally(hf.load(HERE / "hf_defaults" / "configs" / f"{model_type}.json", text=True)[1], partial=True).params
        for c in (a for a in record["aliases"] if "params" in a):
            data = hf_roundtrip.patched(start, c["file"])
            if diffs := hf_roundtrip.compare_file(data, c):
                failures[(model_type, *c["stated"])] = diffs
            truth = sum(n for _, n in hf_roundtrip.expand(c["params"]))
            assert (truth != base_total) == c["shapes"] or len(c["stated"]) > 1, (model_type, c["stated"])
            shaping += c["shapes"]
    assert not failures, failures
    assert shaping >= 100  # the test can fail: most pairs name a size


def test_every_alias_a_family_reads_is_stated_both_ways():
    """Where a family reads either name of an attribute_map pair, the record states the pair under each name, or
    records why transformers builds no other value of that key alone (a validation that ties it to another key:
    InternLM3's bias to qkv_bias, GPT-Neo's num_layers to its attention_types; a forward that fails)."""
    from ffncalc.sources.hf.keys import aliases, listing

    missing, unbuilt = [], 0
    for model_type, record in RECORDS.items():
        text_type = hf.read_config(HERE / "hf_defaults" / "configs" / f"{model_type}.json").model_type
        stated = {(c["alias"][0], c["alias"][1], tuple(c["stated"])) for c in record["aliases"]}
        refused = {tuple(c["alias"]) for c in record["aliases"] if c.get("unbuilt")}
        for alias, key in aliases(text_type).items():
            if alias in listing()[model_type] or key in listing()[model_type]:
                unbuilt += (alias, key) in refused
                for name in (alias, key):
                    if (alias, key, (name,)) not in stated and (alias, key) not in refused:
                        missing.append((model_type, alias, key, name))
    assert not missing, missing
    assert unbuilt < 10  # the exceptions stay few


def test_the_keys_each_family_reads_are_listed():
    """config_keys.json (docs/config-keys.md, ``ffncalc families -f json``) is the union of the keys each family
    looks up over every recorded configuration of its type."""
    from ffncalc.sources.hf.keys import LISTING

    assert LISTING.read_text() == hf_roundtrip.keys_listing(RECORDS)


def _rows(model) -> dict:
    return {(r.component, r.layers): (r.params, r.flops) for r in tally(model).rows}


@pytest.mark.parametrize("model_type", BUILT)
def test_import_then_count_equals_count_of_the_config(model_type, tmp_path):
    """``ffncalc import`` of every recorded config (the bases and the configs transformers wrote) writes a YAML
    spec whose count equals the config.json's, component by component, parameters and FLOPs."""
    from ffncalc.sources.yaml import parse_spec

    record = RECORDS[model_type]
    configs = list(record["written"].values()) + [
        hf_roundtrip.patched(record["written"][c["base"]], c["saved"]) for c in record["cases"]
    ]
    failures = []
    for i, data in enumerate(configs):
        path = tmp_path / "config.json"
        path.write_text(json.dumps(data))
        try:
            c = hf.read_config(path)
            text = hf.to_yaml(c)
        except InputError:  # refused in one line: held by the round-trip test above
            continue
        if _rows(parse_spec(text, f"{model_type}-{i}.yaml")) != _rows(hf.to_spec(c)):
            failures.append(i)
    assert not failures, failures
