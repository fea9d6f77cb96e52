"""Results as documents (rich table, markdown, LaTeX: ``sheet.py``) and as records (JSON, CSV). No counting here."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..analysis.count import Row, Tally, merge_layers, plain
from .sheet import Document, Section, to_csv

if TYPE_CHECKING:
    from rich.console import Console

    from ..analysis.verify import Report

FORMATS = ("table", "json", "markdown", "csv", "latex")


def human_params(n: int) -> str:
    """175181291520 -> '175.2B'."""
    for size, suffix in ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K")):
        if abs(n) >= size:
            return f"{n / size:.1f}{suffix}"
    return str(n)


def human_flops(n: int) -> str:
    """314572800000 -> '3.15e11'."""
    n = plain(n)
    if abs(n) < 1000:
        return str(n)
    mantissa, exponent = f"{n:.2e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def exact(n: int) -> str:
    """Whole numbers with separators; an exact average that is not whole (FLOPs per token over a window)
    to one decimal."""
    n = plain(n)
    return f"{n:,}" if isinstance(n, int) else f"{n:,.1f}"


def shape_text(row: Row) -> str:
    if row.role == "core" and row.shape:  # (heads, keys per query, head_dim); none where layers differ in it
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


# What a count of a model that leaves its active parameters and FLOPs open (Tally.needs) still shows: parameters
PARAM_TOTALS = ("params", "embedding_params", "non_embedding_params", "mtp_params", "mtp_params_with_copies", "matrices")
OPEN = ("active_params", "forward_flops_per_token", "elementwise_flops_per_token")  # a component's open figures


def records(t: Tally, per_layer: bool = False) -> dict[str, Any]:
    """Everything a count shows, as JSON-ready data: every figure an exact integer (null where the source leaves
    it open: Tally.needs)."""
    if t.needs:
        from dataclasses import replace

        full = records(replace(t, needs=()), per_layer)
        return {
            **{k: v for k, v in full.items() if k not in ("views", "totals", "components")},
            "needs": list(t.needs),
            "components": [{**c, **dict.fromkeys(OPEN)} for c in full["components"]],
            "totals": {k: (v if k in PARAM_TOTALS else None) for k, v in full["totals"].items()},
        }
    conv = t.convention
    return {
        "model": t.model,
        "convention": {"name": conv.name, "summary": conv.summary, "source": conv.source},
        "seq_len": t.seq_len,
        "batch": t.batch,
        "tokens": t.tokens,
        "recompute": t.recompute,
        **({"notes": list(t.notes)} if t.notes else {}),
        **({"views": t.view_records()} if t.views is not None else {}),
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
                "forward_flops_per_token": plain(r.flops),
                "elementwise_flops_per_token": plain(r.elementwise),
                "tied": r.tied,
            }
            for r in component_rows(t, per_layer)
        ],
        "totals": t.totals(),
    }


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def figure(n: int, human: bool, kind: str = "params") -> str:
    """An exact integer, with its short form beside it unless ``human`` is off (--exact)."""
    if not human or abs(n) < 10_000:
        return exact(n)
    return f"{exact(n)} ({human_params(n) if kind == 'params' else human_flops(n)})"


# --- count --------------------------------------------------------------------------------------


def headline(t: Tally) -> list[str]:
    conv = t.convention
    return [
        f"{t.model} · seq_len {t.seq_len:,} · batch {t.batch:,} · recompute {t.recompute}",
        f"convention: {conv.name} — {conv.summary} [{conv.source}]",
    ]


def total_lines(t: Tally) -> list[tuple[str, int, str]]:
    """(label, figure, kind) for the totals block."""
    out = [("parameters", t.params, "params"), ("  embedding", t.embedding, "params"), ("  non-embedding", t.non_embedding, "params")]
    if t.mtp_params:
        out += [
            ("  multi-token prediction, not in the above", t.mtp_params, "params"),
            ("    with the embedding and head copies a checkpoint stores", t.mtp_params + t.mtp_copies, "params"),
        ]
    if t.moe and not t.needs:  # active parameters: none where the source leaves them open
        out += [
            ("  active per token", t.active, "params"),
            ("    without the input embedding (gpt-oss's count)", t.active_without_input_embedding, "params"),
            ("    without any embedding or unembedding", t.active_without_embeddings, "params"),
        ]
    out += [
        ("weight matrices", t.matrices, "count"),
        ("forward matmul FLOPs per token", t.flops_per_token, "flops"),
    ]
    if t.views is not None and t.views["executed"] != t.views["useful"]:
        out += [
            ("  with attention executed dense (full square)", t.view("executed"), "flops"),
            ("  with attention as a causal kernel computes it (useful)", t.view("useful"), "flops"),
        ]
    out += [
        (f"forward matmul FLOPs ({t.tokens:,} tokens)", t.forward_flops, "flops"),
        (f"elementwise FLOPs, not in the above ({t.tokens:,} tokens)", t.elementwise_flops, "flops"),
        (f"training step FLOPs (3 × forward{' + recompute' if t.recompute != 'none' else ''})", t.train_flops, "flops"),
    ]
    return out


def count_doc(t: Tally, per_layer: bool = False, human: bool = True) -> Document:
    """Headline, one row per component, then the totals; where the source leaves active parameters and FLOPs open
    (``Tally.needs``), the parameters alone, and what the rest needs."""
    flops = not t.needs
    head = ["component"] + (["layers"] if per_layer else []) + ["shape", "count", "params", "share"]
    if t.moe and flops:
        head.append("active")
    if flops:
        head += ["fwd FLOPs/token", "elementwise/token"]
    body = []
    total = t.params  # once: a sum over every row
    for r in component_rows(t, per_layer):
        if not flops and not (r.params or r.tied):
            continue
        cells = [r.name] + ([layers_text(r.layers)] if per_layer else [])
        params = "tied to embed.weight" if r.tied else figure(r.params, human) if r.params else ""
        share = f"{100 * r.params / total:.2f}%" if r.params and total else ""
        cells += [shape_text(r), f"×{r.count:,}" if r.count > 1 else "", params, share]
        if t.moe and flops:
            cells.append(exact(r.active) if r.active and r.active != r.params else "")
        if flops:
            cells += [exact(r.flops) if r.flops else "", exact(r.elementwise) if r.elementwise else ""]
        body.append(cells)
    lines = [line for line in total_lines(t) if flops or line[2] != "flops"]
    totals = [[label, figure(v, human, kind) if kind != "count" else exact(v)] for label, v, kind in lines]
    title, note = headline(t)
    return Document(
        title,
        [*t.needs, note, *t.notes] if t.needs else [note, *t.notes],
        [Section(head, body, left=3 if per_layer else 2), Section(["total", "value"], totals, show_head=False)],
    )


def adapters_record(found) -> dict[str, Any]:
    """The adapters ``count --lora`` adds (analysis/adapters.py): each adapted module name in each run of layers, the
    modules trained whole, and the trainable parameters."""
    tune = found.tune
    return {
        "lora": tune.lora,
        "lora_targets": ",".join(tune.targets),
        "dora": tune.dora,
        "trainable_params": found.trainable,
        "adapter_params": found.lora_params,
        "modules": [
            {
                "module": a.module,
                "component": a.component,
                "layers": list(a.layers) if a.layers else None,
                "d_in": a.d_in,
                "d_out": a.d_out,
                "instances": a.instances,
                "rank": a.rank,
                "params": a.params,
                "magnitude": a.magnitude,
            }
            for a in found.adapted
        ],
        "saved": [{"module": m, "params": n} for m, n in found.saved],
        "notes": list(found.notes),
    }


def adapters_doc(found, human: bool = True) -> Document:
    """One row per adapted module name in a run of layers, then the modules trained whole and the total."""
    tune = found.tune
    body = [
        [
            a.module,
            a.component,
            layers_text(a.layers) if a.layers else "",
            f"{a.d_in:,} → {a.d_out:,}",
            f"×{a.instances:,}",
            str(a.rank),
            figure(a.params + a.magnitude, human),
        ]
        for a in found.adapted
    ]
    body += [[m, "(trained whole)", "", "", "", "", figure(n, human)] for m, n in found.saved]
    title = f"LoRA rank {tune.lora} on {', '.join(tune.targets)}" + (" with DoRA" if tune.dora else "")
    return Document(
        title,
        ["each module A (r × in) and B (out × r): r·(in + out), + out with DoRA; as peft builds them", *found.notes],
        [
            Section(["module", "component", "layers", "in → out", "count", "rank", "params"], body, left=3),
            Section(["total", "value"], [["trainable parameters", figure(found.trainable, human)]], show_head=False),
        ],
    )


CSV_FIELDS = [
    "convention",
    "seq_len",
    "component",
    "part",
    "layers",
    "shape",
    "count",
    "params",
    "active_params",
    "matrices",
    "forward_flops_per_token",
    "elementwise_flops_per_token",
]


def count_csv(t: Tally, per_layer: bool = False) -> str:
    """One row per component and a final ``total`` row; integers only (empty where the source leaves a figure
    open: Tally.needs)."""
    rows = [
        dict(
            convention=t.convention.name,
            seq_len=t.seq_len,
            component=r.name,
            part=r.part,
            layers=layers_text(r.layers),
            shape="x".join(map(str, r.shape)),
            count=r.count,
            params=r.params,
            active_params=r.active,
            matrices=r.matrices,
            forward_flops_per_token=plain(r.flops),
            elementwise_flops_per_token=plain(r.elementwise),
        )
        for r in component_rows(t, per_layer)
    ]
    rows.append(
        dict(
            convention=t.convention.name,
            seq_len=t.seq_len,
            component="total",
            params=t.params,
            active_params=t.active,
            matrices=t.matrices,
            forward_flops_per_token=plain(t.flops_per_token),
            elementwise_flops_per_token=plain(t.elementwise_per_token),
        )
    )
    if t.needs:
        rows = [{**row, **dict.fromkeys(OPEN)} for row in rows]
    return to_csv(rows, CSV_FIELDS)


# --- count: a checkpoint --------------------------------------------------------------------------


def _bits(n_bytes: int, params: int) -> str:
    return f"{8 * n_bytes / params:.2f}" if params else ""


def _storage(c) -> str:
    """How a component is stored: one label, or each with its share of the component's parameters."""
    if len(c.storage) <= 1:
        return next(iter(c.storage), "")

    def pct(v: int) -> str:
        share = 100 * v / c.params if c.params else 0
        return "<0.1%" if 0 < share < 0.1 else ">99.9%" if 99.9 < share < 100 else f"{share:.1f}%"

    return ", ".join(f"{k} {pct(v)}" for k, v in sorted(c.storage.items(), key=lambda kv: -kv[1]))


def checkpoint_headline(r) -> tuple[str, list[str]]:
    ck = r.checkpoint
    files = f"{len(ck.files)} file{'s' if len(ck.files) != 1 else ''}"
    title = f"{ck.label} · {ck.format} checkpoint · {files} · {len(ck.tensors):,} tensors · headers only"
    notes = [
        f"read {ck.header_bytes:,} header bytes of {ck.header_bytes + ck.data_bytes:,}; no tensor data"
        if ck.header_bytes
        else f"{ck.data_bytes:,} bytes of tensor data, none of it read"
    ]
    if ck.config_path:
        notes.append(f"config: {ck.config_path}" + (f" ({r.model})" if r.model and r.compared is not None else ""))
    if ck.quantization:
        q = ck.quantization
        notes.append(
            "quantization_config: "
            + ", ".join(
                f"{k} {q[k]}" for k in ("quant_method", "bits", "group_size", "quant_algo", "fmt", "weight_block_size") if k in q
            )
        )
    for key in ("general.architecture", "general.name", "general.file_type", "split.count"):
        if key in ck.metadata:
            notes.append(f"{key}: {ck.metadata[key]}")
    return title, notes + list(r.notes)


def checkpoint_doc(r, human: bool = True) -> Document:
    """Stored tensors by component (logical parameters, bytes, how stored), the decoding tensors apart, and
    the comparison with ffncalc's count of the config beside them."""
    title, notes = checkpoint_headline(r)
    total = r.params
    rows = []
    for c in r.components:
        share = f"{100 * c.params / total:.2f}%" if total and c.group != "buffer" and c.params else ""
        rows.append(
            [
                c.name,
                c.group,
                f"{c.tensors:,}",
                figure(c.params, human),
                share,
                _figure(c.bytes, "bytes", human),
                _bits(c.bytes, c.params),
                _storage(c),
            ]
        )
    sections = [
        Section(["component", "part", "tensors", "params", "share", "bytes", "bits/param", "stored as"], rows, left=2, text_last=True)
    ]
    decoding = [[c.name, role, f"{n:,}", _figure(b, "bytes", human)] for c in r.components for role, (n, b) in c.decoding.items()]
    if decoding:
        sections.append(Section(["component", "decodes it (not parameters)", "tensors", "bytes"], decoding, left=2))
    footer = []
    if r.compared is not None:
        cmp_rows = [
            [
                c.component,
                exact(c.stored),
                exact(c.ours),
                f"{c.stored - c.ours:+,}" if not c.ok else "",
                "✓" if c.ok or c.explained else "✗",
                c.why,
            ]
            for c in r.compared
        ]
        stored, ours = sum(c.stored for c in r.compared), sum(c.ours for c in r.compared)
        cmp_rows.append(
            [
                "total",
                exact(stored),
                exact(ours),
                f"{stored - ours:+,}" if stored != ours else "",
                "✓" if not r.unexplained else "✗",
                "",
            ]
        )
        sections.append(Section(["component", "checkpoint", "ffncalc", "difference", "", "why"], cmp_rows, left=1, text_last=True))
        differ = [c for c in r.compared if not c.ok]
        bad = r.unexplained
        if bad:
            footer.append(f"✗ {len(bad)} difference(s) unexplained: " + ", ".join(c.component for c in bad))
        elif differ:
            footer.append(
                f"✓ the checkpoint matches ffncalc's count of the config but for {len(differ)} difference(s), each explained above"
            )
        else:
            footer.append(f"✓ all {len(r.compared)} components agree with ffncalc's count of the config")
    totals = [
        ["parameters (logical)", figure(r.params, human)],
        ["  their bytes", _figure(r.param_bytes, "bytes", human)],
        ["  bits per parameter", _bits(r.param_bytes, r.params)],
    ]
    if r.decoding_bytes:
        totals.append(["scales, zero-points, indices (not parameters)", _figure(r.decoding_bytes, "bytes", human)])
    if r.buffer_elements:
        totals.append(["buffers (not parameters), elements", exact(r.buffer_elements)])
    if r.ffncalc_params is not None:
        totals.append(["ffncalc's count of the config", figure(r.ffncalc_params, human)])
    sections.append(Section(["total", "value"], totals, show_head=False))
    return Document(title, notes, sections, footer)


def checkpoint_records(r) -> dict[str, Any]:
    ck = r.checkpoint
    return {
        "checkpoint": ck.label,
        "format": ck.format,
        "files": list(ck.files),
        "tensors": len(ck.tensors),
        "header_bytes_read": ck.header_bytes,
        "data_bytes": ck.data_bytes,
        "config": ck.config_path,
        "quantization_config": ck.quantization,
        "metadata": {k: v if isinstance(v, (int, float, str, bool)) else repr(v) for k, v in ck.metadata.items()},
        "notes": list(r.notes),
        "missing": [{"tensor": n, "file": f} for n, f in ck.missing],
        "components": [
            {
                "component": c.name,
                "part": c.group,
                "tensors": c.tensors,
                "params": c.params,
                "bytes": c.bytes,
                "storage": dict(c.storage),
                "dtype_bytes": dict(c.dtypes),
                "decoding": {role: {"tensors": n, "bytes": b} for role, (n, b) in c.decoding.items()},
            }
            for c in r.components
        ],
        "compared": None
        if r.compared is None
        else {
            "model": r.model,
            "ffncalc_params": r.ffncalc_params,
            "unexplained": len(r.unexplained),
            "components": [
                {
                    "component": c.component,
                    "checkpoint_params": c.stored,
                    "ffncalc_params": c.ours,
                    "difference": c.stored - c.ours,
                    "explained": c.ok or c.explained,
                    "why": c.why,
                }
                for c in r.compared
            ],
        },
        "totals": {
            "params": r.params,
            "param_bytes": r.param_bytes,
            "decoding_bytes": r.decoding_bytes,
            "buffer_elements": r.buffer_elements,
        },
    }


CHECKPOINT_CSV = ["component", "part", "tensors", "params", "bytes", "decoding_bytes", "storage", "ffncalc_params"]


def checkpoint_csv(r) -> str:
    """One row per component and a final ``total`` row; integers only."""
    ours = {c.component: c.ours for c in r.compared or ()}
    rows = [
        dict(
            component=c.name,
            part=c.group,
            tensors=c.tensors,
            params=c.params,
            bytes=c.bytes,
            decoding_bytes=c.decoding_bytes,
            storage="; ".join(f"{k}={v}" for k, v in c.storage.items()),
            ffncalc_params=ours.get(c.name),
        )
        for c in r.components
    ]
    rows.append(
        dict(
            component="total",
            tensors=sum(c.tensors for c in r.components),
            params=r.params,
            bytes=r.param_bytes,
            decoding_bytes=r.decoding_bytes,
            ffncalc_params=r.ffncalc_params,
        )
    )
    return to_csv(rows, CHECKPOINT_CSV)


# --- verify -------------------------------------------------------------------------------------


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
                "analytic_flops": plain(c.analytic_flops),
                "torch_flops": c.torch_flops,
                "flops_ok": c.flops_ok,
            }
            for c in report.checks
        ],
    }


def verify_doc(report: Report) -> Document:
    """Component | analytic | torch | ✓/✗, for parameters and for forward FLOPs."""

    def mark(ok: bool) -> str:
        return "✓" if ok else "✗"

    show_layers = len({c.layers for c in report.checks if c.layers}) > 1
    head = ["component"] + (["layers"] if show_layers else []) + ["params", "torch params", "", "FLOPs", "torch FLOPs", ""]
    rows = []
    for c in report.checks:
        rows.append(
            [c.component]
            + ([layers_text(c.layers)] if show_layers else [])
            + [
                exact(c.analytic_params),
                exact(c.torch_params),
                mark(c.params_ok),
                exact(c.analytic_flops),
                exact(c.torch_flops),
                mark(c.flops_ok),
            ]
        )
    sums = [sum(getattr(c, f) for c in report.checks) for f in ("analytic_params", "torch_params", "analytic_flops", "torch_flops")]
    rows.append(
        ["total"]
        + ([""] if show_layers else [])
        + [exact(sums[0]), exact(sums[1]), mark(sums[0] == sums[1]), exact(sums[2]), exact(sums[3]), mark(sums[2] == sums[3])]
    )
    failures = report.failures
    if failures:
        verdict = f"✗ {len(failures)} component(s) differ: " + ", ".join(
            c.component + (f" [{layers_text(c.layers)}]" if c.layers else "") for c in failures
        )
    else:
        verdict = f"✓ all {len(report.checks)} components agree"
    title = (
        f"{report.model} · convention {report.convention} · seq_len {report.seq_len:,} · batch 1 · "
        "analytic vs torch (meta device, FlopCounterMode)"
    )
    return Document(title, list(report.notes), [Section(head, rows, left=2 if show_layers else 1)], [verdict])


def refused_doc(refused: list[tuple[str, str]]) -> Document:
    """The presets verify could not run, each with the reason."""
    return Document(
        f"{len(refused)} preset(s) not verified",
        [],
        [Section(["model", "why"], [[m, e] for m, e in refused], text_last=True)],
        [f"✗ not verified: {', '.join(m for m, _ in refused)}"],
    )


def verify_csv(reports: list[Report]) -> str:
    rows = [
        {"model": r.model, "convention": r.convention, "seq_len": r.seq_len, **c}
        for r in reports
        for c in verify_records(r)["components"]
    ]
    return to_csv(rows)


def hf_records(report) -> dict[str, Any]:
    return {
        "model": report.model,
        "transformers": report.version,
        "model_class": report.model_class,
        "ok": report.ok,
        "notes": list(report.notes),
        "components": [
            {
                "component": c.component,
                "layers": list(c.layers) if c.layers else None,
                "params": c.ours,
                "transformers_params": c.transformers,
                "ok": c.ok,
            }
            for c in report.checks
        ],
    }


def hf_doc(report) -> Document:
    """Component | ffncalc | transformers | ✓/✗: parameters per component against the transformers class."""
    show_layers = len({c.layers for c in report.checks if c.layers}) > 1
    head = ["component"] + (["layers"] if show_layers else []) + ["params", "transformers", ""]
    rows = [
        [c.component] + ([layers_text(c.layers)] if show_layers else []) + [exact(c.ours), exact(c.transformers), "✓" if c.ok else "✗"]
        for c in report.checks
    ]
    ours, theirs = sum(c.ours for c in report.checks), sum(c.transformers for c in report.checks)
    rows.append(["total"] + ([""] if show_layers else []) + [exact(ours), exact(theirs), "✓" if ours == theirs else "✗"])
    failures = report.failures
    verdict = (
        (
            f"✗ {len(failures)} component(s) differ: "
            + ", ".join(c.component + (f" [{layers_text(c.layers)}]" if c.layers else "") for c in failures)
        )
        if failures
        else f"✓ all {len(report.checks)} components agree with {report.model_class}"
    )
    title = f"{report.model} · ffncalc vs transformers {report.version} {report.model_class} (meta device)"
    return Document(title, list(report.notes), [Section(head, rows, left=2 if show_layers else 1)], [verdict])


def saved_doc(model: str, model_type: str, runs) -> Document:
    """Component | planned | saved by transformers, per run: the bytes a training forward keeps for backward."""
    sections = []
    for r in runs:
        head = [f"batch {r.batch} × {r.seq_len} tokens, {r.dtype}", "planned", "transformers", ""]
        rows = [[k, exact(v), exact(r.saved[k]), "✓" if v == r.saved[k] else "✗"] for k, v in r.planned.items()]
        total, theirs = sum(r.planned.values()), sum(r.saved.values())
        rows.append(["total", exact(total), exact(theirs), "✓" if total == theirs else "✗"])
        sections.append(Section(head, rows))
    bad = [r for r in runs if not r.ok]
    verdict = (
        f"✗ {len(bad)} of {len(runs)} runs differ" if bad else f"✓ every component of {len(runs)} runs equals what transformers saves"
    )
    notes = [
        "bytes autograd saves for backward in one training forward (eager attention, train mode, the loss on every "
        "position), the distinct storages saved_tensors_hooks packs, parameters aside, on real tensors on the CPU"
    ]
    return Document(f"{model} · what training keeps, ffncalc vs transformers' {model_type} class", notes, sections, [verdict])


def kept_doc(model: str, seq_len: int, checks) -> Document:
    """Layers | block | planned | saved: each block's kept activations against its reference module's."""
    head = ["layers", "block", "planned", "saved", ""]
    rows = [[layers_text(c.layers), f"{c.slot}: {c.kind}", exact(c.planned), exact(c.saved), "✓" if c.ok else "✗"] for c in checks]
    bad = [c for c in checks if not c.ok]
    verdict = (
        f"✗ {len(bad)} of {len(checks)} blocks differ: " + ", ".join(sorted({c.kind for c in bad}))
        if bad
        else f"✓ every block's kept activations equal what its module saves ({len(checks)} blocks)"
    )
    notes = [
        f"bytes one sequence of {seq_len:,} tokens keeps for backward in each block, bf16: planned (kept_elements × 2 a "
        "token, and the attention kernel's log-sum-exp) against what autograd saves when the block's reference module "
        "runs as fused kernels run it (torch's flash kernel, rotary positions and norms recomputed), on the CPU"
    ]
    return Document(f"{model} · kept activations, planned vs saved", notes, [Section(head, rows, left=2)], [verdict])


def hf_csv(report) -> str:
    return to_csv([{"model": report.model, **c} for c in hf_records(report)["components"]])


# --- bench --------------------------------------------------------------------------------------


def bench_doc(model: str, results) -> Document:
    """Timed blocks: median and spread, tokens/s, achieved TFLOP/s and their share of the measured peak."""
    first = results[0]
    head = ["block", "variant", "median ms", "min–max ms", "tokens/s", "GFLOP/run", "TFLOP/s", "of matmul"]
    rows = [
        [
            r.block + (" fwd+bwd" if r.backward else ""),
            r.variant,
            f"{r.median_ms:.3f}",
            f"{r.min_ms:.3f}–{r.max_ms:.3f}",
            f"{r.tokens_per_s:,.0f}",
            f"{r.flops / 1e9:,.2f}",
            f"{r.tflops:.3f}",
            f"{100 * r.share_of_peak:.1f}%",
        ]
        for r in results
    ]
    sheet = f"; datasheet {first.datasheet}: {first.datasheet_tflops} TFLOP/s {first.dtype}" if first.datasheet_tflops else ""
    notes = [
        f"matmul rate measured in this run: {first.peak_tflops_measured:.3f} TFLOP/s{sheet}",
        "FLOPs: the analytic matmul FLOPs of the work timed (backward = 2 × forward)",
    ]
    if len(results) == 2 and results[0].block == results[1].block == "ffn":
        notes.append(
            f"time ratio {results[1].variant.split()[0]} / {results[0].variant.split()[0]}: "
            f"{results[1].median_ms / results[0].median_ms:.3f}"
        )
    title = f"{model} · {first.device} · {first.dtype} · {first.tokens:,} tokens ({first.tokens // first.seq_len} × {first.seq_len})"
    return Document(title, notes, [Section(head, rows, left=2)])


def collectives_doc(record: dict[str, Any]) -> list[Document]:
    """Collectives across ranks: per size the time, algorithm and bus bandwidth; each collective's fitted latency
    and bandwidth."""
    from ..analysis.linkfile import size_text

    where = f"{record['ranks']} ranks on {record['nodes']} node(s)"
    title = f"collectives · {record['device']} · {record['backend']} · {where} · {record['dtype']}"
    notes = [
        f"time: the mean of {record['repeats']} back-to-back calls after {record['warmup']} untimed, the slowest rank's "
        "(nccl-tests' method); algbw = bytes / time; busbw = algbw × nccl-tests' factor (doc/PERFORMANCE.md: "
        "all_reduce 2(n − 1)/n; all_gather, reduce_scatter, all_to_all (n − 1)/n; send_recv 1)",
        "fit: t = α + β·bytes, least squares of the relative residuals over every size shown; bandwidth = 1/β as algbw and as busbw",
    ]
    sections = []
    fits = []
    for e in record["collectives"]:
        rows = [
            [
                e["collective"],
                size_text(r["bytes"]),
                f"{r['bytes']:,}",
                f"{r['time_s'] * 1e6:,.1f}",
                f"{r['algbw_gbs']:.4g}",
                f"{r['busbw_gbs']:.4g}",
            ]
            for r in e["sizes"]
        ]
        sections.append(Section(["collective", "size", "bytes", "time µs", "algbw GB/s", "busbw GB/s"], rows, left=2))
        f = e["fit"]
        fits.append(
            [
                e["collective"],
                str(e["ranks"]),
                f"{f['latency_s'] * 1e6:,.2f}" + (" (clamped)" if f["latency_clamped"] else ""),
                f"{f['algbw_gbs']:.4g}",
                f"{f['busbw_gbs']:.4g}",
                f"{size_text(f['from_bytes'])}–{size_text(f['to_bytes'])} ({f['points']})",
            ]
        )
    sections.append(Section(["fit", "ranks", "latency µs", "algbw GB/s", "busbw GB/s", "over sizes"], fits, left=1))
    return [Document(title, notes, sections)]


def collectives_csv(record: dict[str, Any]) -> str:
    return to_csv([{"collective": e["collective"], "ranks": e["ranks"], **r} for e in record["collectives"] for r in e["sizes"]])


def parallel_doc(record: dict[str, Any]) -> Document:
    """A block split across ranks: compute and collectives apart, the plans' figure beside them, and the split
    output against the whole module's."""
    r = record
    tensor = r["parallel"] == "tensor"
    shape = f"{r['tokens']:,} tokens ({r['tokens'] // r['seq_len']} × {r['seq_len']})" + ("" if tensor else " a rank")
    split = f"{'tp' if tensor else 'ep'} {r['ranks']}"
    title = f"{r['model']} · {r['block']} · {split} · {r['device']} · {r['dtype']} · {shape}"
    predicted = r["predicted_comm_s"]
    what = "all-reduces" if tensor else "all-to-alls"
    rows = [
        ["forward, whole", f"{r['total_s'] * 1e3:.3f}", ""],
        ["compute (the rest)", f"{r['compute_s'] * 1e3:.3f}", f"{r['compute_tflops']:.3f} TFLOP/s a rank"],
        [
            f"{what} ({r['collectives']})",
            f"{r['comm_s'] * 1e3:.3f}",
            f"{r['comm_bytes']:,} bytes " + ("each" if tensor else "a dispatch"),
        ],
        ["waiting for the slowest rank", f"{r['wait_s'] * 1e3:.3f}", f"a barrier before each of the {what}"],
        [f"{what} as planned", f"{predicted * 1e3:.3f}" if predicted is not None else "—", r["link"]],
    ]
    how = (
        "Megatron-style (Shoeybi et al. 2019 §3): q, k, v and up, gate split by outputs, o and down by inputs, an "
        "all-reduce after each sublayer"
        if tensor
        else "routed experts split over the ranks, each rank its own tokens: a dispatch (the counts, the expert ids, "
        "the rows) and a combine by all-to-alls (DeepSeek-V3 §3.4), the plans charging the rows' two"
    )
    notes = [
        f"{r['variant']}: {how} (a barrier before each, timed apart); compute = the forward less both; every figure "
        f"the median of {r['repeats']} forwards after {r['warmup']} untimed, the slowest rank's",
        f"output against the whole module's on rank 0: max |difference| {r['max_abs_error']:.3g} "
        f"(max |output| {r['max_abs_output']:.3g})",
    ]
    verdict = (
        f"✓ the split output matches the whole module's (within {r['tolerance']:g} of the largest output)"
        if r["matches"]
        else f"✗ the split output differs from the whole module's by more than {r['tolerance']:g} of the largest output"
    )
    return Document(title, notes, [Section(["part", "ms", ""], rows, left=1, text_last=True)], [verdict])


# --- compare ------------------------------------------------------------------------------------

CAPACITY = (
    "Capacity: the dense block's hidden features are one linear projection of x, so their rank is at "
    "most min(d_model, d_ff); the gated block multiplies two projections, a linear map of the degree-2 "
    "features x⊗x (the kernel view), so its rank can reach d_ff (at most d_model(d_model+1)/2)."
)


def comparison_records(c, bench_results=None) -> dict[str, Any]:
    def side(s) -> dict[str, Any]:
        return {
            "kind": s.kind,
            "activation": s.activation,
            "variant": s.variant,
            "d_ff": s.d_ff,
            "bias": s.bias,
            "params_per_layer": s.params,
            "params_all_ffn_layers": s.params * c.ffn_layers,
            "model_params": s.model_params,
            "forward_flops_per_token": s.flops,
            "train_flops_per_token": s.train_flops,
            "model_forward_flops_per_token": s.model_flops,
            "activation_elements_per_token": s.activations,
            "rank_linear": s.rank_linear,
            "rank_degree2": s.rank_kernel,
            "reference_log_perplexity": list(s.reference) if s.reference else None,
        }

    out = {
        "model": c.model,
        "d_model": c.d_model,
        "ffn_layers": c.ffn_layers,
        "match": c.match,
        "multiple_of": c.multiple_of,
        "moe": c.moe,
        "residual": c.residual,
        "exact": c.exact,
        "residual_percent": 100 * c.residual / getattr(c.source, c.match),
        "source": side(c.source),
        "target": side(c.target),
        "capacity": CAPACITY,
    }
    if c.source.reference:
        from ..analysis.compare import SHAZEER_SOURCE

        out["reference_source"] = SHAZEER_SOURCE
    if bench_results:
        out["bench"] = [r.record() for r in bench_results]
    return out


def comparison_doc(c, bench_results=None, human: bool = True) -> Document:
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
        rows.append(["params, whole model", figure(a.model_params, human), figure(b.model_params, human)])
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
        rows += [
            ["measured ms (median)", f"{ra.median_ms:.3f}", f"{rb.median_ms:.3f}"],
            ["achieved TFLOP/s", f"{ra.tflops:.3f}", f"{rb.tflops:.3f}"],
            ["share of the measured matmul rate", f"{100 * ra.share_of_peak:.1f}%", f"{100 * rb.share_of_peak:.1f}%"],
        ]
    pct = 100 * c.residual / getattr(c.source, c.match)
    what = "parameters" if c.match == "params" else "forward FLOPs"
    where = f"{c.model} · " if c.model else ""
    title = f"{where}d_model {c.d_model:,} · matching {what}" + (f" · d_ff a multiple of {c.multiple_of}" if c.multiple_of > 1 else "")
    notes = [f"residual: {c.residual:+,} {what} per layer ({pct:+.4f}%)" + (" — exact" if c.exact else " — nearest width")]
    footer = []
    if c.moe:
        footer.append(f"compared: {c.moe}")
    footer.append(CAPACITY)
    if a.reference or b.reference:
        from ..analysis.compare import SHAZEER_SOURCE

        footer.append(f"reference: {SHAZEER_SOURCE}")
    if bench_results:
        ra, rb = bench_results
        footer.append(
            f"timed on {ra.device}, {ra.dtype}, {ra.tokens:,} tokens: time ratio "
            f"{b.variant} / {a.variant} = {rb.median_ms / ra.median_ms:.3f}"
        )
    return Document(title, notes, [Section(["", a.kind, b.kind], rows)], footer)


def comparison_csv(c, bench_results=None) -> str:
    """One row per side, every figure."""
    rec = comparison_records(c, bench_results)
    return to_csv(
        [
            {"side": name, "model": c.model or "", "d_model": c.d_model, "match": c.match, "residual": c.residual, **rec[name]}
            for name in ("source", "target")
        ]
    )


SWEEP_HEAD = [
    "d_ff/d_model",
    "source d_ff",
    "target d_ff",
    "source params",
    "target params",
    "residual",
    "residual %",
    "rank in x",
    "rank over x⊗x",
]


def sweep_doc(comparisons) -> Document:
    c0 = comparisons[0]
    rows = []
    for c in comparisons:
        pct = 100 * c.residual / getattr(c.source, c.match)
        rows.append(
            [
                f"{c.source.d_ff / c.d_model:.3f}",
                exact(c.source.d_ff),
                exact(c.target.d_ff),
                exact(getattr(c.source, c.match)),
                exact(getattr(c.target, c.match)),
                f"{c.residual:+,}",
                f"{pct:+.4f}%",
                f"{c.source.rank_linear:,} / {c.target.rank_linear:,}",
                f"{c.source.rank_kernel:,} / {c.target.rank_kernel:,}",
            ]
        )
    title = f"{c0.source.variant} → {c0.target.variant} · d_model {c0.d_model:,} · matching {c0.match}"
    return Document(title, [], [Section(SWEEP_HEAD, rows, left=0)], [CAPACITY])


def sweep_csv(comparisons) -> str:
    return to_csv(
        [
            dict(
                d_model=c.d_model,
                match=c.match,
                source_kind=c.source.kind,
                source_d_ff=c.source.d_ff,
                target_kind=c.target.kind,
                target_d_ff=c.target.d_ff,
                source_value=getattr(c.source, c.match),
                target_value=getattr(c.target, c.match),
                residual=c.residual,
            )
            for c in comparisons
        ]
    )


# --- train and infer ----------------------------------------------------------------------------


def human_bytes(n: float) -> str:
    for size, suffix in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if abs(n) >= size:
            return f"{n / size:.2f} {suffix}"
    return f"{n:.0f} B"


def _figure(value, unit: str, human: bool = True) -> str:
    """Exact integers with separators and a short form; other figures to four significant digits."""
    if unit.startswith("bytes"):
        text = f"{value:,}" if isinstance(value, int) else f"{value:,.0f}"
        return text + (f" ({human_bytes(value)})" if human else "")
    if isinstance(value, int):
        return figure(value, human, "flops" if "FLOP" in unit or unit == "tokens" else "params")
    if abs(value) >= 1e7:
        return human_flops(round(value)) if "FLOP" in unit or unit == "tokens" else human_params(round(value))
    return f"{value:,.1f}" if abs(value) >= 1000 else f"{value:.4g}"


def figures_records(result) -> dict[str, Any]:
    """A planning result as JSON: its inputs and every figure under its stable id."""
    return result.record()


def figures_doc(result, human: bool = True) -> Document:
    rows = [[f.label, _figure(f.value, f.unit, human), f.unit] for f in result.figures]
    return Document(result.title, result.notes, [Section(["", "value", "unit"], rows)])


def figures_csv(result) -> str:
    return to_csv([{"id": f.id, "label": f.label, "value": f.value, "unit": f.unit} for f in result.figures])


# --- multi-model tables -------------------------------------------------------------------------

SUMMARY_HEAD = {
    "model": "model",
    "params": "params",
    "active_params": "active",
    "embedding_params": "embedding",
    "attention_params": "attention",
    "attention_share": "attn %",
    "ffn_params": "FFN",
    "ffn_share": "FFN %",
    "forward_flops_per_token": "fwd FLOPs/token",
    "train_flops_per_token": "train FLOPs/token",
    "d_model": "d_model",
    "n_layers": "layers",
    "heads": "heads/KV",
    "ffn": "FFN kind",
    "d_ff": "d_ff",
    "seq_len": "seq_len",
    "convention": "convention",
}


def summary_doc(rows: list[dict[str, Any]], columns: list[str], human: bool = True) -> Document:
    def cell(key: str, v: Any) -> str:
        if isinstance(v, list):  # a shape that differs between layers: [layers, value] pairs
            return " + ".join(f"{n}× {cell(key, value)}" for n, value in v)
        if v is None:
            return "—"
        if key.endswith("_share"):
            return f"{v / 100:.2f}%"
        if key == "params" or key.endswith("_params"):
            return human_params(v) if human else exact(v)
        if key.endswith("_per_token"):
            return human_flops(v) if human else exact(v)
        return exact(v) if isinstance(v, int) else str(v)

    conventions = sorted({r["convention"] for r in rows})
    seqs = sorted({r["seq_len"] for r in rows})
    if len(seqs) > 1 and "seq_len" not in columns:  # rows at different contexts: show each one's
        columns = [*columns[:1], "seq_len", *columns[1:]]
    body = [[cell(c, r[c]) for c in columns] for r in rows]
    at = (
        f"seq_len {seqs[0]:,}"
        if len(seqs) == 1
        else "each model's own context (the seq_len column; --seq-len N puts every row at N, so they compare)"
    )
    note = f"convention {', '.join(conventions)} · FLOPs per token at {at} · shares of all parameters"
    return Document(
        f"{len(rows)} models", [note], [Section([SUMMARY_HEAD[c] for c in columns], body, left=1 if columns[0] == "model" else 0)]
    )


# --- lists --------------------------------------------------------------------------------------


def list_doc(title: str, records: list[dict[str, Any]], columns: list[str], left: int = 1) -> Document:
    rows = [[_cell(r[c]) for c in columns] for r in records]
    return Document(title, [], [Section(columns, rows, left=left)])


def _cell(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return exact(v)
    if isinstance(v, (list, tuple)):
        return ", ".join(map(str, v))
    return "" if v is None else str(v)


def console(width: int | None = None) -> Console:
    """A console per call; off a terminal, wide enough that tables keep their columns."""
    from rich.console import Console

    return Console(width=width, soft_wrap=False) if width else Console(soft_wrap=False)
