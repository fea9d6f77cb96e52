"""A well-formed command line read from the registered commands alone, without a command-line library.

``read`` answers for the plain case only: a registered command, known flags each given once, values in their
plain spelling (``42``, ``0.4``, ``1e-3``, a listed choice) within their bounds, every required value given.
Anything else — help, the version, completion, a typo, a bad value, ``--`` — returns None, and the full typer
app (``typer_app.py``) reads the line instead, with its help and its error messages. So the two readers
never disagree on a line both accept: this one accepts a subset, converted as typer converts it.
"""

from __future__ import annotations

import os
import re
from typing import Any

from .options import COMMANDS, REQUIRED, Arg, Command, Opt

INT = re.compile(r"[0-9]+\Z")
FLOAT = re.compile(r"[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?\Z|\.[0-9]+([eE][-+]?[0-9]+)?\Z")
HANDED_OVER = {"-h", "--help", "--version", "--install-completion", "--show-completion", "--"}


def read(argv: list[str]) -> tuple[Command, dict[str, Any]] | None:
    """The command and its parameters' values, or None: let typer read this line."""
    if not argv or HANDED_OVER.intersection(argv) or any(k.endswith("_COMPLETE") for k in os.environ):
        return None
    found = COMMANDS.get(tuple(argv[:2])) if len(argv) > 1 else None
    path = tuple(argv[:2]) if found else tuple(argv[:1])
    found = found or COMMANDS.get(path)
    if found is None or (found.group and len(argv) > 1 and (argv[0], argv[1]) not in COMMANDS and not argv[1].startswith("-")):
        return None
    return _values(found, argv[len(path) :])


def _values(cmd: Command, tokens: list[str]) -> tuple[Command, dict[str, Any]] | None:
    flags: dict[str, tuple[str, Opt, bool]] = {}
    for name, p in cmd.params.items():
        if isinstance(p, Opt):
            flags |= {f: (name, p, True) for f in p.names}
            if p.negative:
                flags[p.negative] = (name, p, False)
    positional = [name for name, p in cmd.params.items() if isinstance(p, Arg)]
    given: dict[str, Any] = {}
    loose: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("-") or token == "-":
            loose.append(token)
            continue
        flag, eq, text = token.partition("=")
        if flag not in flags:
            return None
        name, p, on = flags[flag]
        if name in given:
            return None
        if p.type is bool:
            if eq:
                return None
            given[name] = on
            continue
        if not eq:
            if i == len(tokens) or tokens[i].startswith("-"):
                return None
            text, i = tokens[i], i + 1
        value = _convert(p, text)
        if value is None:
            return None
        given[name] = value
    for name in positional:
        p = cmd.params[name]
        if p.many:
            if not loose:
                return None
            given[name], loose = loose, []
        elif loose:
            given[name] = loose.pop(0)
        elif p.default is REQUIRED:
            return None
        else:
            given[name] = p.default
    if loose:
        return None
    for name, p in cmd.params.items():
        if name not in given:
            if p.default is REQUIRED:
                return None
            given[name] = p.default
    return cmd, {name: given[name] for name in cmd.params}


def _convert(p: Opt, text: str) -> Any:
    """The value typer would pass for ``text``, or None where this reader does not answer for it."""
    if p.choices is not None:
        return text if text in p.choices else None
    if p.type in (int, float) and len(text) > 40:  # no bound comes near; typer's reader explains the refusal
        return None
    if p.type is int:
        value = int(text) if INT.match(text) else None
    elif p.type is float:
        value = float(text) if FLOAT.match(text) else None
    elif p.type is str:
        return text
    else:
        return None
    if value is None or (p.min is not None and value < p.min) or (p.max is not None and value > p.max):
        return None
    if p.check is not None and p.check(value) is not None:
        return None
    return value
