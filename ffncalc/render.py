"""Tallies as records, and records as a rich table, markdown, CSV or JSON. No counting here."""

from __future__ import annotations

import csv
import io
import json
from typing import TYPE_CHECKING, Any, Iterable

from .count import Row, Tally, merge_layers

if TYPE_CHECKING:
    from rich.console import Console, Group

    from .verify import Report

FORMATS = ("table", "json", "markdown", "csv")


def human_params(n: int) -> str:
    """175181291520 -> '175.2B'."""
    for size, suffix in ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K")):
        if abs(n) >= size:
            return f"{n / size:.1f}{suffix}"
    return str(n)


def human_flops(n: int) -> str:
    """314572800000 -> '3.15e11'."""
    if abs(n) < 1000:
        return str(n)
    mantissa, exponent = f"{n:.2e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def exact(n: int) -> str:
    return f"{n:,}"


def shape_text(row: Row) -> str:
    if row.role == "core":  # (heads, keys per query, head_dim)
        heads, keys, head_dim = row.shape
        return f"{heads} heads × {keys} keys × {head_dim}"
    return "×".join(str(s) for s in row.shape)


def layers_text(layers: tuple[int, int] | None) -> str:
    if layers is None:
        return ""
    first, stop = layers
    return str(first) if stop - first == 1 else f"{first}–{stop - 1}"


def component_rows(t: Tally, per_layer: bool) -> list[Row]:
    return list(t.rows) if per_layer else merge_layers(t.rows)


def records(t: Tally, per_layer: bool = False) -> dict[str, Any]:
    """Everything a count shows, as JSON-ready data: every figure an exact integer."""
    conv = t.convention
    return {
        "model": t.model,
        "convention": {"name": conv.name, "summary": conv.summary, "source": conv.source},
        "seq_len": t.seq_len,
        "batch": t.batch,
        "tokens": t.tokens,
        "recompute": t.recompute,
        "components": [
            {
                "component": r.name,
                "part": r.part,
                "layers": list(r.layers) if r.layers else None,
                "shape": list(r.shape),
                "count": r.count,
                "params": r.params,
                "active_params": r.active,
                "matrices": r.matrices,
                "forward_flops_per_token": r.flops,
                "elementwise_flops_per_token": r.elementwise,
                "tied": r.tied,
            }
            for r in component_rows(t, per_layer)
        ],
        "totals": t.totals(),
    }


def to_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def headline(t: Tally) -> list[str]:
    conv = t.convention
    return [
        f"{t.model} · seq_len {t.seq_len:,} · batch {t.batch:,} · recompute {t.recompute}",
        f"convention: {conv.name} — {conv.summary} [{conv.source}]",
    ]


def total_lines(t: Tally) -> list[tuple[str, int, str]]:
    """(label, exact figure, human figure) for the totals block."""
    out = [
        ("parameters", t.params, human_params(t.params)),
        ("  embedding", t.embedding, human_params(t.embedding)),
        ("  non-embedding", t.non_embedding, human_params(t.non_embedding)),
    ]
    if t.moe:
        out.append(("  active per token", t.active, human_params(t.active)))
    out += [
        ("weight matrices", t.matrices, ""),
        ("forward matmul FLOPs per token", t.flops_per_token, human_flops(t.flops_per_token)),
        (f"forward matmul FLOPs ({t.tokens:,} tokens)", t.forward_flops, human_flops(t.forward_flops)),
        (f"elementwise FLOPs, not in the above ({t.tokens:,} tokens)", t.elementwise_flops,
         human_flops(t.elementwise_flops)),
        (f"training step FLOPs (3 × forward{' + recompute' if t.recompute != 'none' else ''})", t.train_flops,
         human_flops(t.train_flops)),
    ]
    return out


def _params_cell(r: Row) -> str:
    if r.tied:
        return "tied to embed.weight"
    return f"{exact(r.params)} ({human_params(r.params)})" if r.params else ""


def _share(r: Row, total: int) -> str:
    return f"{100 * r.params / total:.2f}%" if r.params and total else ""


def _cells(t: Tally, rows: Iterable[Row], per_layer: bool) -> tuple[list[str], list[list[str]]]:
    head = ["component"] + (["layers"] if per_layer else []) + ["shape", "count", "params", "share"]
    if t.moe:
        head.append("active")
    head += ["fwd FLOPs/token", "elementwise/token"]
    body = []
    for r in rows:
        cells = [r.name] + ([layers_text(r.layers)] if per_layer else [])
        cells += [shape_text(r), f"×{r.count:,}" if r.count > 1 else "", _params_cell(r), _share(r, t.params)]
        if t.moe:
            cells.append(exact(r.active) if r.active and r.active != r.params else "")
        cells += [exact(r.flops) if r.flops else "", exact(r.elementwise) if r.elementwise else ""]
        body.append(cells)
    return head, body


def table(t: Tally, per_layer: bool = False) -> Group:
    """The rich view: headline, component table, totals."""
    from rich.console import (
        Group,  # rich loads only for this view: JSON, markdown and CSV never need it
    )
    from rich.table import Table
    from rich.text import Text

    head, body = _cells(t, component_rows(t, per_layer), per_layer)
    comp = Table(show_edge=False, pad_edge=False, header_style="bold")
    for name in head:
        comp.add_column(name, justify="left" if name in ("component", "layers", "shape") else "right",
                        no_wrap=name != "shape")
    for cells in body:
        comp.add_row(*cells)
    totals = Table(show_header=False, show_edge=False, box=None, pad_edge=False)
    totals.add_column(style="bold")
    totals.add_column(justify="right")
    totals.add_column(justify="right", style="dim")
    for label, value, short in total_lines(t):
        totals.add_row(label, exact(value), short)
    lines = headline(t)
    return Group(Text(lines[0], style="bold"), Text(lines[1], style="dim"), Text(""), comp, Text(""), totals)


def markdown(t: Tally, per_layer: bool = False) -> str:
    head, body = _cells(t, component_rows(t, per_layer), per_layer)
    out = [f"**{line}**" if i == 0 else f"*{line}*" for i, line in enumerate(headline(t))]
    out += ["", _md_table(head, body), "", _md_table(["total", "exact", ""],
                                                     [[label.strip(), exact(v), s] for label, v, s in total_lines(t)])]
    return "\n".join(out) + "\n"


def _md_table(head: list[str], body: list[list[str]]) -> str:
    def line(cells):
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    align = ["---" if h in ("component", "layers", "shape", "total", "") else "---:" for h in head]
    return "\n".join([line(head), "| " + " | ".join(align) + " |"] + [line(r) for r in body])


CSV_FIELDS = ("convention", "seq_len", "component", "part", "layers", "shape", "count", "params", "active_params",
              "matrices", "forward_flops_per_token", "elementwise_flops_per_token")


def to_csv(t: Tally, per_layer: bool = False) -> str:
    """One row per component and a final ``total`` row; integers only."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    rows = component_rows(t, per_layer)
    for r in rows:
        writer.writerow([t.convention.name, t.seq_len, r.name, r.part, layers_text(r.layers),
                         "x".join(map(str, r.shape)), r.count, r.params, r.active, r.matrices, r.flops, r.elementwise])
    writer.writerow([t.convention.name, t.seq_len, "total", "", "", "", "", t.params, t.active, t.matrices,
                     t.flops_per_token, t.elementwise_per_token])
    return buf.getvalue()


def verify_records(report: Report) -> dict[str, Any]:
    return {
        "model": report.model,
        "convention": report.convention,
        "seq_len": report.seq_len,
        "batch": 1,
        "every_layer": report.every_layer,
        "ok": report.ok,
        "notes": list(report.notes),
        "components": [
            {
                "component": c.component,
                "layers": list(c.layers) if c.layers else None,
                "analytic_params": c.analytic_params,
                "torch_params": c.torch_params,
                "params_ok": c.params_ok,
                "analytic_flops": c.analytic_flops,
                "torch_flops": c.torch_flops,
                "flops_ok": c.flops_ok,
            }
            for c in report.checks
        ],
    }


def verify_table(report: Report) -> Group:
    """Component | analytic | torch | ✓/✗, for parameters and for forward FLOPs."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    def mark(ok: bool) -> Text:
        return Text("✓", style="green") if ok else Text("✗", style="bold red")

    show_layers = len({c.layers for c in report.checks if c.layers}) > 1
    tab = Table(show_edge=False, pad_edge=False, header_style="bold")
    tab.add_column("component")
    if show_layers:
        tab.add_column("layers")
    for col in ("params", "torch params", "", "FLOPs", "torch FLOPs", ""):
        tab.add_column(col, justify="right")
    for c in report.checks:
        cells = [c.component] + ([layers_text(c.layers)] if show_layers else [])
        tab.add_row(*cells, exact(c.analytic_params), exact(c.torch_params), mark(c.params_ok),
                    exact(c.analytic_flops), exact(c.torch_flops), mark(c.flops_ok))
    sums = [sum(getattr(c, f) for c in report.checks)
            for f in ("analytic_params", "torch_params", "analytic_flops", "torch_flops")]
    tab.add_section()
    tab.add_row("total", *([""] if show_layers else []), exact(sums[0]), exact(sums[1]), mark(sums[0] == sums[1]),
                exact(sums[2]), exact(sums[3]), mark(sums[2] == sums[3]), style="bold")
    head = Text(f"{report.model} · convention {report.convention} · seq_len {report.seq_len:,} · batch 1 · "
                "analytic vs torch (meta device, FlopCounterMode)", style="bold")
    parts = [head] + [Text(note, style="dim") for note in report.notes] + [Text(""), tab, Text("")]
    failures = report.failures
    if failures:
        parts.append(Text(f"✗ {len(failures)} component(s) differ: " + ", ".join(
            c.component + (f" [{layers_text(c.layers)}]" if c.layers else "") for c in failures), style="bold red"))
    else:
        parts.append(Text(f"✓ all {len(report.checks)} components agree", style="bold green"))
    return Group(*parts)


def bench_table(model: str, results) -> Group:
    """Timed blocks: median and spread, tokens/s, achieved TFLOP/s and their share of the measured peak."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    first = results[0]
    tab = Table(show_edge=False, pad_edge=False, header_style="bold")
    for col in ("block", "variant", "median ms", "min–max ms", "tokens/s", "GFLOP/run", "TFLOP/s", "of matmul"):
        tab.add_column(col, justify="left" if col in ("block", "variant") else "right")
    for r in results:
        tab.add_row(r.block + (" fwd+bwd" if r.backward else ""), r.variant, f"{r.median_ms:.3f}",
                    f"{r.min_ms:.3f}–{r.max_ms:.3f}", f"{r.tokens_per_s:,.0f}", f"{r.flops / 1e9:,.2f}",
                    f"{r.tflops:.3f}", f"{100 * r.share_of_peak:.1f}%")
    sheet = (f"; datasheet {first.datasheet}: {first.datasheet_tflops} TFLOP/s {first.dtype}"
             if first.datasheet_tflops else "")
    lines = [
        Text(f"{model} · {first.device} · {first.dtype} · {first.tokens:,} tokens "
             f"({first.tokens // first.seq_len} × {first.seq_len})", style="bold"),
        Text(f"matmul rate measured in this run: {first.peak_tflops_measured:.3f} TFLOP/s{sheet}", style="dim"),
        Text("FLOPs: the analytic matmul FLOPs of the work timed (backward = 2 × forward)", style="dim"),
    ]
    if len(results) == 2 and results[0].block == results[1].block == "ffn":
        lines.append(Text(f"time ratio {results[1].variant.split()[0]} / {results[0].variant.split()[0]}: "
                          f"{results[1].median_ms / results[0].median_ms:.3f}", style="dim"))
    return Group(*lines, Text(""), tab)


CAPACITY = ("Capacity: the dense block's hidden features are one linear projection of x, so their rank is at "
            "most min(d_model, d_ff); the gated block multiplies two projections, a linear map of the degree-2 "
            "features x⊗x (the kernel view), so its rank can reach d_ff (at most d_model(d_model+1)/2).")


def comparison_records(c, bench_results=None) -> dict[str, Any]:
    def side(s) -> dict[str, Any]:
        return {
            "kind": s.kind, "activation": s.activation, "variant": s.variant, "d_ff": s.d_ff, "bias": s.bias,
            "params_per_layer": s.params, "params_all_ffn_layers": s.params * c.ffn_layers,
            "model_params": s.model_params, "forward_flops_per_token": s.flops,
            "train_flops_per_token": s.train_flops, "model_forward_flops_per_token": s.model_flops,
            "activation_elements_per_token": s.activations, "rank_linear": s.rank_linear,
            "rank_degree2": s.rank_kernel,
            "reference_log_perplexity": list(s.reference) if s.reference else None,
        }

    out = {
        "model": c.model, "d_model": c.d_model, "ffn_layers": c.ffn_layers, "match": c.match,
        "multiple_of": c.multiple_of, "moe": c.moe, "residual": c.residual, "exact": c.exact,
        "residual_percent": 100 * c.residual / getattr(c.source, c.match),
        "source": side(c.source), "target": side(c.target), "capacity": CAPACITY,
    }
    if c.source.reference:
        from .compare import SHAZEER_SOURCE

        out["reference_source"] = SHAZEER_SOURCE
    if bench_results:
        out["bench"] = [r.record() for r in bench_results]
    return out


def _comparison_rows(c, bench_results=None) -> list[list[str]]:
    a, b = c.source, c.target
    n = c.ffn_layers
    rows = [
        ["FFN", a.variant, b.variant],
        ["d_ff", exact(a.d_ff), exact(b.d_ff)],
        ["params per layer", exact(a.params), exact(b.params)],
    ]
    if n > 1:
        rows.append([f"params, {n} FFN layers", exact(a.params * n), exact(b.params * n)])
    if a.model_params is not None:
        rows.append(["params, whole model", f"{exact(a.model_params)} ({human_params(a.model_params)})",
                     f"{exact(b.model_params)} ({human_params(b.model_params)})"])
    rows += [
        ["forward FLOPs/token per layer", exact(a.flops), exact(b.flops)],
        ["training FLOPs/token per layer", exact(a.train_flops), exact(b.train_flops)],
    ]
    if a.model_flops is not None:
        rows.append(["forward FLOPs/token, whole model", exact(a.model_flops), exact(b.model_flops)])
    rows += [
        ["activations kept per token (elements)", exact(a.activations), exact(b.activations)],
        ["  bytes at bf16", exact(2 * a.activations), exact(2 * b.activations)],
        ["rank of the hidden map in x ≤", exact(a.rank_linear), exact(b.rank_linear)],
        ["rank over degree-2 features x⊗x ≤", exact(a.rank_kernel), exact(b.rank_kernel)],
    ]
    if a.reference or b.reference:
        def ref(s):
            return f"{s.reference[0]} / {s.reference[1]}" if s.reference else "—"
        rows.append(["Shazeer 2020 log-ppl, 65k / 524k steps", ref(a), ref(b)])
    if bench_results:
        ra, rb = bench_results
        rows += [["measured ms (median)", f"{ra.median_ms:.3f}", f"{rb.median_ms:.3f}"],
                 ["achieved TFLOP/s", f"{ra.tflops:.3f}", f"{rb.tflops:.3f}"],
                 ["share of the measured matmul rate", f"{100 * ra.share_of_peak:.1f}%",
                  f"{100 * rb.share_of_peak:.1f}%"]]
    return rows


def _comparison_notes(c, bench_results=None) -> list[str]:
    pct = 100 * c.residual / getattr(c.source, c.match)
    what = "parameters" if c.match == "params" else "forward FLOPs"
    where = f"{c.model} · " if c.model else ""
    lines = [f"{where}d_model {c.d_model:,} · matching {what}"
             + (f" · d_ff a multiple of {c.multiple_of}" if c.multiple_of > 1 else ""),
             f"residual: {c.residual:+,} {what} per layer ({pct:+.4f}%)" + (" — exact" if c.exact else " — nearest width")]
    if c.moe:
        lines.append(f"compared: {c.moe}")
    lines.append(CAPACITY)
    if c.source.reference or c.target.reference:
        from .compare import SHAZEER_SOURCE

        lines.append(f"reference: {SHAZEER_SOURCE}")
    if bench_results:
        ra, rb = bench_results
        lines.append(f"timed on {ra.device}, {ra.dtype}, {ra.tokens:,} tokens: time ratio "
                     f"{c.target.variant} / {c.source.variant} = {rb.median_ms / ra.median_ms:.3f}")
    return lines


def comparison_table(c, bench_results=None) -> Group:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    rows = _comparison_rows(c, bench_results)
    tab = Table(show_edge=False, pad_edge=False, header_style="bold")
    tab.add_column("")
    tab.add_column(c.source.kind, justify="right")
    tab.add_column(c.target.kind, justify="right")
    for r in rows:
        tab.add_row(*r)
    notes = _comparison_notes(c, bench_results)
    return Group(Text(notes[0], style="bold"), Text(notes[1]), Text(""), tab, Text(""),
                 *[Text(n, style="dim") for n in notes[2:]])


def comparison_markdown(c, bench_results=None) -> str:
    notes = _comparison_notes(c, bench_results)
    body = _md_table(["", c.source.kind, c.target.kind], _comparison_rows(c, bench_results))
    return "\n".join([f"**{notes[0]}**", "", notes[1], "", body, ""] + [f"*{n}*" for n in notes[2:]]) + "\n"


def comparison_csv(c, bench_results=None) -> str:
    """One row per side, every figure."""
    rec = comparison_records(c, bench_results)
    fields = list(rec["source"])
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["side", "model", "d_model", "match", "residual"] + fields)
    for name in ("source", "target"):
        writer.writerow([name, c.model or "", c.d_model, c.match, c.residual]
                        + [_csv_cell(rec[name][f]) for f in fields])
    return buf.getvalue()


def _csv_cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, list):
        return "/".join(map(str, v))
    return str(v)


SWEEP_HEAD = ["d_ff/d_model", "source d_ff", "target d_ff", "source params", "target params", "residual", "residual %",
              "rank in x", "rank over x⊗x"]


def sweep_rows(comparisons) -> list[list[str]]:
    out = []
    for c in comparisons:
        pct = 100 * c.residual / getattr(c.source, c.match)
        out.append([f"{c.source.d_ff / c.d_model:.3f}", exact(c.source.d_ff), exact(c.target.d_ff),
                    exact(getattr(c.source, c.match)), exact(getattr(c.target, c.match)), f"{c.residual:+,}",
                    f"{pct:+.4f}%", f"{c.source.rank_linear:,} / {c.target.rank_linear:,}",
                    f"{c.source.rank_kernel:,} / {c.target.rank_kernel:,}"])
    return out


def sweep_table(comparisons) -> Group:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    c0 = comparisons[0]
    tab = Table(show_edge=False, pad_edge=False, header_style="bold")
    for h in SWEEP_HEAD:
        tab.add_column(h, justify="right")
    for r in sweep_rows(comparisons):
        tab.add_row(*r)
    return Group(Text(f"{c0.source.variant} → {c0.target.variant} · d_model {c0.d_model:,} · matching {c0.match}",
                      style="bold"), Text(""), tab, Text(""), Text(CAPACITY, style="dim"))


def sweep_markdown(comparisons) -> str:
    c0 = comparisons[0]
    return (f"**{c0.source.variant} → {c0.target.variant} · d_model {c0.d_model:,} · matching {c0.match}**\n\n"
            + _md_table(SWEEP_HEAD, sweep_rows(comparisons)) + "\n")


def sweep_csv(comparisons) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["d_model", "match", "source_kind", "source_d_ff", "target_kind", "target_d_ff", "source_value",
                     "target_value", "residual"])
    for c in comparisons:
        writer.writerow([c.d_model, c.match, c.source.kind, c.source.d_ff, c.target.kind, c.target.d_ff,
                         getattr(c.source, c.match), getattr(c.target, c.match), c.residual])
    return buf.getvalue()


def human_bytes(n: float) -> str:
    for size, suffix in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if abs(n) >= size:
            return f"{n / size:.2f} {suffix}"
    return f"{n:.0f} B"


def _figure(value, unit: str) -> str:
    """Exact integers with separators and a short form; other figures to four significant digits."""
    if unit.startswith("bytes"):
        return (f"{value:,}" if isinstance(value, int) else f"{value:,.0f}") + f" ({human_bytes(value)})"
    if isinstance(value, int):
        short = human_flops(value) if "FLOP" in unit or unit == "tokens" else human_params(value)
        return f"{value:,}" + (f" ({short})" if abs(value) >= 10_000 else "")
    if abs(value) >= 1e7:
        return human_flops(round(value)) if "FLOP" in unit or unit == "tokens" else human_params(round(value))
    return f"{value:,.1f}" if abs(value) >= 1000 else f"{value:.4g}"


def lines_records(title: str, notes: list[str], lines) -> dict[str, Any]:
    return {"title": title, "notes": notes,
            "figures": [{"label": label, "value": value, "unit": unit} for label, value, unit in lines]}


def lines_table(title: str, notes: list[str], lines) -> Group:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    tab = Table(show_header=False, show_edge=False, box=None, pad_edge=False)
    tab.add_column(style="bold")
    tab.add_column(justify="right")
    tab.add_column(style="dim")
    for label, value, unit in lines:
        tab.add_row(label, _figure(value, unit), unit)
    return Group(Text(title, style="bold"), *[Text(n, style="dim") for n in notes], Text(""), tab)


def lines_markdown(title: str, notes: list[str], lines) -> str:
    body = _md_table(["", "value", "unit"], [[label, _figure(v, u), u] for label, v, u in lines])
    return "\n".join([f"**{title}**", ""] + [f"*{n}*" for n in notes] + ["", body]) + "\n"


def lines_csv(lines) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["label", "value", "unit"])
    for label, value, unit in lines:
        writer.writerow([label, value, unit])
    return buf.getvalue()


def console(width: int | None = None) -> Console:
    """A console per call; off a terminal, wide enough that tables keep their columns."""
    from rich.console import Console

    return Console(width=width, soft_wrap=False) if width else Console(soft_wrap=False)
