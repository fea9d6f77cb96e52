"""The options every command shares, added by one decorator, and the one place output is written."""

from __future__ import annotations

import enum
import functools
import inspect
import os
import sys
from dataclasses import dataclass
from typing import Callable, get_type_hints

import typer

from ..output.render import FORMATS

Format = enum.Enum("Format", {f: f for f in FORMATS}, type=str)


@dataclass(frozen=True)
class Output:
    """How a command's result is written: the format, and whether figures carry their short forms."""

    format: str = "table"
    human: bool = True

    def show(self, *, doc: Callable, json: Callable, csv: Callable) -> None:
        """Documents for people (table, markdown, latex), records for programs (json, csv). Each argument is a
        thunk, called only for its format."""
        from ..output import render

        if self.format == "json":
            emit(render.to_json(json()))
        elif self.format == "csv":
            emit(csv())
        else:
            from ..output import sheet

            docs = doc()
            docs = docs if isinstance(docs, list) else [docs]
            if self.format == "markdown":
                emit("\n".join(sheet.to_markdown(d) for d in docs))
            elif self.format == "latex":
                emit("\n".join(sheet.to_latex(d) for d in docs))
            else:
                for d in docs:
                    print_rich(sheet.to_rich(d))


def output_options(exact: bool = True):
    """Decorator: add --format (and, with ``exact``, --exact) to a command, passing them as ``output: Output``."""
    def decorate(fn):
        hints = get_type_hints(fn)
        params = [p.replace(annotation=hints.get(p.name, p.annotation))
                  for p in inspect.signature(fn).parameters.values() if p.name != "output"]
        params.append(inspect.Parameter("fmt", inspect.Parameter.KEYWORD_ONLY, annotation=Format,
                                        default=typer.Option("table", "--format", "-f", help="Output format.")))
        if exact:
            params.append(inspect.Parameter(
                "exact_figures", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
                default=typer.Option(False, "--exact", help="Full integers only, without the short forms (175.2B).")))

        @functools.wraps(fn)
        def command(*args, fmt, exact_figures: bool = False, **kw):
            return fn(*args, output=Output(fmt.value, not exact_figures), **kw)

        command.__signature__ = inspect.Signature(params)
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command
    return decorate


def emit(text: str) -> None:
    sys.stdout.write(text)


def print_rich(renderable) -> None:
    """Print at the terminal's width; a table too wide for it is printed at its natural width and the
    terminal wraps the lines, so no figure is ever cropped or cut short."""
    from rich.measure import Measurement
    from rich.table import Table

    from ..output.render import console as make_console

    width = None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "0") or 0) or 200
    console = make_console(width)
    parts = getattr(renderable, "renderables", [renderable])
    options = console.options.update(max_width=10_000)
    natural = max((Measurement.get(console, options, p).maximum for p in parts if isinstance(p, Table)), default=0)
    if natural > console.width:
        console = make_console(natural)
    console.print(renderable)
