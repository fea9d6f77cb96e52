"""Configs as transformers itself writes them: perturb a configuration's shape, save it with transformers'
``save_pretrained``, and record what transformers builds from the file it wrote (the ground truth that
tests/families/test_roundtrip.py holds ffncalc to, component by component), or check that the records are current.

    python scripts/hf_roundtrip.py                    # (re)write tests/hf_roundtrip/TYPE.json for every type,
                                                      # and ffncalc/sources/hf/config_keys.json
    python scripts/hf_roundtrip.py TYPE …             # only these types' records
    python scripts/hf_roundtrip.py --check            # exit 1 if a record differs from what transformers writes
                                                      # and builds now (no drawing: each recorded case is redone)
    python scripts/hf_roundtrip.py --explore 8 --seed 2 [TYPE …]
                                                      # draw other cases, compare ffncalc, write nothing
    python scripts/hf_roundtrip.py --keys             # only config_keys.json, from the records

Each case starts from a base configuration: a type's class defaults (tests/hf_defaults/configs/) or a recorded
public config.json of that type (tests/hf_configs/). Hypothesis draws a perturbation of the fields that shape the
model (``draw``): each integer (widths, heads, KV heads, head dims, vocabulary, experts, top-k, shared experts,
windows, ranks) to a quarter, a half, double or one more; the depth to a small one, with layer counts rescaled to
it; per-layer lists and index lists and settings by layer index redrawn at the new depth; the flags that add or
drop weights flipped; a changed value written under its attribute_map alias. transformers must build it
(``from_dict``, as from_pretrained reads a file) and, where the base itself runs a forward on the meta device, run
one (a model that only builds, such as KV heads that do not divide the query heads, is no model); a perturbation
it refuses is drawn again, at most ATTEMPTS times per case wanted. ``save_pretrained`` writes the config.json,
``AutoConfig.from_pretrained`` reads it back and the causal-LM class (a wrapper's language model) is built on the
meta device: every parameter by name and size. Beside the draws, ``alias_cases`` writes by hand, from the defaults,
a file per attribute_map pair stating a new value under the alias alone, the attribute alone and both.

A record holds each base's config.json as transformers writes it (``written``), and per case the perturbation
(``set``: paths changed and removed, text_config/KEY for a wrapper's language model), the file transformers wrote
as its difference from the base's (``saved``), whether a forward ran (``runs``), the class built and its
parameters with each run of identical layers stored once (ffncalc.analysis.records.compact; the names once per
file, ``names``). The seeds are fixed per base, so a rerun with the recorded Hypothesis draws the same cases;
``--check`` does not draw: it redoes each recorded case and alias file and compares.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "tests" / "hf_roundtrip"
DEFAULTS = ROOT / "tests" / "hf_defaults" / "configs"
PUBLIC = ROOT / "tests" / "hf_configs"

PER_DEFAULT, PER_PUBLIC = 20, 3  # cases drawn from each type's defaults and from each public config
UNRUN_EXTRA = 5  # more where the base's forward cannot run on the meta device (cases built, not run)
DROPPED = ("auto_map", "quantization_config", "transformers_version", "_name_or_path")
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
DEPTHS = (1, 2, 3, 4, 5, 6, 8, 12)  # a case's depth: small, so that a draw builds and runs in a fraction of a second
ATTEMPTS = 60  # draws per case wanted, at most: a base whose perturbations transformers mostly refuses stops there
# integers that name no size: token ids, a chunked feed-forward's chunk, seeds, the tensor-parallel degree a
# checkpoint was trained at, a batch size of the patcher, the logits kept
NOT_SHAPES = re.compile(
    r"(_token_id|_token_index|^seed|chunk_size_feed_forward|pretraining_tp|num_logits_to_keep|"
    r"patching_batch_size|max_inference_chunksize|initializer|_id$)"
)
# integers that count layers, rescaled with the depth
COUNTS_LAYERS = re.compile(r"(layers|replace|layer_offset|layer_period|interval|_step$)")
# booleans that add or remove weights
SHAPING_FLAGS = re.compile(r"(bias|tie_word_embeddings|norm|share|gate|gated|use_)")
NOT_FLAGS = re.compile(
    r"(use_cache|use_return_dict|output_|return_dict|torchscript|_pruned|use_bfloat16|"
    r"is_encoder_decoder|is_decoder|add_cross_attention|tie_encoder_decoder)"
)


# --- a configuration as a flat map of paths, so that differences are small and nested parts stay exact ---------


def flat(data: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in data.items():
        if isinstance(value, dict) and value:
            out.update(flat(value, f"{prefix}{key}/"))
        else:
            out[f"{prefix}{key}"] = value
    return out


def unflat(items: dict) -> dict:
    out: dict = {}
    for path in sorted(items):
        *parents, last = path.split("/")
        node = out
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = items[path]
    return out


def difference(base: dict, new: dict) -> dict:
    a, b = flat(base), flat(new)
    changed = {k: v for k, v in b.items() if k not in a or a[k] != v or type(a[k]) is not type(v)}
    return {"changed": changed, "removed": sorted(k for k in a if k not in b)}


def patched(base: dict, diff: dict) -> dict:
    items = {k: v for k, v in flat(base).items() if k not in set(diff["removed"])}
    # a path that becomes a nested part replaces its value (a None text_config given keys)
    for path, value in diff["changed"].items():
        for i in range(1, path.count("/") + 1):
            items.pop("/".join(path.split("/")[:i]), None)
        items = {k: v for k, v in items.items() if not k.startswith(path + "/")}
        items[path] = value
    return unflat(items)


def base_config(base: str) -> dict:
    """A base configuration by name: "defaults:TYPE" or "public:NAME", without the keys that ask for more than
    the architecture (remote code, quantization) or name the writer."""
    kind, name = base.split(":", 1)
    path = DEFAULTS / f"{name}.json" if kind == "defaults" else PUBLIC / f"{name}.json"
    data = json.loads(path.read_text())
    return {k: v for k, v in data.items() if k not in DROPPED}


def text_path(data: dict) -> str:
    """Where the language model's keys are: a wrapper's text_config, or the top."""
    return "text_config/" if isinstance(data.get("text_config"), dict) else ""


# --- the ground truth: transformers writes, reads back and builds ---------------------------------------------


def build(data: dict, *, forward: bool = False, save: bool = True):
    """(the config.json transformers writes, the class built from it, its parameters); raises if transformers
    refuses the configuration at any step, or, with ``forward``, if a forward of 8 tokens fails on the meta device
    (a model that builds but cannot run, such as KV heads that do not divide the query heads, is no model).
    ``save=False``: ``data`` is the file itself, read by from_pretrained as it stands."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    with tempfile.TemporaryDirectory() as tmp:
        if save:
            CONFIG_MAPPING[data["model_type"]].from_dict(copy.deepcopy(data)).save_pretrained(tmp)
        else:  # the file as a person or an older release wrote it
            (Path(tmp) / "config.json").write_text(json.dumps(data, indent=2))
        saved = json.loads((Path(tmp) / "config.json").read_text())
        read = AutoConfig.from_pretrained(tmp)
    saved.pop("transformers_version", None)
    if text_path(data):
        read = read.get_text_config(decoder=True)
    from ffncalc.analysis.hfcheck import TEXT_CLASSES

    with torch.device("meta"):
        if read.model_type in TEXT_CLASSES:  # a causal LM of a text config no auto class maps (MllamaForCausalLM)
            import transformers

            net = getattr(transformers, TEXT_CLASSES[read.model_type])._from_config(read, attn_implementation="eager")
        else:
            net = AutoModelForCausalLM.from_config(read, attn_implementation="eager", experts_implementation="batched_mm")
    params = [(path, p.numel()) for path, p in net.named_parameters()]
    if forward:
        from ffncalc.analysis.hfcheck import flop_run

        flop_run(net, 1, 8)
    return saved, type(net).__name__, params


def compress(params: list[tuple[str, int]]) -> list:
    """Parameters with runs of identical layers (and experts) stored once (ffncalc.analysis.records.compact)."""
    from ffncalc.analysis.records import compact

    return compact(params)


def expand(params: list) -> list[tuple[str, int]]:
    from ffncalc.analysis.records import expanded

    return expanded(params, 2)


WRITTEN: dict[str, dict] = {}


def written(base: str) -> dict:
    """The config.json transformers writes for the base itself (cases record theirs as a difference from it)."""
    if base not in WRITTEN:
        WRITTEN[base] = build(base_config(base))[0]
    return WRITTEN[base]


def case(base: str, data: dict, perturbation: dict, *, forward: bool = False) -> dict:
    """One case; ``forward``: a forward on the meta device must run (where the base's does), recorded as "runs"."""
    saved, model_class, params = build(data, forward=forward)
    return {
        "base": base,
        "set": perturbation,
        "saved": difference(written(base), saved),
        "runs": forward,
        "model_class": model_class,
        "params": compress(params),
    }


def runs(base: str) -> bool:
    """Whether the base itself runs a forward on the meta device (then every case drawn from it must)."""
    try:
        build(base_config(base), forward=True)
        return True
    except Exception:  # noqa: BLE001 — a data-dependent op meta tensors cannot run
        return False


# --- the draws -------------------------------------------------------------------------------------------------


def aliases_of(model_type: str) -> dict[str, str]:
    """Both directions of the configuration class's attribute_map."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    cls = CONFIG_MAPPING.get(model_type)
    amap = {k: v for k, v in (getattr(cls, "attribute_map", None) or {}).items() if k != v}
    return {**amap, **{v: k for k, v in amap.items()}}


def choices(key: str, value: int) -> list[int]:
    if key in LAYER_KEYS:
        return sorted({*DEPTHS, value} - {value} if value <= max(DEPTHS) else set(DEPTHS))
    return sorted({max(1, value // 4), max(1, value // 2), value * 2, value + 1} - {value})


def draw(data_strategy, base: dict) -> tuple[dict, dict]:
    """One perturbation of ``base`` drawn with Hypothesis: (the configuration, its difference from the base).
    Each field changes with odds of one in four, so that a draw changes a few fields at once."""
    from hypothesis import strategies as st

    class Odds:  # one in four, in the booleans' place
        @staticmethod
        def booleans():
            return st.sampled_from((False, False, False, True))

    at = text_path(base)
    text = copy.deepcopy(base["text_config"]) if at else copy.deepcopy(base)
    aliases = aliases_of(text.get("model_type") or base["model_type"])
    depth_key = next((k for k in LAYER_KEYS if type(text.get(k)) is int), None)
    depth = text[depth_key] if depth_key else None
    new_depth = depth
    # the depth is always drawn where the base's is past DEPTHS (its layer pattern repeats within them)
    if depth_key and (depth > max(DEPTHS) or data_strategy.draw(st.booleans(), label="depth?")):
        new_depth = data_strategy.draw(st.sampled_from(choices(depth_key, depth)), label=depth_key)
        text[depth_key] = new_depth
    for key in sorted(text):
        value = text[key]
        if key == depth_key or key == "model_type":
            continue
        if type(value) is int and value > 0 and COUNTS_LAYERS.search(key) and depth and value <= depth and new_depth != depth:
            # a number of layers (Gemma 3n's num_kv_shared_layers, DeepSeek's first_k_dense_replace): its share of the
            # new depth, or another count within it
            kept = max(1, min(new_depth, round(value * new_depth / depth)))
            text[key] = data_strategy.draw(
                st.sampled_from(sorted({kept, *range(1, new_depth + 1)}, key=lambda v: v != kept)), label=key
            )
        elif type(value) is int and value > 0 and not NOT_SHAPES.search(key):
            if data_strategy.draw(Odds.booleans(), label=f"{key}?"):
                text[key] = data_strategy.draw(st.sampled_from(choices(key, value)), label=key)
        elif type(value) is bool and SHAPING_FLAGS.search(key) and not NOT_FLAGS.search(key):
            if data_strategy.draw(Odds.booleans(), label=f"{key}?"):
                text[key] = not value
        elif isinstance(value, dict) and value and depth and all(str(k).isdigit() for k in value):
            # settings by layer index (DOTS-3's per_layer_config): the layers the new depth keeps
            text[key] = {k: v for k, v in value.items() if int(k) < new_depth}
        elif isinstance(value, list) and depth and value and all(type(v) in (str, int, float) for v in value):
            # layer indices (sorted, distinct, within the depth: Qwen3-MoE's mlp_only_layers, Llama 4's moe_layers),
            # or one value per layer (layer types)
            indices = all(type(v) is int for v in value) and value == sorted(set(value)) and value[-1] < depth
            per_layer = not indices and len(value) == depth
            if not (per_layer or indices):
                continue
            if new_depth == depth and not data_strategy.draw(st.booleans(), label=f"{key}?"):
                continue
            if per_layer:
                kinds = sorted(set(value), key=repr)
                text[key] = [data_strategy.draw(st.sampled_from(kinds), label=f"{key}[{i}]") for i in range(new_depth)]
            else:
                text[key] = sorted(data_strategy.draw(st.sets(st.integers(0, new_depth - 1), max_size=new_depth), label=key))
    for key in sorted(text):  # a changed value set under its other name, as an older or a hand-written file does
        other = aliases.get(key)
        if (
            other
            and other not in ("model_type",)
            and text[key] != (base["text_config"] if at else base).get(key)
            and data_strategy.draw(st.booleans(), label=f"{key} as {other}?")
        ):
            text[other] = text.pop(key)
    out = {**base, "text_config": text} if at else text
    return out, difference(base, out)


def draw_cases(base: str, n: int, seed: int) -> list[dict]:
    """``n`` distinct cases that transformers builds, drawn from ``base`` with a fixed seed."""
    from hypothesis import HealthCheck, Phase, given, reject, settings
    from hypothesis import seed as with_seed
    from hypothesis import strategies as st

    start = base_config(base)
    forward = runs(base)
    found: list[dict] = []
    seen: set[str] = set()
    attempts = [0]

    class Enough(Exception):
        pass

    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @with_seed(seed)
    @given(st.data())
    def run(data_strategy):
        attempts[0] += 1
        if attempts[0] > ATTEMPTS * n:
            raise Enough
        data, perturbation = draw(data_strategy, start)
        key = json.dumps(perturbation, sort_keys=True)
        if key in seen or not perturbation["changed"] and not perturbation["removed"]:
            reject()
        seen.add(key)
        try:  # built from the perturbation as recorded, so that --check redoes exactly this
            found.append(case(base, patched(start, perturbation), perturbation, forward=forward))
        except Exception:  # noqa: BLE001 — transformers refuses it: not a configuration, drawn again
            reject()

    try:
        run()
    except Exception as exc:  # noqa: BLE001 — Hypothesis found too few, or the attempts ran out: those found are kept
        if len(found) < n:
            print(f"{base}: {len(found)} of {n} cases built ({type(exc).__name__})", file=sys.stderr)
    return found


# --- ffncalc against a case ------------------------------------------------------------------------------------


def compare(record: dict, written: dict[str, dict]) -> list[str]:
    """Where ffncalc differs from transformers on one recorded case (``written``: each base's config.json as
    transformers writes it): [] when every component agrees."""
    return compare_file(patched(written[record["base"]], record["saved"]), record)


def compare_file(data: dict, record: dict) -> list[str]:
    """Where ffncalc, reading ``data`` as a config.json, differs from the parameters recorded for it."""
    from ffncalc.analysis import hfcheck
    from ffncalc.errors import InputError
    from ffncalc.sources import hf

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"
        path.write_text(json.dumps(data, indent=2))
        measured = hfcheck.Measured(record["model_class"], "", tuple(expand(record["params"])), ())
        try:
            report = hfcheck.check(hf.read_config(path), measured=measured)
        except InputError as exc:
            return [f"refused: {exc}"]
    return [
        f"{ch.component} {ch.layers}: ours {ch.ours:,} transformers {ch.transformers:,}"
        for ch in report.checks
        if not ch.ok or ch.component.startswith("(unmatched)")
    ]


# --- cases named in advance: the files of a known fault, and each alias stated by either name ------------------

# (base, the key set, under the name the base states it): Qwen3-MoE and Mellum with 8 experts, which transformers
# writes as num_local_experts (Qwen3-30B-A3B's file, written by an older release, states num_experts)
PINNED = {
    "qwen3_moe": [("defaults:qwen3_moe", {"num_local_experts": 8}), ("public:qwen3-30b-a3b", {"num_experts": 8})],
    "mellum": [("defaults:mellum", {"num_local_experts": 8})],
}


def pinned_cases(model_type: str) -> list[dict]:
    out = []
    for base, values in PINNED.get(model_type, []):
        start = base_config(base)
        perturbation = difference(start, {**start, **values})
        out.append({**case(base, patched(start, perturbation), perturbation, forward=runs(base)), "pinned": True})
    return out


def alias_values(key: str, value) -> list:
    """Other values to state a key with: sizes as drawn, a flag flipped, a per-layer list in another order."""
    if type(value) is int and value > 0:
        return choices(key, value)
    if type(value) is bool:
        return [not value]
    if isinstance(value, list) and len(set(map(str, value))) > 1:
        return [value[1:] + value[:1], value[::-1]]
    if type(value) is float:
        return [value * 2]
    return []


def stating(start: dict, pair: tuple[str, str], values: dict) -> dict:
    """The base with neither name of ``pair`` in its language model's keys, then ``values``."""
    at = text_path(start)
    text = start["text_config"] if at else start
    part = {k: v for k, v in text.items() if k not in pair} | values
    return {**start, "text_config": part} if at else part


def alias_values_built(start: dict, pair: tuple[str, str], forward: bool) -> tuple[list, str]:
    """The other values of ``pair``'s attribute that transformers builds (and runs, with ``forward``) when the
    file states them under the attribute alone, each with the total it builds; and, where none builds, why."""
    text = start["text_config"] if text_path(start) else start
    alias, key = pair
    built, refusal = [], ""
    for v in alias_values(key, text.get(key, text.get(alias))):
        try:
            built.append((v, sum(n for _, n in build(stating(start, pair, {key: v}), forward=forward, save=False)[2])))
        except Exception as exc:  # noqa: BLE001 — not a value transformers builds
            refusal = refusal or " ".join(f"{type(exc).__name__}: {exc}".split())[:160]
    return built, refusal or "no other value to state"


def alias_cases(model_type: str) -> list[dict]:
    """Each name pair of the type's configuration class (attribute_map): a file written by hand, starting from the
    defaults, that states a new value under the alias alone, under the attribute alone, and (sizes) both names
    with different values; the value one that changes what transformers builds where any does (``shapes``)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    base = f"defaults:{model_type}"
    start = base_config(base)
    at = text_path(start)
    text = start["text_config"] if at else start
    amap = getattr(CONFIG_MAPPING[text.get("model_type") or model_type], "attribute_map", None) or {}
    base_total = sum(n for _, n in build(start, save=False)[2])
    forward = runs(base)
    out = []
    for alias, key in sorted(amap.items()):
        if alias == key:
            continue
        built, refusal = alias_values_built(start, (alias, key), forward)
        if not built:  # no other value of this key alone builds (a validation that ties it to another key)
            out.append({"alias": [alias, key], "stated": [], "unbuilt": refusal})
            continue
        pair = (alias, key)
        value, total = next(((v, t) for v, t in built if t != base_total), built[0])
        files = [{alias: value}, {key: value}]
        other = next((v for v, _ in built if v != value), None)
        if other is not None and type(value) is int:
            files.append({alias: value, key: other})
        for values in files:
            data = patched(start, difference(start, stating(start, pair, values)))  # the file as the test writes it
            try:
                _, model_class, params = build(data, save=False)
            except Exception:  # noqa: BLE001 — refused under this name (a validation of one name only)
                continue
            out.append(
                {
                    "alias": [alias, key],
                    "stated": list(values),
                    "file": difference(start, data),
                    "shapes": total != base_total,
                    "model_class": model_class,
                    "params": compress(params),
                }
            )
    return out


# --- the keys each family reads ---------------------------------------------------------------------------------


def every_config(record: dict) -> list[dict]:
    """Every configuration of a record's type: its bases as transformers writes them, each case, each alias file."""
    out = list(record["written"].values())
    out += [patched(record["written"][c["base"]], c["saved"]) for c in record["cases"]]
    out += [patched(base_config(f"defaults:{record['model_type']}"), c["file"]) for c in record.get("aliases", []) if "file" in c]
    return out


def keys_listing(records: dict[str, dict]) -> str:
    """config_keys.json: per model_type, the keys its family reads over every recorded configuration."""
    from ffncalc.sources import hf
    from ffncalc.sources.hf.keys import keys_read

    types = {}
    for model_type, record in sorted(records.items()):
        keys: set[str] = set()
        for data in every_config(record):
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "config.json"
                path.write_text(json.dumps(data))
                keys |= keys_read(hf.read_config(path))
        types[model_type] = sorted(keys)
    lines = [f"{json.dumps(t)}: {json.dumps(keys)}" for t, keys in types.items()]
    return '{"source": "scripts/hf_roundtrip.py", "types": {\n' + ",\n".join(lines) + "\n}}\n"


def write_keys() -> None:
    from ffncalc.sources.hf.keys import LISTING

    records = {p.stem: named(json.loads(p.read_text())) for p in sorted(OUT.glob("*.json"))}
    LISTING.write_text(keys_listing(records))


# --- which types and bases --------------------------------------------------------------------------------------


def types() -> list[str]:
    from ffncalc.sources.hf import coverage

    built = []
    for t in coverage.CAUSAL_LM_TYPES:
        if t in coverage.NOT_TEXT_DECODERS or t in coverage.NOT_YET or t in coverage.REFUSED_AT_DEFAULTS:
            continue
        truth = json.loads((ROOT / "tests" / "hf_defaults" / "truth" / f"{t}.json").read_text())
        if "refused" not in truth:
            built.append(t)
    return built


def bases_of(model_type: str) -> list[str]:
    """The type's defaults and every public config of that type (a wrapper's, by its own model_type)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    public = []
    for path in sorted(PUBLIC.glob("*.json")):
        data = json.loads(path.read_text())
        if data.get("model_type") == model_type and model_type in CONFIG_MAPPING:
            public.append(f"public:{path.stem}")
    return [f"defaults:{model_type}", *public]


def seed_of(base: str, salt: int = 0) -> int:
    return zlib.crc32(f"{base}/{salt}".encode())


def record_text(model_type: str) -> str:
    import hypothesis
    import torch
    import transformers

    cases = pinned_cases(model_type)
    for base in bases_of(model_type):
        n = PER_DEFAULT if base.startswith("defaults:") else PER_PUBLIC
        # a base that runs no forward on the meta device: its draws are only built, and some may be no model
        cases += draw_cases(base, n if runs(base) else n + UNRUN_EXTRA, seed_of(base))
    head = {
        "model_type": model_type,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "hypothesis": hypothesis.__version__,
        "written": {b: written(b) for b in sorted({c["base"] for c in cases})},
    }
    names: dict[str, int] = {}  # each parameter name pattern once per file; a case's entries name it by index
    for c in cases:
        c["params"] = [[names.setdefault(p[0], len(names)), *p[1:]] for p in c["params"]]
    aliases = alias_cases(model_type)
    for c in (a for a in aliases if "params" in a):
        c["params"] = [[names.setdefault(p[0], len(names)), *p[1:]] for p in c["params"]]
    head["names"] = list(names)

    def listed(items: list[dict]) -> str:
        return "[\n" + ",\n".join(" " + json.dumps(c, separators=(",", ":")) for c in items) + "\n]"

    return json.dumps(head)[:-1] + f', "aliases": {listed(aliases)}, "cases": {listed(cases)}}}\n'


def named(record: dict) -> dict:
    """A record as read from its file, with each parameter entry's name index replaced by the name."""
    for c in record["cases"] + [a for a in record.get("aliases", []) if "params" in a]:
        c["params"] = [[record["names"][p[0]], *p[1:]] for p in c["params"]]
    return record


def check_record(model_type: str) -> list[str]:
    """Each recorded case redone: the file transformers writes and the parameters it builds, as recorded."""
    import transformers

    path = OUT / f"{model_type}.json"
    if not path.is_file():
        return [f"{model_type}: no record"]
    record = named(json.loads(path.read_text()))
    stale = []
    if record["transformers"] != transformers.__version__:
        stale.append(f"{model_type}: recorded with transformers {record['transformers']}")
    for base, text in record["written"].items():
        if written(base) != text:
            stale.append(f"{model_type}: {base} is written differently")
    for i, c in enumerate(record["cases"]):
        data = patched(base_config(c["base"]), c["set"])
        try:
            redone = {**case(c["base"], data, c["set"]), "runs": c["runs"]}  # the forward is not rerun
        except Exception as exc:  # noqa: BLE001
            stale.append(f"{model_type} case {i}: transformers now refuses it ({type(exc).__name__})")
            continue
        if {**redone, **({"pinned": True} if c.get("pinned") else {})} != c:
            stale.append(f"{model_type} case {i}: differs")
    start = base_config(f"defaults:{model_type}")
    for c in record.get("aliases", []):
        if "unbuilt" in c:  # still no other value of it alone that transformers builds
            if alias_values_built(start, tuple(c["alias"]), runs(f"defaults:{model_type}"))[0]:
                stale.append(f"{model_type} alias {c['alias']}: transformers now builds other values")
            continue
        try:
            _, model_class, params = build(patched(start, c["file"]), save=False)
        except Exception as exc:  # noqa: BLE001
            stale.append(f"{model_type} alias {c['stated']}: transformers now refuses it ({type(exc).__name__})")
            continue
        if (model_class, compress(params)) != (c["model_class"], c["params"]):
            stale.append(f"{model_type} alias {c['stated']}: differs")
    return stale


def _work(args: tuple[str, str, int, int]):
    import transformers

    transformers.logging.set_verbosity_error()
    mode, model_type, explore, seed = args
    if mode == "check":
        return model_type, check_record(model_type)
    if mode == "explore":
        found = []
        for base in bases_of(model_type):
            for c in draw_cases(base, explore, seed_of(base, seed)):
                diffs = compare(c, {base: written(base)})
                if diffs:
                    found.append(
                        f"{base} set {json.dumps(c['set']['changed'])} removed {c['set']['removed']}: " + "; ".join(diffs[:4])
                    )
        return model_type, found
    text = record_text(model_type)
    OUT.mkdir(exist_ok=True)
    (OUT / f"{model_type}.json").write_text(text)
    record = named(json.loads(text))
    fails = [f"case {i}: " + "; ".join(d[:3]) for i, c in enumerate(record["cases"]) for d in [compare(c, record["written"])] if d]
    start = base_config(f"defaults:{model_type}")
    fails += [
        f"alias {c['stated']}: " + "; ".join(d[:3])
        for c in record["aliases"]
        if "params" in c
        for d in [compare_file(patched(start, c["file"]), c)]
        if d
    ]
    return model_type, [f"{len(record['cases'])} cases"] + fails


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("types", nargs="*", help="model_types (default: every type built at its defaults)")
    parser.add_argument("--check", action="store_true", help="redo each recorded case and compare, write nothing")
    parser.add_argument("--explore", type=int, metavar="N", help="draw N more cases per base, compare ffncalc, write nothing")
    parser.add_argument("--seed", type=int, default=1, help="with --explore: another set of draws")
    parser.add_argument(
        "--keys",
        action="store_true",
        help="only rewrite ffncalc/sources/hf/config_keys.json from the records (also after a full recording)",
    )
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    if args.keys:
        write_keys()
        return 0
    wanted = args.types or types()
    mode = "check" if args.check else "explore" if args.explore else "record"
    work = [(mode, t, args.explore or 0, args.seed) for t in wanted]
    if args.jobs > 1 and len(work) > 1:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
            results = list(pool.imap_unordered(_work, work))
    else:
        results = [_work(w) for w in work]
    problems = 0
    for model_type, lines in sorted(results):
        if mode == "record":
            print(f"{model_type}: {lines[0]}" + (f", {len(lines) - 1} differ from ffncalc" if len(lines) > 1 else ""))
            lines = lines[1:]
        for line in lines:
            print(f"  {model_type}: {line}")
        problems += len(lines)
    if mode == "record" and not args.types:
        write_keys()
    if mode == "check":
        recorded = sorted(p.stem for p in OUT.glob("*.json"))
        extra = sorted(set(recorded) - set(wanted)) if not args.types else []
        for t in extra:
            print(f"  {t}: recorded but not a type built at its defaults")
        problems += len(extra)
        print(
            f"{len(wanted) - sum(1 for _, lines in results if lines)} of {len(wanted)} round-trip records current"
            + ("" if not problems else " (rerun python scripts/hf_roundtrip.py)")
        )
    return 1 if problems and mode != "record" else 0


if __name__ == "__main__":
    sys.exit(main())
