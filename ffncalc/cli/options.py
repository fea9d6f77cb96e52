"""What the commands are made of, with no command-line library imported: ``Arg`` and ``Opt`` declare a
command's parameters, ``command`` registers it (``parse.py`` reads a well-formed command line from these
alone; ``typer_app.py`` builds the full typer app from them for help, errors and completion), and
``Output`` is the one place results are written."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import InputError
from ..output.render import FORMATS


@dataclass(frozen=True)
class Output:
    """How a command's result is written: the format, and whether figures carry their short forms."""

    format: str = "table"
    human: bool = True
    wide: bool = False

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
            elif plain() and not self.wide and all(sheet.fits(d, terminal_width()) for d in docs):
                # off a terminal: rich's output byte for byte, without its console
                emit("".join(sheet.to_plain(d, terminal_width()) for d in docs))
            else:
                width = None if self.wide else terminal_width()
                for d in docs:
                    print_rich(sheet.to_rich(d, width), width)


REQUIRED = ...


@dataclass(frozen=True)
class Arg:
    """A positional argument: required unless it has a default; ``many``: one or more (a list)."""

    help: str = ""
    default: Any = REQUIRED
    many: bool = False


@dataclass(frozen=True)
class Opt:
    """An option: its flags (``--bias/--no-bias`` style for a switch both ways), default (REQUIRED: must be
    given), the value's type, the bounds or the choices it must meet, and a ``check`` that returns what is
    wrong with a value (or None)."""

    flags: tuple[str, ...]
    default: Any = None
    help: str = ""
    type: type = str
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] | None = None
    check: Callable[[Any], str | None] | None = None
    eager: bool = False

    @property
    def negative(self) -> str | None:
        """The flag that sets a two-way switch false (``--no-bias``), if any."""
        return next((f.split("/", 1)[1] for f in self.flags if "/" in f), None)

    @property
    def names(self) -> tuple[str, ...]:
        """The flags that set the value (a switch's positive side)."""
        return tuple(f.split("/", 1)[0] for f in self.flags)


def opt(default: Any, *flags: str, **kw) -> Opt:
    """An option, in typer's order: default (``...``: required), flags, then the rest."""
    return Opt(flags, default, **kw)


def arg(default: Any, *, help: str = "") -> Arg:
    """A positional argument: default (``...``: required) and help; a ``list[str]`` annotation takes many."""
    return Arg(help, default)


def finite(low: float = 0.0, high: float = 1e30, *, above: bool = True) -> Callable[[Any], str | None]:
    """A check: a finite number above (or from) ``low`` and at most ``high``; inf and nan refused."""
    import math

    def check(value):
        if value is None:
            return None
        if not math.isfinite(value) or not (value > low if above else value >= low) or value > high:
            return f"{value} is not a number {'above' if above else 'from'} {low:g} {'and' if above else 'to'} at most {high:g}"
        return None

    return check


# --format, --exact and --wide, added to the commands whose output they shape
FORMAT = Opt(("--format", "-f"), "table", "Output format.", choices=tuple(FORMATS))
EXACT = Opt(("--exact",), False, "Full integers only, without the short forms (175.2B).", type=bool)
WIDE = Opt(("--wide",), False, "Tables at their full width, whatever the terminal's.", type=bool)


@dataclass
class Command:
    """A registered command: its path (``("plot", "share")``), function, parameters in order, which output
    options it takes, and its examples (each a command line that runs as it is)."""

    path: tuple[str, ...]
    fn: Callable
    params: dict[str, Arg | Opt]
    output: str | None  # "exact" (--format, --exact, --wide), "plain" (--format, --wide) or None
    examples: tuple[str, ...] = ()
    group: bool = False  # a group's own command (``presets`` with no subcommand)

    def call(self, values: dict[str, Any]) -> Any:
        kw = dict(values)
        for name, p in self.params.items():  # an empty text names nothing: not the current folder, not a default
            given = kw.get(name)
            if (isinstance(p, Arg) or p.type is str) and any(isinstance(v, str) and not v.strip() for v in _listed(given)):
                if isinstance(p, Arg):
                    raise InputError(f"{name}: empty; give {p.help[:1].lower()}{p.help[1:]}")
                raise InputError(f"{p.names[0]} is empty: an empty value names nothing")
        if self.output:
            kw["output"] = Output(kw.pop("format"), not kw.pop("exact", False), kw.pop("wide"))
        return self.fn(**kw)


def _listed(value: Any) -> list:
    return value if isinstance(value, list) else [value]


COMMANDS: dict[tuple[str, ...], Command] = {}
GROUPS: dict[str, str] = {}  # group name -> its help


def command(*path: str, output: str | None = None, examples: tuple[str, ...] = (), group: bool = False):
    """Register a command at ``path`` (a group's subcommand: ``command("plot", "share")``). Its parameters are
    its function's defaults, each an ``Arg`` or an ``Opt``; ``output`` adds FORMAT, EXACT and WIDE."""
    import typing
    from dataclasses import replace

    def register(fn):
        hints = typing.get_type_hints(fn)
        code = fn.__code__  # every parameter has a default: an Arg or an Opt (inspect would cost more)
        params = {}
        for name, default in zip(code.co_varnames[: code.co_argcount], fn.__defaults__ or ()):
            if name == "output":
                continue
            hint = hints[name]
            base = next((a for a in typing.get_args(hint) if a is not type(None)), hint)  # Optional[X] -> X
            if isinstance(default, Arg):
                params[name] = replace(default, many=typing.get_origin(hint) is list)
            else:
                assert isinstance(default, Opt), fn.__name__
                params[name] = replace(default, type=base)
        if output:
            params |= {"format": FORMAT, **({"exact": EXACT} if output == "exact" else {}), "wide": WIDE}
        key = path or (fn.__name__,)
        COMMANDS[key] = Command(key, fn, params, output, examples, group)
        return fn

    return register


def plain() -> bool:
    """Whether tables are written as plain text: where styles would not show (stdout is not a terminal)."""
    return not sys.stdout.isatty()


def emit(text: str) -> None:
    sys.stdout.write(text)


DEFAULT_WIDTH = 80  # off a terminal, and where COLUMNS is unset or not a number
MIN_WIDTH = 20


def terminal_width() -> int:
    """The width tables are fitted to: the terminal's, else COLUMNS, else 80 columns."""
    if sys.stdout.isatty():
        import shutil

        return max(MIN_WIDTH, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return DEFAULT_WIDTH
    return min(max(MIN_WIDTH, columns), 10_000) if columns > 0 else DEFAULT_WIDTH


def print_rich(renderable, width: int | None = None) -> None:
    """Print at ``width`` columns (the document was fitted to it); None: at the natural width of its widest
    table or line (--wide)."""
    from rich.measure import Measurement

    from ..output.render import console as make_console

    if width is None:
        console = make_console(10_000)
        parts = getattr(renderable, "renderables", [renderable])
        options = console.options.update(max_width=10_000)
        width = max((Measurement.get(console, options, p).maximum for p in parts), default=DEFAULT_WIDTH)
    make_console(max(width, 1)).print(renderable)
