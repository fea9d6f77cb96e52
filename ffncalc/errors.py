"""The exceptions the library raises and the command line turns into a one-line message: bad input (exit status
2), a measurement that cannot be right (exit status 1); and the exit of an interrupted run. Every one but the
last is public (``ffncalc.InputError``, …); the library never raises ``SystemExit`` of its own."""

from __future__ import annotations

WORD = 200  # the most characters of one word (a value, a path) a message echoes


def bounded(message: str) -> str:
    """A message that echoes what the user gave, each word of it cut to ``WORD`` characters: a 5,000-character
    name is named by its start and its length, and the message stays one readable line."""
    import re

    def cut(m: re.Match[str]) -> str:
        word = m.group(0)
        return f"{word[: WORD - 1]}… ({len(word):,} characters)"

    return re.sub(r"[^\s]{%d,}" % (WORD + 1), cut, message.replace("\n", " "))


class InputError(Exception):
    """Bad input from the user: a file, a field, a name or an option value. ``file``, ``line`` and ``field`` say
    where, when the input has them (None otherwise); ``str(error)`` is the one line the command line prints."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None, field: str | None = None):
        super().__init__(bounded(message))
        self.file = file
        self.line = line
        self.field = field


class SpecError(InputError):
    """A model's spec that does not validate: a YAML file, a config.json, or a dict given to
    ``Model.from_dict``; ``field`` is the dotted path of the offending field (``ffn.d_ff``, ``layers[2].kind``)."""


class OptionError(InputError):
    """An option's value out of its range or not one of its choices (the keyword argument, or the flag)."""


class MissingDependency(InputError):
    """A question that needs an optional package (torch, transformers) that is not installed."""


class MeasurementError(Exception):
    """A timing whose figures cannot all be right (a rate above the peak measured beside it)."""


class Interrupted(SystemExit):
    """The run was interrupted: SIGINT (exit status 130), SIGTERM (143) or SIGHUP (129). What runs inside it (an
    example that docs runs) stops with it; its own exit is never taken for the example's."""
