"""The full typer app, built from the registered commands (``options.COMMANDS``) when a command line needs
more than ``parse.read`` answers for: help, the version, shell completion, and every error message."""

from __future__ import annotations

import enum
import inspect
from typing import Any, Optional

import typer

from .options import COMMANDS, GROUPS, Arg, Command, Opt, emit


def build(help_text: str) -> typer.Typer:
    app = typer.Typer(
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
        help=help_text,
    )

    @app.callback()
    def _main(
        version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ) -> None:
        pass

    _main.__doc__ = help_text
    groups: dict[str, typer.Typer] = {}
    for name, text in GROUPS.items():
        has_own = (name,) in COMMANDS
        groups[name] = typer.Typer(help=text, no_args_is_help=not has_own, invoke_without_command=has_own, rich_markup_mode=None)
        app.add_typer(groups[name], name=name)
    for path, cmd in COMMANDS.items():
        fn, doc = _wrapper(cmd), cmd.fn.__doc__
        epilog = _epilog(cmd)
        if cmd.group:
            groups[path[0]].callback(help=doc, epilog=epilog)(fn)
        elif len(path) == 2:
            groups[path[0]].command(path[1], help=doc, epilog=epilog)(fn)
        else:
            app.command(path[0], help=doc, epilog=epilog)(fn)
    return app


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            emit(f"ffncalc {version('ffncalc')}\n")
        except PackageNotFoundError:  # a bare source checkout
            emit("ffncalc (not installed)\n")
        raise typer.Exit()


def _epilog(cmd: Command) -> str | None:
    if not cmd.examples:
        return None
    return "Examples:\n\n" + "\n\n".join(f"  ffncalc {e}" for e in cmd.examples)


def _wrapper(cmd: Command):
    """A function typer can read: the command's parameters as typer.Argument/typer.Option, choices as enums
    (their values passed on as strings), checks as callbacks; a group's own command returns at once when a
    subcommand follows."""
    params = [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)]
    for name, p in cmd.params.items():
        annotation, default = _typer_param(name, p)
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default))

    def run(ctx: typer.Context, **values: Any) -> Any:
        if cmd.group and ctx.invoked_subcommand is not None:
            return None
        return cmd.call({k: v.value if isinstance(v, enum.Enum) else v for k, v in values.items()})

    run.__signature__ = inspect.Signature(params)
    run.__annotations__ = {p.name: p.annotation for p in params}
    run.__name__ = cmd.fn.__name__
    return run


# positional arguments that name a preset (or a file): the shell completes preset names and aliases
PRESET_ARGS = {"model", "models", "name"}


def _presets(incomplete: str) -> list[str]:
    from ..sources import presets

    return [n for n in (*presets.names(), *presets.ALIASES) if n.startswith(incomplete)]


def _typer_param(name: str, p: Arg | Opt):
    if isinstance(p, Arg):
        complete = {"autocompletion": _presets} if name in PRESET_ARGS else {}
        return (list[str] if p.many else _optional(str, p.default)), typer.Argument(p.default, help=p.help, **complete)
    kind = p.type
    if p.choices is not None:
        kind = enum.Enum(f"{name}_choices", {c: c for c in p.choices}, type=str)
    kw: dict[str, Any] = {"help": p.help}
    if p.min is not None:
        kw["min"] = p.min
    if p.max is not None:
        kw["max"] = p.max
    if p.check is not None:
        kw["callback"] = _callback(p.check)
    return _optional(kind, p.default), typer.Option(p.default, *p.flags, **kw)


def _optional(kind, default):
    return Optional[kind] if default is None else kind


def _callback(check):
    def callback(value):
        problem = check(value)
        if problem is not None:
            raise typer.BadParameter(problem)
        return value

    return callback
