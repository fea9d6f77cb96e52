"""What the library's questions return. Each result has its figures as attributes, ``to_dict()`` (the JSON the
command's ``--format json`` prints, equal to it), ``to_json()``, ``to_csv()``, ``to_markdown()``, and renders in a
notebook as the command's table (``_repr_html_``, ``_repr_markdown_``). The records and documents come from
``output/render.py``, the one place each command's output is built."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from ..analysis.figures import Figure
from ..output import render, sheet
from ..output.schemas import stamp

if TYPE_CHECKING:
    from ..analysis.compare import Comparison as Compared
    from ..analysis.count import Tally
    from ..analysis.figures import Figures

T = TypeVar("T")


class Result:
    """What every result shares: its record (JSON-ready), its documents (tables) and its CSV."""

    def record(self) -> Any:
        raise NotImplementedError

    def documents(self, human: bool = True) -> list[sheet.Document]:
        raise NotImplementedError

    def to_csv(self) -> str:
        raise NotImplementedError

    def to_json(self) -> str:
        """The text ``--format json`` prints."""
        return render.to_json(self.record())

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``--format json`` prints, read back: plain dicts, lists, integers, floats and strings."""
        data: dict[str, Any] = json.loads(self.to_json())
        return data

    def to_markdown(self, human: bool = True) -> str:
        """The table ``--format markdown`` prints (``human`` off: exact integers only, as ``--exact``)."""
        return "\n".join(sheet.to_markdown(d) for d in self.documents(human))

    def to_latex(self, human: bool = True) -> str:
        """The table ``--format latex`` prints."""
        return "\n".join(sheet.to_latex(d) for d in self.documents(human))

    def to_html(self, human: bool = True) -> str:
        return "".join(sheet.to_html(d) for d in self.documents(human))

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_html_(self) -> str:
        return self.to_html()

    def to_pandas(self) -> Any:
        """The CSV's rows as a pandas DataFrame (needs pandas)."""
        import io

        try:
            import pandas
        except ImportError as exc:
            from ..errors import MissingDependency

            raise MissingDependency(f"to_pandas needs pandas ({exc}); install it: pip install pandas") from None
        return pandas.read_csv(io.StringIO(self.to_csv()))


class _Total(Generic[T]):
    """An attribute read from a count's totals, by the key its JSON gives it."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = name

    @overload
    def __get__(self, obj: None, owner: type) -> _Total[T]: ...
    @overload
    def __get__(self, obj: Count, owner: type) -> T: ...
    def __get__(self, obj: Count | None, owner: type) -> _Total[T] | T:
        if obj is None:
            return self
        value: T = obj.totals[self.key]
        return value


@dataclass(frozen=True)
class Component:
    """One row of a count: a tensor or an operation, all its instances (``count``) across ``layers``."""

    name: str
    part: str
    layers: tuple[int, int] | None
    shape: tuple[int, ...]
    count: int
    params: int
    active_params: int
    matrices: int
    forward_flops_per_token: int | float
    elementwise_flops_per_token: int
    tied: bool


class Count(Result):
    """``ffncalc.count``: parameters and FLOPs of every component, and the totals."""

    params: _Total[int] = _Total()
    embedding_params: _Total[int] = _Total()
    non_embedding_params: _Total[int] = _Total()
    active_params: _Total[int] = _Total()
    mtp_params: _Total[int] = _Total()
    mtp_params_with_copies: _Total[int] = _Total()
    active_params_without_input_embedding: _Total[int] = _Total()
    active_non_embedding_params: _Total[int] = _Total()
    matrices: _Total[int] = _Total()
    forward_flops_per_token: _Total["int | float"] = _Total()
    elementwise_flops_per_token: _Total[int] = _Total()
    forward_flops: _Total[int] = _Total()
    elementwise_flops: _Total[int] = _Total()
    recompute_flops: _Total[int] = _Total()
    train_flops: _Total[int] = _Total()

    def __init__(self, tally: Tally, per_layer: bool = False, adapters: Any = None):
        self.tally = tally
        self.per_layer = per_layer
        self.totals: dict[str, Any] = tally.totals()
        self.adapters = adapters  # with lora=R: what peft trains (analysis/adapters.py)

    @property
    def trainable_params(self) -> int | None:
        """With lora=R: the parameters peft trains (adapters, DoRA magnitudes, modules saved whole)."""
        return None if self.adapters is None else int(self.adapters.trainable)

    model = property(lambda self: self.tally.model, doc="The model's title.")
    convention = property(lambda self: self.tally.convention.name, doc="The convention's name.")
    seq_len = property(lambda self: self.tally.seq_len)
    batch = property(lambda self: self.tally.batch)
    tokens = property(lambda self: self.tally.tokens)
    recompute = property(lambda self: self.tally.recompute)
    notes = property(lambda self: list(self.tally.notes))

    @property
    def components(self) -> list[Component]:
        """Every row of the table, in model order (one block of rows per run of layers with ``per_layer``)."""
        return [
            Component(
                c["component"],
                c["part"],
                tuple(c["layers"]) if c["layers"] else None,
                tuple(c["shape"]),
                c["count"],
                c["params"],
                c["active_params"],
                c["matrices"],
                c["forward_flops_per_token"],
                c["elementwise_flops_per_token"],
                c["tied"],
            )
            for c in self.record()["components"]
        ]

    def record(self) -> dict[str, Any]:
        out = render.records(self.tally, self.per_layer)
        if self.adapters is not None:
            out["adapters"] = render.adapters_record(self.adapters)
        return stamp("count", out)

    def documents(self, human: bool = True) -> list[sheet.Document]:
        docs = [render.count_doc(self.tally, self.per_layer, human=human)]
        if self.adapters is not None:
            docs.append(render.adapters_doc(self.adapters, human))
        return docs

    def to_csv(self) -> str:
        return render.count_csv(self.tally, self.per_layer)

    def __repr__(self) -> str:
        return (
            f"Count({self.model!r}, params={self.params:,}, active_params={self.active_params:,}, "
            f"forward_flops_per_token={self.forward_flops_per_token:,}, convention={self.convention!r}, seq_len={self.seq_len:,})"
        )


class CheckpointCount(Result):
    """``ffncalc.count`` of a checkpoint: its stored tensors by component, against its config.json's count."""

    def __init__(self, measured: Any):
        self.measured = measured

    model = property(lambda self: self.measured.checkpoint.label)
    params = property(lambda self: self.measured.params, doc="Parameters the checkpoint stores.")
    param_bytes = property(lambda self: self.measured.param_bytes)

    def record(self) -> dict[str, Any]:
        return stamp("checkpoint", render.checkpoint_records(self.measured))

    def documents(self, human: bool = True) -> list[sheet.Document]:
        return [render.checkpoint_doc(self.measured, human)]

    def to_csv(self) -> str:
        return render.checkpoint_csv(self.measured)

    def __repr__(self) -> str:
        return f"CheckpointCount({self.model!r}, params={self.params:,})"


class Comparison(Result):
    """``ffncalc.compare``: a dense and a gated FFN at equal parameters (or FLOPs), ``source`` and ``target``."""

    def __init__(self, compared: Compared, bench_results: Any = None):
        self.compared = compared
        self.bench_results = bench_results

    source = property(lambda self: self.compared.source, doc="The block compared: kind, d_ff, params, flops, …")
    target = property(lambda self: self.compared.target, doc="The other kind at the solved width.")
    d_model = property(lambda self: self.compared.d_model)
    match = property(lambda self: self.compared.match)
    residual = property(lambda self: self.compared.residual, doc="Target minus source in the matched figure.")

    def record(self) -> dict[str, Any]:
        return stamp("compare", render.comparison_records(self.compared, self.bench_results))

    def documents(self, human: bool = True) -> list[sheet.Document]:
        return [render.comparison_doc(self.compared, self.bench_results, human=human)]

    def to_csv(self) -> str:
        return render.comparison_csv(self.compared, self.bench_results)

    def __repr__(self) -> str:
        s, t = self.source, self.target
        sides = f"{s.variant} d_ff={s.d_ff:,} → {t.variant} d_ff={t.d_ff:,}"
        return f"Comparison({sides}, match={self.match!r}, residual={self.residual:+,})"


class Sweep(Result):
    """``ffncalc.compare(..., sweep=…)``: one comparison per d_ff/d_model ratio."""

    def __init__(self, comparisons: list[Compared]):
        self.comparisons = comparisons

    def record(self) -> dict[str, Any]:
        return stamp("sweep", {"sweep": [render.comparison_records(c) for c in self.comparisons]})

    def documents(self, human: bool = True) -> list[sheet.Document]:
        return [render.sweep_doc(self.comparisons)]

    def to_csv(self) -> str:
        return render.sweep_csv(self.comparisons)

    def __repr__(self) -> str:
        return f"Sweep({len(self.comparisons)} ratios)"


class Plan(Result):
    """``ffncalc.train``, ``infer`` and ``fit``: keyed figures, each with its value, unit, label and source
    (``plan.figures["train_flops"].value``, or ``plan["train_flops"]``), the inputs and the notes."""

    def __init__(self, answer: Figures, kind: str):
        self.answer = answer
        self.kind = kind  # the command: train, infer or fit (its record's schema)
        self.figures: dict[str, Figure] = {f.id: f for f in answer.figures}

    title = property(lambda self: self.answer.title)
    inputs = property(lambda self: dict(self.answer.inputs))
    notes = property(lambda self: list(self.answer.notes))

    def __getitem__(self, key: str) -> Figure:
        return self.figures[key]

    def __contains__(self, key: object) -> bool:
        return key in self.figures

    def record(self) -> dict[str, Any]:
        return stamp(self.kind, render.figures_records(self.answer))

    def documents(self, human: bool = True) -> list[sheet.Document]:
        return [render.figures_doc(self.answer, human)]

    def to_csv(self) -> str:
        return render.figures_csv(self.answer)

    def __repr__(self) -> str:
        return f"Plan({self.title!r}, {len(self.figures)} figures)"


class Verification(Result):
    """``ffncalc.verify``: the analytic counts against torch (and transformers); ``ok`` when every component
    agrees. ``reports``: one per model; ``refused``: (preset, why) for those that could not be verified."""

    def __init__(self, reports: list[Any], refused: list[tuple[str, str]] | None = None, *, every: bool = False, hf: Any = None):
        self.reports = reports
        self.refused = refused or []
        self.every = every  # verify(all=True): every preset
        self.hf = hf  # verify(hf=…): the transformers report

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.reports) and not self.refused and (self.hf is None or self.hf.ok)

    def record(self) -> dict[str, Any]:
        if self.hf is not None:
            mine, theirs = render.verify_records(self.reports[0]), render.hf_records(self.hf)
            return stamp("verify-hf", {"ok": self.ok, "verify": mine, "transformers": theirs})
        if self.every:
            return stamp(
                "verify-all",
                {
                    "ok": self.ok,
                    "reports": [render.verify_records(r) for r in self.reports],
                    "refused": [{"model": m, "error": e} for m, e in self.refused],
                },
            )
        return stamp("verify", render.verify_records(self.reports[0]))

    def documents(self, human: bool = True) -> list[sheet.Document]:
        if self.hf is not None:
            return [render.verify_doc(self.reports[0]), render.hf_doc(self.hf)]
        return [render.verify_doc(r) for r in self.reports] + ([render.refused_doc(self.refused)] if self.refused else [])

    def to_csv(self) -> str:
        return render.hf_csv(self.hf) if self.hf is not None else render.verify_csv(self.reports)

    def __repr__(self) -> str:
        return f"Verification({len(self.reports)} model(s), ok={self.ok})"


@dataclass(frozen=True)
class SavedRun:
    """One training forward: what ffncalc plans (``hfsaved.saved_bytes``) and what transformers' class saved, in
    bytes per component."""

    seq_len: int
    batch: int
    dtype: str
    planned: dict[str, int]
    saved: dict[str, int]

    @property
    def ok(self) -> bool:
        return self.planned == self.saved

    def record(self) -> dict[str, Any]:
        components = [
            {"component": k, "planned": v, "saved": self.saved[k], "ok": v == self.saved[k]} for k, v in self.planned.items()
        ]
        return {"seq_len": self.seq_len, "batch": self.batch, "dtype": self.dtype, "ok": self.ok, "components": components}


class MemoryVerification(Result):
    """``ffncalc.verify(hf=…, memory=True)``: the bytes a training forward keeps for backward, planned per component,
    against the tensors the transformers class saves (``runs``: batch 1 and 2, bf16 and fp32); ``ok`` when every
    component of every run agrees."""

    def __init__(self, model: str, model_type: str, runs: list[SavedRun]):
        self.model, self.model_type, self.runs = model, model_type, runs

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.runs)

    def record(self) -> dict[str, Any]:
        return stamp("verify-memory", {"model": self.model, "ok": self.ok, "runs": [r.record() for r in self.runs]})

    def documents(self, human: bool = True) -> list[sheet.Document]:
        return [render.saved_doc(self.model, self.model_type, self.runs)]

    def to_csv(self) -> str:
        rows = [{"seq_len": r.seq_len, "batch": r.batch, "dtype": r.dtype, **c} for r in self.runs for c in r.record()["components"]]
        return sheet.to_csv(rows)

    def __repr__(self) -> str:
        return f"MemoryVerification({self.model!r}, {len(self.runs)} run(s), ok={self.ok})"


class KeptVerification(Result):
    """``ffncalc.verify(model, memory=True)``: each block's kept activations as training plans them (``checks``: the
    block kind, its layers, the planned and the saved bytes for one sequence of ``seq_len`` tokens, bf16) against
    what its reference module saves run as fused kernels run it; ``ok`` when every block agrees."""

    def __init__(self, model: str, seq_len: int, checks: list[Any]):
        self.model, self.seq_len, self.checks = model, seq_len, checks

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def record(self) -> dict[str, Any]:
        blocks = [
            {"layers": list(c.layers), "slot": c.slot, "kind": c.kind, "planned": c.planned, "saved": c.saved, "ok": c.ok}
            for c in self.checks
        ]
        return stamp("verify-kept", {"model": self.model, "seq_len": self.seq_len, "ok": self.ok, "blocks": blocks})

    def documents(self, human: bool = True) -> list[sheet.Document]:
        return [render.kept_doc(self.model, self.seq_len, self.checks)]

    def to_csv(self) -> str:
        return sheet.to_csv(self.record()["blocks"])

    def __repr__(self) -> str:
        return f"KeptVerification({self.model!r}, {len(self.checks)} block(s), ok={self.ok})"


class Bench(Result):
    """``ffncalc.bench``: each timed block's median time, tokens/s and achieved TFLOP/s (``timings``)."""

    def __init__(self, model: str, timings: list[Any]):
        self.model = model
        self.timings = timings

    def record(self) -> dict[str, Any]:
        return stamp("bench", {"model": self.model, "bench": [t.record() for t in self.timings]})

    def documents(self, human: bool = True) -> list[sheet.Document]:
        return [render.bench_doc(self.model, self.timings)]

    def to_csv(self) -> str:
        return sheet.to_csv([t.record() for t in self.timings])

    def __repr__(self) -> str:
        return f"Bench({self.model!r}, {len(self.timings)} timing(s))"


class Collectives(Result):
    """``ffncalc.links``: collectives timed across ranks (``collectives``: per size the time and the algorithm and
    bus bandwidths, and the fitted latency and bandwidth), the links file ``--links`` reads. ``body`` is None on a
    torchrun rank other than 0, which shows nothing."""

    def __init__(self, body: dict[str, Any] | None):
        self.body = body

    @property
    def collectives(self) -> list[dict[str, Any]]:
        return list(self.body["collectives"]) if self.body else []

    def record(self) -> dict[str, Any]:
        return stamp("links", self.body or {})

    def documents(self, human: bool = True) -> list[sheet.Document]:
        return render.collectives_doc(self.body) if self.body else []

    def to_csv(self) -> str:
        return render.collectives_csv(self.body) if self.body else ""

    def __repr__(self) -> str:
        return f"Collectives({len(self.collectives)} collective(s))"


class ParallelBench(Result):
    """``ffncalc.bench-tp``: a block split across ranks (tensor or expert parallel): ``total_s``, ``compute_s``, ``comm_s``,
    ``predicted_comm_s`` and the sharded output's ``max_abs_error`` against the whole module's (``matches``: within
    ``tolerance`` of its largest output). ``body`` is None on a torchrun rank other than 0."""

    def __init__(self, body: dict[str, Any] | None):
        self.body = body

    def __getattr__(self, name: str) -> Any:
        body = self.__dict__.get("body")
        if body and name in body:
            return body[name]
        raise AttributeError(name)

    def record(self) -> dict[str, Any]:
        return stamp("bench-tp", self.body or {})

    def documents(self, human: bool = True) -> list[sheet.Document]:
        return [render.parallel_doc(self.body)] if self.body else []

    def to_csv(self) -> str:
        return sheet.to_csv([self.body]) if self.body else ""

    def __repr__(self) -> str:
        return f"ParallelBench({self.body['parallel']}, {self.body['ranks']} ranks)" if self.body else "ParallelBench(another rank)"


class Table(Result):
    """``ffncalc.table``: a row per model (``rows``: every column, with its seq_len and convention), ``columns``
    the ones shown, in order."""

    def __init__(self, rows: list[dict[str, Any]], columns: list[str]):
        self.rows = rows
        self.columns = columns

    def record(self) -> dict[str, Any]:
        return stamp("table", {"models": [{c: r[c] for c in self.columns + ["seq_len", "convention"]} for r in self.rows]})

    def documents(self, human: bool = True) -> list[sheet.Document]:
        return [render.summary_doc(self.rows, self.columns, human=human)]

    def to_csv(self) -> str:
        return sheet.to_csv(self.rows, self.columns)

    def __repr__(self) -> str:
        return f"Table({len(self.rows)} model(s), {len(self.columns)} columns)"


class Presets(Result):
    """``ffncalc.presets()``: the shipped presets (``entries``: name, title, aliases, shape, parameters)."""

    def __init__(self, entries: list[dict[str, Any]]):
        self.entries = entries

    @property
    def names(self) -> list[str]:
        return [e["name"] for e in self.entries]

    def record(self) -> dict[str, Any]:
        return stamp("presets", {"presets": self.entries})

    def documents(self, human: bool = True) -> list[sheet.Document]:
        rows = [
            {
                **e,
                "name": e["name"] + (f" (alias {', '.join(e['aliases'])})" if e["aliases"] else ""),
                "params": f"{e['params']:,} ({render.human_params(e['params'])})",
            }
            for e in self.entries
        ]
        return [render.list_doc("presets", rows, ["name", "title", "n_layers", "d_model", "ffn", "params"], left=2)]

    def to_csv(self) -> str:
        return sheet.to_csv(self.entries)

    def __repr__(self) -> str:
        return f"Presets({len(self.entries)})"
