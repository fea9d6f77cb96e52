"""Reading a spec from YAML text or a file, with errors that name the file, line and field.

A user's file is validated (pydantic, through ``model.schema``); a shipped preset is trusted and built
directly, which needs no pydantic.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from ..errors import InputError, SpecError
from ..model import Model, from_data
from ..model.schema import problem

MAX_BYTES = 16 * 2**20  # specs and configs are kilobytes; a read stops here (a device such as /dev/zero)


def read_text(path: Path, limit: int = MAX_BYTES) -> str:
    """A UTF-8 text file, read up to ``limit`` bytes: a longer one (or an endless device) is an error."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
        if len(data) > limit:
            raise InputError(f"{path}: larger than {limit // 2**20} MiB, the most a spec or config is read to")
        return data.decode("utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a spec file") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror})") from None


def load_yaml(text: str, source: str):
    """Plain YAML ``text`` as data (safe_load's, merge keys included); whatever it cannot be read as is one line
    naming ``source`` and the line: a syntax error, a tag (nothing is ever executed), a key given twice, nesting
    past the parser's depth, a number of more digits than Python converts."""
    try:
        return yaml.load(text, Loader=UniqueKeyLoader)  # a SafeLoader: a !!python tag is an error, never executed
    except RecursionError:
        raise InputError(f"{source}: nested too deeply (a few levels of mappings are all it needs)") from None
    except ValueError:  # an integer past Python's digit limit
        raise InputError(f"{source}: a number of more than 4,300 digits (no size comes near)") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}" if mark else source
        problem = str(exc.problem or exc.context)
        if not isinstance(exc, yaml.constructor.ConstructorError):
            what = "YAML syntax error"
        elif "given twice" in problem:
            what = "duplicate key"
        elif "could not determine a constructor" in problem:
            what = "YAML tag not allowed (plain YAML only)"
        else:
            what = "YAML error"
        raise InputError(f"{where}: {what}: {problem}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: YAML error: {exc}") from None


def parse_spec(text: str, source: str, *, check: bool = True) -> Model:
    """YAML ``text`` as a resolved model, validated unless ``check`` is off; ``source`` names it in errors."""
    data = load_yaml(text, source)
    if data is None:
        raise InputError(f"{source}: empty file: a spec is a mapping of fields (vocab_size, d_model, …)")
    if not isinstance(data, dict):
        raise InputError(f"{source}:1: the document is a {type(data).__name__}, not a mapping of spec fields")
    if not check:
        return from_data(data, check=False)
    from pydantic import ValidationError

    try:
        return from_data(data)
    except ValidationError as exc:
        raise _describe(exc, text, source) from None


MERGE = "tag:yaml.org,2002:merge"  # the merge key, ``<<``


class UniqueKeyLoader(yaml.SafeLoader):
    """safe_load's loader, refusing a mapping that gives a key twice (YAML would keep the last silently)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == MERGE:  # ``<<: *base``: its keys come first, and a key stated here overrides one
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node)
                except TypeError:  # an unhashable key: the constructor says so
                    continue
                if first is not key_node:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"{str(key)[:60]!r} given twice (first on line {first.start_mark.line + 1}), once only",
                        key_node.start_mark,
                    )
        return super().construct_mapping(node, deep=deep)


def load_spec(path: Path) -> Model:
    return parse_spec(read_text(path), str(path))


def _describe(exc, text: str, source: str) -> SpecError:
    """The validation error as one line, file:line: field.path: message, with the three apart."""
    found = problem(exc)
    path, line = _locate(found.loc, found.kind, text, found.named)
    where = f"{source}:{line}" if line else source
    return SpecError(f"{where}: {path or '(top level)'}: {found.message}", file=source, line=line, field=path or None)


def _locate(loc: tuple, kind: str, text: str, named: bool) -> tuple[str, int | None]:
    """Walk the YAML node tree along a pydantic location: the dotted field path and its line.

    Locations carry entries that are not keys (a union member's tag or type name); they are skipped.
    A last entry that is a field absent from the input (``named``) is still shown.
    """
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    line = node.start_mark.line + 1 if node is not None else None
    shown: list[str] = []
    for i, step in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(node, yaml.MappingNode):
            found = next(((k, v) for k, v in node.value if k.value == step), None)
            if found is not None:
                shown.append(str(step))
                key, node = found
                line = key.start_mark.line + 1  # the line naming the field
                continue
            if last and named and not _is_tag(node, step):
                shown.append(str(step))
            continue
        if isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
            shown[-1:] = [f"{shown[-1]}[{step}]"] if shown else [f"[{step}]"]
            node = node.value[step]
            line = node.start_mark.line + 1
    return ".".join(shown), line


def _is_tag(node: yaml.MappingNode, step: str) -> bool:
    """Whether ``step`` is the value of the mapping's ``kind`` (a discriminated union's tag)."""
    return any(k.value == "kind" and getattr(v, "value", None) == step for k, v in node.value)
