"""The questions about many models at once: ``table`` (a row per model) and ``presets`` (the shipped ones), each
returning a result whose ``to_dict()`` is its command's JSON; and ``plot``, the ``plot`` command's figures as
matplotlib figures."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..analysis.conventions import DEFAULT
from ..errors import InputError
from . import options as o
from .models import Model, Source, resolve
from .results import Bench, Presets, Table

if TYPE_CHECKING:
    from matplotlib.figure import Figure as PlotFigure

Models = Model | Source | Iterable[Model | Source]


def _models(models: Models) -> list[Model]:
    """``"all"``: every preset; one model or source; or several."""
    from ..sources import presets as shipped

    if models == "all" or (isinstance(models, (list, tuple)) and list(models) == ["all"]):
        return [resolve(name) for name in shipped.names()]
    if isinstance(models, (Model, str, os.PathLike)):
        return [resolve(models)]
    if not isinstance(models, Iterable) or isinstance(models, (dict, bytes)):
        raise InputError(f'models: a model, a list of them or "all", not a {type(models).__name__}', field="models")
    return [resolve(m) for m in models]


def table(
    models: Models, *, columns: str | Sequence[str] | None = None, seq_len: int | None = None, convention: str = DEFAULT
) -> Table:
    """One row per model (``"all"``: every preset): totals, attention and FFN shares, FLOPs and shapes;
    ``columns``: which, in order (``"model,params"`` or a list; default: all)."""
    from ..analysis.summary import COLUMNS, summarize

    o.whole("seq_len", seq_len)
    o.choice("convention", convention, o.ConventionName)
    if columns is None:
        chosen = list(COLUMNS)
    else:
        if not isinstance(columns, (str, list, tuple)) or not all(isinstance(c, str) for c in columns):
            raise InputError(f"--columns {o.shown(columns)}: column names, as text or a list", field="columns")
        chosen = [c.strip() for c in (columns.split(",") if isinstance(columns, str) else columns)]
    unknown = [c for c in chosen if c not in COLUMNS]
    if unknown:
        raise InputError(f"--columns: unknown {', '.join(unknown)} (choose from {', '.join(COLUMNS)})", field="columns")
    rows = []
    for m in _models(models):
        m.stack.check_seq_len(seq_len, m.label)
        rows.append(summarize(m.stack, model=m.label, seq_len=seq_len, convention=convention))
    return Table(rows, chosen)


def presets() -> Presets:
    """The shipped presets, each with its aliases, shape and parameter counts, families together, smallest first."""
    from ..analysis.count import tally
    from ..sources import presets as shipped

    entries: list[dict[str, Any]] = []
    for name in shipped.names():
        spec: Any = shipped.load(name)[1]
        t = tally(spec)
        ffns = {layer.ffn.describe() for layer in spec.layers}
        entries.append(
            {
                "name": name,
                "title": spec.name or name,
                "aliases": sorted(a for a, target in shipped.ALIASES.items() if target == name),
                "n_layers": spec.n_layers,
                "d_model": spec.d_model,
                "ffn": ", ".join(sorted(ffns)),
                "params": t.params,
                "active_params": t.active,
            }
        )
    entries.sort(key=lambda e: (e["name"].split("-")[0], e["params"]))  # families, smallest first
    return Presets(entries)


def plot(
    what: str,
    models: Models | None = None,
    *,
    d_model: int = 4096,
    ratios: str | Iterable[float] = "1:8:1",
    bias: bool = False,
    bench_results: str | os.PathLike[str] | Bench | None = None,
    width: str = "docs",
    out: str | os.PathLike[str] | None = None,
) -> PlotFigure:
    """The ``plot`` command's figures (needs matplotlib), as a matplotlib Figure: ``"share"``, each model's
    parameters by component (``models``; ``"all"``: every preset); ``"sweep"``, dense vs gated FFN blocks
    ``d_model`` wide across ``ratios`` d_ff/d_model, with measured times from ``bench_results`` (a ``bench
    --compare-ffn --out`` file or a ``Bench``). ``out``: also write it to this .svg, .pdf or .png file."""
    from ..analysis.count import tally
    from ..output import plot as draw

    o.choice("what", what, ("share", "sweep"))
    o.choice("width", width, o.FigureWidth)
    fmt = ""
    if out is not None:
        fmt = str(out).rsplit(".", 1)[-1].lower() if "." in os.fspath(out) else ""
        if fmt not in ("svg", "pdf", "png"):
            raise InputError(f"--out {out}: name an .svg, .pdf or .png file", field="out")
    if what == "share":
        if models is None:
            raise InputError("plot share needs models (or 'all')", field="models")
        every = models == "all" or (isinstance(models, (list, tuple)) and list(models) == ["all"])
        tallies = [tally(m.stack, model=m.label) for m in _models(models)]
        if every:
            tallies.sort(key=lambda t: (t.model.split("-")[0], t.params))  # families, smallest first
        fig = draw.share_figure(tallies, width)
    else:
        from ..analysis.compare import parse_ratios

        o.whole("d_model", d_model)
        text = ratios if isinstance(ratios, str) else ",".join(repr(float(r)) for r in ratios)
        bench: list[dict[str, Any]] | None = None
        if isinstance(bench_results, Bench):
            bench = draw.check_bench(bench_results.record(), d_model, "bench_results")
        elif bench_results is not None:
            bench = draw.bench_results(os.fspath(bench_results), d_model)
        fig = draw.sweep_figure(d_model, parse_ratios(text, "--ratios"), bias, bench, width)
    if out is not None:
        from ..files import write_atomic

        write_atomic(os.fspath(out), draw.save(fig, fmt))
    result: PlotFigure = fig
    return result
