"""One declaration of what a spec may say, read two ways.

Spec classes are plain frozen dataclasses with typed fields (here, in ``spec.py`` and in each block module).
``build`` turns plain data into them as it is, which is all a shipped preset needs (no pydantic is imported);
``validate`` first checks a user's data with pydantic models generated from the same declarations, so an
error names the field, and then builds. Cross-field rules live in each class's ``__post_init__`` and raise
``SpecError``; both readers run them.
"""

from __future__ import annotations

import dataclasses
import types
from functools import cache
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints


@dataclasses.dataclass(frozen=True)
class Bound:
    """A number's bounds: above ``low`` (or from it, ``strict`` false) and at most ``high``. Plain data, so
    that building a trusted spec imports nothing; ``_pydantic`` gives pydantic annotated_types' Gt/Ge and Le."""

    low: int
    high: int
    strict: bool = True


# Sane upper limits: no width, count or length of a language model comes near 2^40 (10^12), and a bound keeps
# every derived figure (bytes, FLOPs) far from any overflow in the libraries that check the counts.
LIMIT = 2**40
Positive = Annotated[int, Bound(0, LIMIT)]
# Layers in a stack: the stack is resolved and walked layer by layer (a layer group states where layers differ, and
# any layer may), so a depth far past any model's (Llama 3.1 405B has 126 layers; research stacks reach 1,000) is
# refused rather than walked: every command stays within seconds for the deepest stack allowed, its layers all
# distinct.
MAX_LAYERS = 2**11
Layers = Annotated[int, Bound(0, MAX_LAYERS)]
# a stack beside the model's layers may hold none (an encoder part whose encoder is the vision part: parts/encoder.py)
StackLayers = Annotated[int, Bound(0, MAX_LAYERS, strict=False)]
# what each upper bound is, for the error that names it
BOUNDS = {LIMIT: "2^40: no width, count or length comes near", MAX_LAYERS: "layers in a stack: no model comes near"}
NonNegative = Annotated[int, Bound(0, LIMIT, strict=False)]
PositiveFloat = Annotated[float, Bound(0, LIMIT)]  # inf and nan fail these too


class SpecError(ValueError):
    """A spec that is well-typed but inconsistent; ``path`` names the offending field."""

    def __init__(self, path: tuple[str | int, ...], message: str):
        super().__init__(message)
        self.path = path
        self.message = message

    def within(self, *prefix: str | int) -> SpecError:
        return SpecError(prefix + self.path, self.message)


@dataclasses.dataclass(frozen=True)
class Slot:
    """A field that holds a block: any registered kind that fits ``slot``, chosen by its ``kind:`` key
    (``default`` when the key is left out), or only the kinds listed in ``only``."""

    slot: str
    default: str | None = None
    only: tuple[str, ...] = ()


@cache
def _hints(cls) -> dict[str, Any]:
    return get_type_hints(cls, include_extras=True)


@cache
def _init_fields(cls) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls) if f.init)


def _slot(tp) -> Slot | None:
    if get_origin(tp) is Annotated:
        return next((m for m in tp.__metadata__ if isinstance(m, Slot)), None)
    return None


def _members(tp) -> tuple:
    return get_args(tp) if get_origin(tp) in (Union, types.UnionType) else ()


def build(tp, value):
    """Plain data -> spec objects, trusting the data (a shipped preset, or data pydantic has checked)."""
    slot = _slot(tp)
    if slot is not None:
        from ..blocks import block_class

        return build(block_class(slot, value.get("kind") if isinstance(value, dict) else None), value)
    if get_origin(tp) is Annotated:
        return build(get_args(tp)[0], value)
    if value is None:
        return None
    members = _members(tp)
    if members:
        if isinstance(value, dict):
            return build(next(m for m in members if dataclasses.is_dataclass(m) or _slot(m) or get_origin(m) is dict), value)
        if isinstance(value, list):
            return build(next(m for m in members if get_origin(m) is list), value)
        return value
    if get_origin(tp) is list:
        return tuple(build(get_args(tp)[0], v) for v in value)
    if get_origin(tp) is dict:  # named entries: {name: value}
        return {k: build(get_args(tp)[1], v) for k, v in value.items()}
    if dataclasses.is_dataclass(tp) and isinstance(value, dict):
        hints, names = _hints(tp), _init_fields(tp)
        keyed, extra = _keyed(tp), {}
        if keyed is not None:  # the keys a registry names, collected into one field (ModelSpec.parts)
            field, registry = keyed
            found = [registry[k].read(build(registry[k].annotation(), v)) for k, v in value.items() if k in registry]
            extra[field] = tuple(sorted((p for p in found if p is not None), key=lambda p: p.order))
            value = {k: v for k, v in value.items() if k not in registry}
        # a block's kind is its class, not a field: the key that chose the class is dropped here
        return tp(**{k: build(hints[k], v) for k, v in value.items() if k in names or k != "kind"}, **extra)
    return value


def _keyed(cls) -> tuple[str, dict] | None:
    """The field of ``cls`` that collects the keys its registry names (``metadata={"registry": …}``), and the
    registry's classes by key; each class reads its value (``annotation()``, ``read(value)``)."""
    for f in dataclasses.fields(cls):
        if "registry" in f.metadata:
            return f.name, f.metadata["registry"]()
    return None


def _version() -> tuple[int, int]:
    from ..blocks import registry_version
    from ..parts import registry_version as parts_version

    return registry_version(), parts_version()


def validate(tp, data):
    """Check ``data`` against the declarations with pydantic, then build it. Raises pydantic's ValidationError."""
    from pydantic import TypeAdapter

    checked = TypeAdapter(_pydantic(tp)).validate_python(data)
    return build(tp, _dump(checked))


@dataclasses.dataclass(frozen=True)
class Problem:
    """One validation error, reduced: where (a pydantic location, perhaps with tags), what, and whether the
    last step of ``loc`` names a field (so it is shown even when the input lacks it)."""

    loc: tuple
    kind: str
    message: str
    named: bool


def problem(exc) -> Problem:
    """The telling error of a pydantic ValidationError: of a union's one error per member, the one that got
    deepest into the input; a SpecError's own path and message."""
    err = max(exc.errors(), key=lambda e: len(e["loc"]))
    loc, kind = tuple(err["loc"]), err["type"]
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, SpecError):
        return Problem(loc + cause.path, kind, cause.message, True)
    message = {"extra_forbidden": "unknown key", "missing": "required field is missing"}.get(kind, err["msg"])
    high = (err.get("ctx") or {}).get("le")
    if kind == "less_than_equal" and isinstance(err.get("input"), (int, float)) and high in BOUNDS:
        message = f"{err['input']:,} is beyond the limit of {high:,} ({BOUNDS[high]})"
    return Problem(loc, kind, message, kind == "missing")


def _dump(value):
    if hasattr(value, "model_dump"):
        return {k: _dump(getattr(value, k)) for k in type(value).model_fields}
    if isinstance(value, list):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value


def _pydantic(tp):
    """The pydantic type that checks what ``tp`` declares."""
    from pydantic import Discriminator, Tag

    from ..blocks import slot_classes

    slot = _slot(tp)
    if slot is not None:
        classes = slot_classes(slot)

        def tag(value, default=slot.default):
            return value.get("kind", default) if isinstance(value, dict) else getattr(value, "kind", default)

        members = tuple(Annotated[_model(c, _version()), Tag(c.kind)] for c in classes)
        return Annotated[Union[members], Discriminator(tag)]
    if get_origin(tp) is Annotated:
        from annotated_types import Ge, Gt, Le

        meta = [
            m for b in tp.__metadata__ for m in ((Gt(b.low) if b.strict else Ge(b.low), Le(b.high)) if isinstance(b, Bound) else (b,))
        ]
        return Annotated[(_pydantic(get_args(tp)[0]), *meta)]
    members = _members(tp)
    if members:
        return Union[tuple(_pydantic(m) for m in members)]
    if get_origin(tp) is list:
        return list[_pydantic(get_args(tp)[0])]
    if get_origin(tp) is tuple and len(get_args(tp)) == 2 and get_args(tp)[1] is Ellipsis:
        from pydantic import Strict

        # a YAML or JSON sequence (a list) read as the tuple, each item strict as the rest of the spec
        return Annotated[tuple[Annotated[_pydantic(get_args(tp)[0]), Strict()], ...], Strict(False)]
    if get_origin(tp) is dict:
        key, value = get_args(tp)
        return dict[key, _pydantic(value)]
    if dataclasses.is_dataclass(tp):
        return _model(tp, _version())
    return tp


@cache
def _model(cls, version: tuple[int, int]):
    """A strict pydantic model with ``cls``'s fields and defaults; building ``cls`` runs its own checks."""
    from pydantic import ConfigDict, create_model, model_validator

    hints = _hints(cls)
    fields = {}
    keyed = _keyed(cls)
    for key, part in (keyed[1] if keyed else {}).items():  # each registered key, none stated by default
        fields[key] = (Union[_pydantic(part.annotation()), None], None)
    for f in dataclasses.fields(cls):
        if not f.init or "registry" in f.metadata:
            continue
        default = f.default if f.default is not dataclasses.MISSING else ...
        if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            default = f.default_factory()  # type: ignore[misc]
        fields[f.name] = (_pydantic(hints[f.name]), default)
    if "kind" not in _init_fields(cls) and isinstance(getattr(cls, "kind", None), str):  # a block: its kind: key
        fields["kind"] = (Literal[cls.kind], cls.kind)

    def check(model):
        build(cls, _dump(model))  # __post_init__ raises SpecError, which pydantic reports at this location
        return model

    return create_model(
        cls.__name__,
        __config__=ConfigDict(extra="forbid", frozen=True, strict=True, arbitrary_types_allowed=True),
        __doc__=cls.__doc__,
        __validators__={"_check": model_validator(mode="after")(check)},
        **fields,
    )
