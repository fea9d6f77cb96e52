"""Figures for docs (matplotlib, an optional extra): parameter shares and dense-vs-gated sweeps.

Output is deterministic — no dates, fixed SVG ids — so generated docs can be checked for drift.
"""

from __future__ import annotations

import io
from typing import Any

from ..analysis.count import Tally
from ..analysis.sizing import ffn_flops, ffn_params
from ..errors import InputError

GROUPS = ["embedding", "attention", "FFN", "router", "routed experts", "shared experts", "norms", "unembedding"]
# Okabe & Ito (2008), "Color Universal Design": told apart with every common colour-vision deficiency
OKABE_ITO = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "sky": "#56B4E9",
    "purple": "#CC79A7",
    "yellow": "#F0E442",
    "black": "#000000",
}
COLOURS = [
    "#999999",
    OKABE_ITO["blue"],
    OKABE_ITO["orange"],
    OKABE_ITO["yellow"],
    OKABE_ITO["vermillion"],
    OKABE_ITO["purple"],
    OKABE_ITO["green"],
    "#DDDDDD",
]
KINDS = (("dense", OKABE_ITO["blue"], "o"), ("gated", OKABE_ITO["vermillion"], "s"))
# Figure widths in inches: a column and the full text width of a two-column paper (ACL, NeurIPS, ICML two-column
# templates: about 3.3 and 6.9 in), or the docs' own.
WIDTHS = {"docs": None, "column": 3.3, "page": 6.9}


def group_of(name: str, role: str, slot: str = "") -> str:
    """The component group a term belongs to, for share plots."""
    if role == "norm":
        return "norms"
    if name.startswith(("embed.", "pos_embed.")):
        return "embedding"
    if name.startswith("lm_head."):
        return "unembedding"
    if slot == "attention":
        return "attention"
    if name.startswith("ffn.router"):
        return "router"
    if name.startswith("ffn.experts."):
        return "routed experts"
    if name.startswith("ffn.shared."):
        return "shared experts"
    return "FFN"


def shares(t: Tally) -> dict[str, int]:
    out = {g: 0 for g in GROUPS}
    for r in t.rows:
        out[group_of(r.name, r.role, r.slot)] += r.params
    return out


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise InputError("plots need matplotlib: pip install 'ffncalc[plot]'") from None
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "ffncalc"  # fixed element ids: the same figure, the same file
    import matplotlib.pyplot as plt

    return plt


def save(fig, fmt: str) -> bytes:
    """The figure as SVG, PDF or PNG bytes, without dates or software stamps (the same figure, the same bytes)."""
    buf = io.BytesIO()
    metadata = {
        "svg": {"Date": None, "Creator": None},
        "png": {"Software": None},
        "pdf": {"CreationDate": None, "Creator": None, "Producer": None},
    }[fmt]
    fig.savefig(buf, format=fmt, metadata=metadata, dpi=150, bbox_inches="tight")
    return buf.getvalue()


def bench_results(path: str, d_model: int) -> list[dict[str, Any]]:
    """The FFN timings of ``ffncalc bench --compare-ffn --out FILE``, checked to be of blocks ``d_model`` wide (a
    sweep's measured panel beside another width's blocks would mislead)."""
    from pathlib import Path

    from ..sources import parse_json
    from ..sources.yaml import read_text

    data = parse_json(read_text(Path(path)), str(path))
    return check_bench(data, d_model, path)


def check_bench(data: Any, d_model: int, path: str) -> list[dict[str, Any]]:
    """The FFN timings of a bench record (or a bare list of them), checked as ``bench_results`` says."""
    bench = data.get("bench", []) if isinstance(data, dict) else data
    if (
        not isinstance(bench, list)
        or not bench
        or not all(
            isinstance(r, dict)
            and type(r.get("d_ff")) is int
            and r.get("kind") in ("dense", "gated")
            and isinstance(r.get("median_ms"), (int, float))
            for r in bench
        )
    ):
        raise InputError(f"{path}: not a list of dense and gated FFN timings (ffncalc bench --compare-ffn --out)")
    widths = {r.get("d_model") for r in bench}
    if widths != {d_model}:
        found = ", ".join(f"{w:,}" if isinstance(w, int) else "unstated" for w in sorted(widths, key=str))
        raise InputError(
            f"{path}: timed FFN blocks of d_model {found}, not --d-model {d_model:,}: time this width "
            f"(ffncalc bench MODEL --compare-ffn --out FILE for a model {d_model:,} wide) or plot that one"
        )
    return bench


def _paper(width: str) -> dict:
    """rc settings for a figure ``width`` wide: at a paper's widths, text at the size of a caption (8 pt)."""
    return (
        {}
        if WIDTHS[width] is None
        else {"font.size": 8, "axes.titlesize": 8, "legend.fontsize": 7, "xtick.labelsize": 7, "ytick.labelsize": 7}
    )


def _subplots(*grid: int, figsize):
    """A figure and its axes, as pyplot.subplots makes them, but not kept by pyplot: a figure returned to a caller (a
    notebook drawing many) is freed with its last reference."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    return fig, fig.subplots(*grid)


def share_figure(tallies: list[Tally], width: str = "docs"):
    """Stacked bars: each model's parameters by component group, as shares of its total."""
    plt = _pyplot()
    with plt.rc_context(_paper(width)):
        return _share_figure(plt, tallies, width)


def _share_figure(plt, tallies: list[Tally], width: str):
    w = WIDTHS[width]
    fig, ax = _subplots(figsize=(max(6, 0.55 * len(tallies) + 2), 4.2) if w is None else (w, 0.75 * w))
    names = [t.model for t in tallies]
    bottoms = [0.0] * len(tallies)
    for group, colour in zip(GROUPS, COLOURS):
        values = [100 * shares(t)[group] / t.params for t in tallies]
        if any(values):
            ax.bar(names, values, bottom=bottoms, label=group, color=colour, width=0.7)
            bottoms = [b + v for b, v in zip(bottoms, values)]
    ax.set_ylabel("share of parameters (%)")
    ax.set_ylim(0, 100)
    if w is None:  # a paper's figure takes its caption instead
        ax.set_title("Where the parameters are (ffncalc count, exact convention)")
    ax.tick_params(axis="x", rotation=60)
    for label in ax.get_xticklabels():
        label.set_horizontalalignment("right")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    fig.tight_layout()
    return fig


def sweep_figure(
    d_model: int, ratios: list[float], bias: bool = False, bench: list[dict[str, Any]] | None = None, width: str = "docs"
):
    """Dense and gated blocks across widths: parameters and forward FLOPs per token (and measured time)."""
    plt = _pyplot()
    with plt.rc_context(_paper(width)):
        return _sweep_figure(plt, d_model, ratios, bias, bench, width)


def _sweep_figure(plt, d_model, ratios, bias, bench, width: str):
    panels, inches = (3 if bench else 2), WIDTHS[width]
    if inches is None:
        fig, axes = _subplots(1, panels, figsize=(4.6 * panels, 3.8))
    elif width == "column":  # one panel above another
        fig, axes = _subplots(panels, 1, figsize=(inches, 2.1 * panels))
    else:
        fig, axes = _subplots(1, panels, figsize=(inches, 2.6))
    widths = [max(1, round(r * d_model)) for r in ratios]
    for kind, colour, marker in KINDS:
        axes[0].plot(ratios, [ffn_params(d_model, w, kind, bias) / 1e6 for w in widths], marker=marker, color=colour, label=kind)
        axes[1].plot(ratios, [ffn_flops(d_model, w, kind) / 1e6 for w in widths], marker=marker, color=colour, label=kind)
    axes[0].set_ylabel("parameters per block (M)")
    axes[1].set_ylabel("forward FLOPs per token (M)")
    if bench:
        for kind, colour, marker in KINDS:
            pts = sorted((r["d_ff"] / d_model, r["median_ms"]) for r in bench if r["kind"] == kind)
            if pts:
                axes[2].plot(*zip(*pts), marker=marker, color=colour, label=kind)
        axes[2].set_ylabel("measured ms per run (median)")
    for ax in axes:
        ax.set_xlabel("d_ff / d_model")
        ax.legend(frameon=False)
        ax.grid(alpha=0.3)
    # 2·d·f = 3·d·g: read across at equal height for the gated width of equal parameters (2/3 of dense)
    if inches is None:  # a paper's figure takes its caption instead
        fig.suptitle(f"Dense vs gated FFN, d_model {d_model:,}: at equal parameters the gated block is 2/3 as wide")
    fig.tight_layout()
    return fig
