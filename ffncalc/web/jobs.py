"""What a request asks, answered by the library in a worker process: each job reads its model (a preset, a repo in
the local Hugging Face cache, or the text a request carries; never a path of this machine), calls the function of
``ffncalc.api`` the command line calls, and returns the result's JSON or one of its renderings. Every number on the
page is one of these; nothing here computes one."""

from __future__ import annotations

from typing import Any, Callable

from .. import api
from ..errors import InputError

FORMATS = ("json", "csv", "markdown", "latex", "html")
TEXT_LIMIT = 2 * 2**20  # an uploaded config.json or spec: kilobytes in practice

Int, Float, Bool, Text = int, float, bool, str

# Each job's fields and their types (what a query string's text is read as); a field not listed is refused, so no
# option that names a file of this machine (hardware_file, draft_model) reaches the library.
SOURCE = {"model": Text, "text": Text, "filename": Text, "as_family": Text}
FIELDS: dict[str, dict[str, type]] = {
    "presets": {},
    "options": {},
    "count": {
        **SOURCE,
        "seq_len": Int,
        "batch": Int,
        "convention": Text,
        "recompute": Text,
        "per_layer": Bool,
        "format": Text,
    },
    "table": {
        **SOURCE,
        "model_b": Text,
        "text_b": Text,
        "filename_b": Text,
        "seq_len": Int,
        "convention": Text,
        "format": Text,
    },
    "chart": {**SOURCE, "format": Text},
    "compare": {**SOURCE, "to": Text, "match": Text, "multiple_of": Int, "activation": Text, "format": Text},
    "fit": {
        **SOURCE,
        "hardware": Text,
        "engine": Text,
        "context": Int,
        "batch": Int,
        "dtype": Text,
        "experts_dtype": Text,
        "kv_dtype": Text,
        "gpus": Int,
        "tp": Int,
        "pp": Int,
        "ep": Int,
        "reserve": Float,
        "format": Text,
    },
    "infer": {
        **SOURCE,
        "prompt": Int,
        "generate": Int,
        "batch": Int,
        "hardware": Text,
        "engine": Text,
        "dtype": Text,
        "experts_dtype": Text,
        "kv_dtype": Text,
        "gpus": Int,
        "tp": Int,
        "pp": Int,
        "ep": Int,
        "format": Text,
    },
    "train": {
        **SOURCE,
        "tokens": Text,
        "seq_len": Int,
        "hardware": Text,
        "gpus": Int,
        "dtype": Text,
        "mfu": Float,
        "micro_batch": Int,
        "global_batch": Int,
        "optimizer": Text,
        "precision": Text,
        "framework": Text,
        "zero": Int,
        "dp": Int,
        "tp": Int,
        "pp": Int,
        "format": Text,
    },
}


def model(params: dict[str, Any], suffix: str = "") -> api.Model:
    """The model a request names: ``text`` (an uploaded config.json or spec, named by ``filename``), else
    ``model``, a preset or a repo id in the local Hugging Face cache. A path is refused: the server reads no file
    of its machine but the shipped presets and the cache."""
    text, name = params.get("text" + suffix), params.get("model" + suffix)
    as_family = params.get("as_family") if not suffix else None
    if text is not None and text != "":
        label = params.get("filename" + suffix) or "upload"
        if not isinstance(label, str):
            raise InputError("filename: a string")
        label = label.replace("\\", "/").rsplit("/", 1)[-1][:120] or "upload"  # a name, never a path
        if not isinstance(text, str):
            raise InputError(f"{label}: the file's text is a string, not a {type(text).__name__}")
        if len(text.encode("utf-8", "surrogatepass")) > TEXT_LIMIT:
            raise InputError(f"{label}: larger than {TEXT_LIMIT // 2**20} MiB, the most a spec or config is read to")
        return api.Model.from_text(text, label=label, as_family=as_family)
    if name is None or name == "":
        raise InputError("no model: choose a preset, or paste or upload a config.json or spec")
    if not isinstance(name, str):
        raise InputError(f"model: a preset name, not a {type(name).__name__}")
    return named(name.strip(), as_family)


def named(name: str, as_family: str | None = None) -> api.Model:
    from ..sources import check_name, hf, presets
    from ..sources.checkpoint import _REPO
    from ..sources.checkpoint.hub import cached_config

    check_name(name)
    if _REPO.match(name):
        config = cached_config(name)
        if config is None:
            raise InputError(
                f"{name}: not in this machine's Hugging Face cache; the server reads presets, cached repos and uploaded files"
            )
        return api.Model(name, hf.to_spec(hf.read_config(config, as_family)))
    if any(c in name for c in "/\\~") or name.startswith("."):
        raise InputError(f"{name}: the server reads no file of its machine; upload the file instead")
    if as_family is not None:
        raise InputError(f"--as {as_family}: only a Hugging Face config.json is read as a family; {name} is not one")
    return api.Model(*presets.shipped(name))


def rendered(result: api.Result, fmt: Any) -> dict[str, Any]:
    """A result as the page asks for it: its JSON, or one of its renderings as text."""
    if fmt is None or fmt == "json":
        return {"json": result.to_dict()}
    if fmt == "json-text":  # the text --format json prints, for a download
        return {"text": result.to_json(), "format": "json"}
    if fmt not in FORMATS:
        raise InputError(f"--format {fmt!r}: choose from {', '.join(FORMATS)}", field="format")
    text = {"csv": result.to_csv, "markdown": result.to_markdown, "latex": result.to_latex, "html": result.to_html}[fmt]()
    return {"text": text, "format": fmt}


def _options(p: dict[str, Any]) -> Any:
    from importlib.util import find_spec

    from ..analysis import hardware
    from ..analysis.plan import FitRun, Formats, InferenceRun, Placement
    from ..api import options as o

    return {
        "json": {
            "convention": list(o.ConventionName),
            "recompute": list(o.RecomputeName),
            "hardware": [h.key for h in hardware.table()],
            "dtype": list(o.WeightDtype),
            "kv_dtype": list(o.KvDtype),
            "engine": list(o.EngineName),
            "match": list(o.MatchName),
            "kind": list(o.KindName),
            "plot": find_spec("matplotlib") is not None,  # the chart as PDF: the plot command's figure
            "defaults": {
                "dtype": Formats.dtype,
                "kv_dtype": Formats.kv_dtype,
                "gpus": Placement.gpus,
                "batch": FitRun.batch,
                "infer_batch": InferenceRun.batch,
            },
        }
    }


def _count(p: dict[str, Any]) -> Any:
    keys = ("seq_len", "batch", "convention", "recompute", "per_layer")
    return rendered(api.count(model(p), **{k: p[k] for k in keys if p.get(k) is not None}), p.get("format"))


def _table(p: dict[str, Any]) -> Any:
    keys = ("seq_len", "convention")
    both = [model(p), model(p, "_b")]
    return rendered(api.table(both, **{k: p[k] for k in keys if p.get(k) is not None}), p.get("format"))


def _chart(p: dict[str, Any]) -> Any:
    """The plot command's share figure of the model (needs matplotlib), as SVG, PDF or PNG bytes."""
    fmt = p.get("format") or "svg"
    if fmt not in ("svg", "pdf", "png"):
        raise InputError(f"--format {fmt!r}: choose from svg, pdf, png", field="format")
    from ..output.plot import save

    fig = api.plot("share", model(p))
    try:
        return {"bytes": save(fig, fmt), "format": fmt}
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def _question(function: Callable[..., api.Result], job: str) -> Callable[[dict[str, Any]], Any]:
    def run(p: dict[str, Any]) -> Any:
        skip = set(SOURCE) | {"format"}
        kw = {k: v for k, v in p.items() if k not in skip and k in FIELDS[job] and v is not None and v != ""}
        return rendered(function(model(p), **kw), p.get("format"))

    return run


JOBS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "presets": lambda p: rendered(api.presets(), p.get("format")),
    "options": _options,
    "count": _count,
    "table": _table,
    "chart": _chart,
    "compare": _question(api.compare, "compare"),
    "fit": _question(api.fit, "fit"),
    "infer": _question(api.infer, "infer"),
    "train": _question(api.train, "train"),
}


def typed(job: str, params: dict[str, Any], from_text: bool) -> dict[str, Any]:
    """A request's fields, checked against the job's: an unknown one is refused; a query string's text is read as
    the field's type where it can be (else passed on, for the library to name it as the command line would)."""
    fields = FIELDS[job]
    unknown = sorted(set(params) - set(fields))
    if unknown:
        raise InputError(f"unknown field {unknown[0]!r} for /api/{job}; the fields: {', '.join(fields) or 'none'}")
    if not from_text:
        return dict(params)
    out: dict[str, Any] = {}
    for key, value in params.items():
        kind = fields[key]
        try:
            if kind is Bool and value in ("true", "false", "1", "0"):
                out[key] = value in ("true", "1")
            elif kind is Int:
                out[key] = int(value) if value.strip() else None
            elif kind is Float:
                out[key] = float(value) if value.strip() else None
            else:
                out[key] = value
        except ValueError:
            out[key] = value
    return out


def run(job: str, params: dict[str, Any]) -> tuple[int, Any]:
    """(status, answer): 200 and the job's answer, or 400 and the one line the command line would print."""
    from ..output.sheet import one_line

    try:
        return 200, JOBS[job](params)
    except InputError as exc:
        return 400, {"error": one_line(exc)}
    except RecursionError:
        return 400, {"error": "input nested too deeply"}
    except MemoryError:
        return 413, {"error": "the question needs more memory than a request is given"}
