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
COLOURS = ["#8c8c8c", "#4c72b0", "#dd8452", "#937860", "#c44e52", "#da8bc3", "#55a868", "#bcbcbc"]


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
    metadata = {"svg": {"Date": None, "Creator": None}, "png": {"Software": None},
                "pdf": {"CreationDate": None, "Creator": None, "Producer": None}}[fmt]
    fig.savefig(buf, format=fmt, metadata=metadata, dpi=150, bbox_inches="tight")
    return buf.getvalue()


def share_figure(tallies: list[Tally]):
    """Stacked bars: each model's parameters by component group, as shares of its total."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(6, 0.55 * len(tallies) + 2), 4.2))
    names = [t.model for t in tallies]
    bottoms = [0.0] * len(tallies)
    for group, colour in zip(GROUPS, COLOURS):
        values = [100 * shares(t)[group] / t.params for t in tallies]
        if any(values):
            ax.bar(names, values, bottom=bottoms, label=group, color=colour, width=0.7)
            bottoms = [b + v for b, v in zip(bottoms, values)]
    ax.set_ylabel("share of parameters (%)")
    ax.set_ylim(0, 100)
    ax.set_title("Where the parameters are (ffncalc count, exact convention)")
    ax.tick_params(axis="x", rotation=60)
    for label in ax.get_xticklabels():
        label.set_horizontalalignment("right")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    fig.tight_layout()
    return fig


def sweep_figure(d_model: int, ratios: list[float], bias: bool = False, bench: list[dict[str, Any]] | None = None):
    """Dense and gated blocks across widths: parameters and forward FLOPs per token (and measured time)."""
    plt = _pyplot()
    panels = 3 if bench else 2
    fig, axes = plt.subplots(1, panels, figsize=(4.6 * panels, 3.8))
    widths = [max(1, round(r * d_model)) for r in ratios]
    for kind, colour, marker in (("dense", "#4c72b0", "o"), ("gated", "#dd8452", "s")):
        axes[0].plot(ratios, [ffn_params(d_model, w, kind, bias) / 1e6 for w in widths], marker=marker,
                     color=colour, label=kind)
        axes[1].plot(ratios, [ffn_flops(d_model, w, kind) / 1e6 for w in widths], marker=marker, color=colour,
                     label=kind)
    axes[0].set_ylabel("parameters per block (M)")
    axes[1].set_ylabel("forward FLOPs per token (M)")
    if bench:
        for kind, colour in (("dense", "#4c72b0"), ("gated", "#dd8452")):
            pts = sorted((r["d_ff"] / d_model, r["median_ms"]) for r in bench if r["kind"] == kind)
            if pts:
                axes[2].plot(*zip(*pts), marker="o" if kind == "dense" else "s", color=colour, label=kind)
        axes[2].set_ylabel("measured ms per run (median)")
    for ax in axes:
        ax.set_xlabel("d_ff / d_model")
        ax.legend(frameon=False)
        ax.grid(alpha=0.3)
    # 2·d·f = 3·d·g: read across at equal height for the gated width of equal parameters (2/3 of dense)
    fig.suptitle(f"Dense vs gated FFN, d_model {d_model:,}: at equal parameters the gated block is 2/3 as wide")
    fig.tight_layout()
    return fig
