"""The shape of every JSON record ffncalc writes, versioned: each record's top-level ``"schema"`` names its kind
and version (``"ffncalc.count/1"``), and ``schema(kind)`` is its JSON Schema (draft 2020-12), which
``ffncalc docs`` writes to ``schemas/KIND.json``. A record whose shape changes (a key renamed, removed or retyped,
a key made optional) takes the next version here; a new optional key keeps it. Integers are integers: every
exact quantity is ``"integer"``, and ``"number"`` is kept for rates, times, ratios and exact averages that
are not whole (FLOPs per token over a sliding window)."""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

VERSIONS = {
    "count": 1,
    "checkpoint": 1,
    "verify": 1,
    "verify-all": 1,
    "verify-hf": 1,
    "verify-memory": 1,
    "verify-kept": 1,
    "compare": 1,
    "sweep": 1,
    "bench": 1,
    "links": 1,
    "bench-tp": 1,
    "train": 1,
    "infer": 1,
    "fit": 1,
    "table": 1,
    "presets": 1,
    "families": 1,
    "conventions": 1,
    "explain": 1,
}
WHAT = {
    "count": "ffncalc count MODEL -f json: parameters and FLOPs of every component, and the totals",
    "checkpoint": "ffncalc count CHECKPOINT -f json: a checkpoint's stored tensors by component, against its config.json",
    "verify": "ffncalc verify MODEL -f json: the analytic counts against torch modules",
    "verify-all": "ffncalc verify --all -f json: every preset verified",
    "verify-hf": "ffncalc verify --hf CONFIG -f json: the analytic counts against torch and the transformers class",
    "verify-memory": "ffncalc verify --memory --hf CONFIG -f json: what training keeps, against what the transformers class saves",
    "verify-kept": "ffncalc verify MODEL --memory -f json: each block's kept activations against its reference module's",
    "compare": "ffncalc compare -f json: a dense and a gated FFN at equal parameters (or FLOPs)",
    "sweep": "ffncalc compare --sweep -f json: one comparison per d_ff/d_model ratio",
    "bench": "ffncalc bench -f json (and bench --out): timed blocks",
    "links": "ffncalc bench --collective -f json (and --out: the links file of infer and fit --links): collectives timed, each fitted",
    "bench-tp": "ffncalc bench MODEL --tp N (or --ep N) -f json: a block split across ranks, compute and collectives apart",
    "train": "ffncalc train -f json: a training run's figures",
    "infer": "ffncalc infer -f json: an inference run's figures",
    "fit": "ffncalc fit -f json: what fits on the devices",
    "table": "ffncalc table -f json: a row per model (the columns chosen, then seq_len and convention)",
    "presets": "ffncalc presets -f json: the shipped presets",
    "families": "ffncalc families -f json: every decoder-only text, encoder, encoder-decoder and multimodal model_type and its status",
    "conventions": "ffncalc conventions -f json: the counting conventions",
    "explain": "ffncalc explain -f json: what each figure, convention and view means",
}

INT: Schema = {"type": "integer"}
NUM: Schema = {"type": "number"}
STR: Schema = {"type": "string"}
BOOL: Schema = {"type": "boolean"}
SCALAR: Schema = {"type": ["string", "number", "boolean", "null"]}
# an exact count that is whole, or an exact average over a window that is not (``count.plain``)
EXACT: Schema = {"type": "number", "description": "an integer, or an exact average that is not whole"}


def name(kind: str) -> str:
    """The value of a record's ``"schema"`` key: ``ffncalc.count/1``."""
    return f"ffncalc.{kind}/{VERSIONS[kind]}"


def stamp(kind: str, record: dict[str, Any]) -> dict[str, Any]:
    """The record with its schema's name first."""
    return {"schema": name(kind), **record}


def null(s: Schema) -> Schema:
    return {"anyOf": [s, {"type": "null"}]}


def array(items: Schema, length: int | None = None) -> Schema:
    out: Schema = {"type": "array", "items": items}
    if length is not None:
        out |= {"minItems": length, "maxItems": length}
    return out


def obj(required: dict[str, Schema], optional: dict[str, Schema] | None = None) -> Schema:
    """An object with exactly these keys (the optional ones may be absent), and no others."""
    return {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "required": list(required),
        "additionalProperties": False,
    }


def mapping(values: Schema) -> Schema:
    """An object of any keys, each value of one shape."""
    return {"type": "object", "additionalProperties": values}


def enum(*values: str) -> Schema:
    return {"type": "string", "enum": list(values)}


LAYERS = null(array(INT, 2))  # [first, stop): the run of layers, or null for a row outside the layers
NOTES = array(STR)


def _count() -> Schema:
    from ..analysis.conventions import CONVENTIONS
    from ..api.options import RecomputeName

    totals = {
        "params": INT,
        "embedding_params": INT,
        "non_embedding_params": INT,
        "active_params": INT,
        "mtp_params": INT,
        "mtp_params_with_copies": INT,
        "active_params_without_input_embedding": INT,
        "active_non_embedding_params": INT,
        "matrices": INT,
        "forward_flops_per_token": EXACT,
        "elementwise_flops_per_token": EXACT,
        "forward_flops": INT,
        "elementwise_flops": INT,
        "recompute_flops": INT,
        "train_flops": INT,
    }
    component = obj(
        {
            "component": STR,
            "part": STR,
            "layers": LAYERS,
            "shape": array(INT),
            "count": INT,
            "params": INT,
            "active_params": INT,
            "matrices": INT,
            "forward_flops_per_token": EXACT,
            "elementwise_flops_per_token": EXACT,
            "tied": BOOL,
        }
    )
    return obj(
        {
            "model": STR,
            "convention": obj({"name": enum(*CONVENTIONS), "summary": STR, "source": STR}),
            "seq_len": INT,
            "batch": INT,
            "tokens": INT,
            "recompute": enum(*RecomputeName),
            "components": array(component),
            "totals": obj(totals),
        },
        {
            "notes": NOTES,
            "views": mapping(obj({"attention_flops_per_token": EXACT, "forward_flops_per_token": EXACT})),
            "adapters": _adapters(),
        },
    )


def _adapters() -> Schema:
    """count --lora: the adapters peft builds (render.adapters_record)."""
    module = obj(
        {
            "module": STR,
            "component": STR,
            "layers": LAYERS,
            "d_in": INT,
            "d_out": INT,
            "instances": INT,
            "rank": INT,
            "params": INT,
            "magnitude": INT,
        }
    )
    return obj(
        {
            "lora": INT,
            "lora_targets": STR,
            "dora": BOOL,
            "trainable_params": INT,
            "adapter_params": INT,
            "modules": array(module),
            "saved": array(obj({"module": STR, "params": INT})),
            "notes": NOTES,
        }
    )


def _checkpoint() -> Schema:
    compared = obj(
        {
            "component": STR,
            "checkpoint_params": INT,
            "ffncalc_params": INT,
            "difference": INT,
            "explained": BOOL,
            "why": STR,
        }
    )
    component = obj(
        {
            "component": STR,
            "part": STR,
            "tensors": INT,
            "params": INT,
            "bytes": INT,
            "storage": mapping(INT),
            "dtype_bytes": mapping(INT),
            "decoding": mapping(obj({"tensors": INT, "bytes": INT})),
        }
    )
    return obj(
        {
            "checkpoint": STR,
            "format": STR,
            "files": array(STR),
            "tensors": INT,
            "header_bytes_read": INT,
            "data_bytes": INT,
            "config": null(STR),
            "quantization_config": null({"type": "object"}),
            "metadata": mapping(SCALAR),
            "notes": NOTES,
            "missing": array(obj({"tensor": STR, "file": STR})),
            "components": array(component),
            "compared": null(obj({"model": STR, "ffncalc_params": INT, "unexplained": INT, "components": array(compared)})),
            "totals": obj({"params": INT, "param_bytes": INT, "decoding_bytes": INT, "buffer_elements": INT}),
        }
    )


def _verify() -> Schema:
    check = obj(
        {
            "component": STR,
            "layers": LAYERS,
            "analytic_params": INT,
            "torch_params": INT,
            "params_ok": BOOL,
            "analytic_flops": EXACT,
            "torch_flops": INT,
            "flops_ok": BOOL,
        }
    )
    return obj(
        {
            "model": STR,
            "convention": enum("exact", "causal"),
            "seq_len": INT,
            "batch": INT,
            "every_layer": BOOL,
            "ok": BOOL,
            "notes": NOTES,
            "components": array(check),
        }
    )


def _transformers() -> Schema:
    check = obj({"component": STR, "layers": LAYERS, "params": INT, "transformers_params": INT, "ok": BOOL})
    return obj({"model": STR, "transformers": STR, "model_class": STR, "ok": BOOL, "notes": NOTES, "components": array(check)})


def _timing() -> Schema:
    return obj(
        {
            "block": STR,
            "variant": STR,
            "device": STR,
            "dtype": STR,
            "tokens": INT,
            "seq_len": INT,
            "backward": BOOL,
            "median_ms": NUM,
            "min_ms": NUM,
            "max_ms": NUM,
            "flops": INT,
            "tflops": NUM,
            "peak_tflops_measured": NUM,
            "share_of_peak": NUM,
            "tokens_per_s": NUM,
            "datasheet_tflops": null(NUM),
            "datasheet": null(STR),
            "kind": null(STR),
            "d_ff": null(INT),
            "d_model": null(INT),
        }
    )


def _compare() -> Schema:
    from ..api.options import KindName, MatchName

    side = obj(
        {
            "kind": enum(*KindName),
            "activation": STR,
            "variant": STR,
            "d_ff": INT,
            "bias": BOOL,
            "params_per_layer": INT,
            "params_all_ffn_layers": INT,
            "model_params": null(INT),
            "forward_flops_per_token": INT,
            "train_flops_per_token": INT,
            "model_forward_flops_per_token": null(EXACT),
            "activation_elements_per_token": INT,
            "rank_linear": INT,
            "rank_degree2": INT,
            "reference_log_perplexity": null(array(NUM)),
        }
    )
    return obj(
        {
            "model": null(STR),
            "d_model": INT,
            "ffn_layers": INT,
            "match": enum(*MatchName),
            "multiple_of": INT,
            "moe": null(STR),  # the MoE expert FFN compared, as words
            "residual": INT,
            "exact": BOOL,
            "residual_percent": NUM,
            "source": side,
            "target": side,
            "capacity": STR,
        },
        {"reference_source": STR, "bench": array(_timing())},
    )


def _links() -> Schema:
    from ..analysis.linkfile import COLLECTIVES

    size = obj({"bytes": INT, "time_s": NUM, "algbw_gbs": NUM, "busbw_gbs": NUM})
    fitted = obj(
        {
            "latency_s": NUM,
            "seconds_per_byte": NUM,
            "algbw_gbs": NUM,
            "busbw_gbs": NUM,
            "from_bytes": INT,
            "to_bytes": INT,
            "points": INT,
            "latency_clamped": BOOL,
        }
    )
    entry = obj({"collective": enum(*COLLECTIVES), "ranks": INT, "bus_factor": NUM, "sizes": array(size), "fit": fitted})
    return obj(
        {
            "device": STR,
            "backend": enum("gloo", "nccl"),
            "ranks": INT,
            "nodes": INT,
            "dtype": STR,
            "repeats": INT,
            "warmup": INT,
            "collectives": array(entry),
        }
    )


def _bench_tp() -> Schema:
    from ..api.options import BenchBlock, BenchDtype

    return obj(
        {
            "model": STR,
            "block": enum(*BenchBlock),
            "variant": STR,
            "parallel": enum("tensor", "expert"),
            "ranks": INT,
            "device": STR,
            "backend": enum("gloo", "nccl"),
            "dtype": enum(*BenchDtype),
            "tokens": INT,
            "seq_len": INT,
            "repeats": INT,
            "warmup": INT,
            "flops": INT,
            "compute_tflops": NUM,
            "comm_bytes": INT,
            "total_s": NUM,
            "comm_s": NUM,
            "wait_s": NUM,
            "compute_s": NUM,
            "collectives": INT,
            "max_abs_error": NUM,
            "max_abs_output": NUM,
            "tolerance": NUM,
            "matches": BOOL,
            "predicted_comm_s": null(NUM),
            "link": STR,
            "links": null(STR),
        }
    )


def _figures(command: str) -> Schema:
    """A planning answer: its title, inputs, notes and figures, each figure under its id. The ids and their
    types are those of the runs ``explain`` draws every figure from (``analysis/glossary.py``); a figure a run
    may leave out is optional, one every run shows is required."""
    from ..analysis import glossary

    runs = [result for kind, result in glossary.runs() + _plain_runs() if kind == command]
    types: dict[str, Schema] = {}
    for result in runs:
        for f in result.figures:
            seen = INT if isinstance(f.value, int) and not isinstance(f.value, bool) else NUM
            types[f.id] = NUM if types.get(f.id, seen) is NUM else seen
    always = [i for i in types if all(any(f.id == i for f in r.figures) for r in runs)]
    figures = {i: obj({"value": t, "unit": STR, "label": STR}, {"source": STR}) for i, t in types.items()}
    return obj(
        {
            "title": STR,
            "inputs": mapping(SCALAR),
            "notes": NOTES,
            "figures": {**obj({i: figures[i] for i in always}, {i: figures[i] for i in types if i not in always})},
        }
    )


def _plain_runs() -> list[tuple[str, Any]]:
    """Beside the glossary's runs (which show every optional figure): each command at its defaults on a small
    dense model (the figures every run shows), and on a hybrid model with recurrent state."""
    from ..api import commands as ask

    out: list[tuple[str, Any]] = []
    for model in ("gpt2", "qwen3-next-80b-a3b"):
        out += [
            ("train", ask.train(model, tokens="1B", hardware="h100-sxm").answer),
            ("infer", ask.infer(model, prompt=64, generate=16, hardware="h100-sxm").answer),
            ("fit", ask.fit(model, hardware="h100-sxm").answer),
        ]
    return out


def _table() -> Schema:
    from ..analysis.summary import COLUMNS

    per_layer = lambda s: {"anyOf": [s, array(array({"anyOf": [INT, s]}, 2))]}  # noqa: E731  [[layers, value], …]
    types = {c: INT for c in COLUMNS} | {
        "model": STR,
        "forward_flops_per_token": EXACT,
        "heads": per_layer(null(STR)),  # "32/8": query/KV heads, or the mixer's own ("SSM 128")
        "ffn": per_layer(STR),
        "d_ff": per_layer(null(INT)),
    }
    from ..analysis.conventions import CONVENTIONS

    row = obj({"seq_len": INT, "convention": enum(*CONVENTIONS)}, types)
    return obj({"models": array(row)})


def _body(kind: str) -> Schema:
    if kind == "count":
        return _count()
    if kind == "checkpoint":
        return _checkpoint()
    if kind == "verify":
        return _verify()
    if kind == "verify-all":
        return obj({"ok": BOOL, "reports": array(_verify()), "refused": array(obj({"model": STR, "error": STR}))})
    if kind == "verify-hf":
        return obj({"ok": BOOL, "verify": _verify(), "transformers": _transformers()})
    if kind == "verify-kept":
        row = obj({"layers": array(INT), "slot": STR, "kind": STR, "planned": INT, "saved": INT, "ok": BOOL})
        return obj({"model": STR, "seq_len": INT, "ok": BOOL, "blocks": array(row)})
    if kind == "verify-memory":
        row = obj({"component": STR, "planned": INT, "saved": INT, "ok": BOOL})
        run = obj({"seq_len": INT, "batch": INT, "dtype": enum("bf16", "fp32"), "ok": BOOL, "components": array(row)})
        return obj({"model": STR, "ok": BOOL, "runs": array(run)})
    if kind == "compare":
        return _compare()
    if kind == "sweep":
        return obj({"sweep": array(_compare())})
    if kind == "bench":
        return obj({"model": STR, "bench": array(_timing())})
    if kind == "links":
        return _links()
    if kind == "bench-tp":
        return _bench_tp()
    if kind in ("train", "infer", "fit"):
        return _figures(kind)
    if kind == "table":
        return _table()
    if kind == "presets":
        preset = obj(
            {
                "name": STR,
                "title": STR,
                "aliases": array(STR),
                "n_layers": INT,
                "d_model": INT,
                "ffn": STR,
                "params": INT,
                "active_params": INT,
            }
        )
        return obj({"presets": array(preset)})
    if kind == "families":
        family = obj(
            {
                "model_type": STR,
                "kind": enum("decoder", "encoder", "encoder-decoder", "multimodal"),
                "status": enum("supported", "language model only", "not yet"),
                "family": STR,
                "file": STR,
                "detail": STR,
                "defaults": STR,
                "config_keys": array(STR),
            }
        )
        return obj({"families": array(family)})
    if kind == "conventions":
        return obj({"conventions": array(obj({"name": STR, "default": BOOL, "summary": STR, "source": STR}))})
    if kind == "explain":
        kinds = enum("train", "infer", "fit", "convention", "view")
        entry = obj({"term": STR, "kind": kinds, "label": STR, "unit": STR, "source": STR})
        return obj({"explain": array(entry)})
    raise KeyError(kind)


def schema(kind: str) -> Schema:
    """The JSON Schema of a record of ``kind``: its ``"schema"`` key, then the record's own keys."""
    body = _body(kind)
    body["properties"] = {"schema": {"const": name(kind)}, **body["properties"]}
    body["required"] = ["schema", *body["required"]]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": name(kind),
        "description": WHAT[kind],
        **body,
    }


def files(marker: str) -> dict[str, bytes]:
    """``schemas/KIND.json`` for every kind, each with ``marker`` as its ``$comment``."""
    import json

    return {
        f"schemas/{kind}.json": (json.dumps({"$comment": marker, **schema(kind)}, indent=2, ensure_ascii=False) + "\n").encode()
        for kind in VERSIONS
    }
