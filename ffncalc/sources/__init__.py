"""Where a model comes from: shipped presets, YAML spec files, Hugging Face config.json files."""

from __future__ import annotations

import re

from ..errors import InputError

NAME_MAX = 255
PATH_MAX = 4096


def check_name(ref, what: str = "model") -> None:
    """A model or file the user named: an empty or blank name names nothing (the current folder is not meant), and
    a name longer than a file system allows names nothing either."""
    if not str(ref).strip():
        wanted = {"model": "a preset name (ffncalc presets), a spec file (.yaml), a config.json or a checkpoint"}
        raise InputError(f"the {what} named is empty: give {wanted.get(what, 'a config.json or the folder holding one')}")
    longest = max((len(part.encode("utf-8", "surrogateescape")) for part in re.split(r"[/\\\\]", str(ref))), default=0)
    size = len(str(ref).encode("utf-8", "surrogateescape"))
    if longest > NAME_MAX or size > PATH_MAX:  # the file system's limits (POSIX NAME_MAX, PATH_MAX on Linux)
        limit = (
            f"a name of {longest:,} bytes; a file system allows {NAME_MAX}"
            if longest > NAME_MAX
            else f"{size:,} bytes; at most {PATH_MAX:,}"
        )
        raise InputError(f"{str(ref)[:60]}…: names no preset or file: File name too long ({limit})", file=str(ref)[:60])


def parse_json(text: str | bytes, source: str, what: str = "") -> object:
    """JSON ``text`` as data; whatever it cannot be read as is one line that names ``source`` (and ``what`` in it:
    "the safetensors header "): not JSON, nested past the parser's depth, or a number of more digits than Python
    converts."""
    import json

    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}:{exc.lineno}: {what}not JSON ({exc.msg})") from None
    except RecursionError:
        raise InputError(f"{source}: {what}nested too deeply (a few levels of objects are all it needs)") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{source}: {what}not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except ValueError:  # an integer past Python's digit limit
        raise InputError(f"{source}: {what}a number of more than 4,300 digits (no size comes near)") from None
