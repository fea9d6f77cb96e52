"""A model as the library hands it out: ``load`` reads one from wherever the command line would, and
``Model.from_dict`` builds one from a spec written in code. It holds the resolved stack every analysis walks and
the label the commands name it by."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from ..errors import InputError, SpecError

if TYPE_CHECKING:
    from ..model.stack import Model as Stack

Source = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Model:
    """A resolved model: ``label`` (the preset's name, the file's stem, or the name given) and ``stack``, the
    per-layer model every question is asked of. Build one with ``ffncalc.load`` or ``Model.from_dict``."""

    label: str
    stack: Stack

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, label: str | None = None) -> Model:
        """A spec as plain data, the fields a YAML spec file states (``vocab_size``, ``d_model``, ``n_layers``,
        ``attention``, ``ffn``, …), validated as a user's file is: a wrong field raises ``SpecError`` naming it."""
        from ..model import from_data

        if not isinstance(data, dict):
            raise SpecError(f"a spec is a mapping of fields (vocab_size, d_model, …), not a {type(data).__name__}")
        stack = _validated(from_data, data)
        return cls(label or stack.name or "model", stack)

    @classmethod
    def from_yaml(cls, text: str, *, label: str = "model") -> Model:
        """A spec as YAML text, read as a spec file is (errors name the line and the field)."""
        from ..sources.yaml import parse_spec

        return cls(label, parse_spec(text, label))

    @classmethod
    def from_text(cls, text: str, *, label: str = "model", as_family: str | None = None) -> Model:
        """A model from the text of a file, read as the command line reads a file of that name, and no file read:
        a ``.json`` is a Hugging Face config.json (``as_family`` reads it as that model_type), a ``.yaml`` a spec;
        a label of neither kind (pasted text) is a config.json if it is a JSON object with a ``model_type``, else
        a spec. Errors name ``label`` as they would the file."""
        from ..sources import parse_json

        if not isinstance(text, str):
            raise InputError(f"{label}: a model's text is a string, not a {type(text).__name__}")
        config = label.endswith(".json")
        if not config and not label.endswith((".yaml", ".yml")):
            try:
                data = parse_json(text, label)
            except InputError:
                data = None
            config = isinstance(data, dict) and "model_type" in data
        if config:
            from ..sources import hf

            return cls(label, hf.to_spec(hf.from_text(text, label, as_family)))
        if as_family is not None:
            raise InputError(f"--as {as_family}: only a Hugging Face config.json is read as a family; {label} is not one")
        return cls.from_yaml(text, label=label)

    @property
    def name(self) -> str:
        """The model's own name where its spec states one, else its label."""
        return self.stack.name or self.label

    @property
    def title(self) -> str:
        """What ``count`` calls it: the spec's name with the label beside it where the two differ."""
        name = self.stack.name
        return f"{name} ({self.label})" if name and name != self.label else self.label

    @property
    def d_model(self) -> int:
        return self.stack.d_model

    @property
    def n_layers(self) -> int:
        return self.stack.n_layers

    @property
    def vocab_size(self) -> int:
        return self.stack.vocab_size

    @property
    def context_length(self) -> int:
        return self.stack.context_length

    def __repr__(self) -> str:
        return f"Model({self.label!r}, d_model={self.d_model}, n_layers={self.n_layers}, vocab_size={self.vocab_size})"


def _validated(build: Any, data: dict[str, Any]) -> Stack:
    """``build(data)``, a failed validation raised as ``SpecError`` with the field's dotted path."""
    from pydantic import ValidationError

    from ..model.schema import SpecError as Inconsistent
    from ..model.schema import problem

    try:
        stack: Stack = build(data)
        return stack
    except ValidationError as exc:
        found = problem(exc)
        field = _dotted(found.loc, data, found.named)
        raise SpecError(f"{field or '(top level)'}: {found.message}", field=field or None) from None
    except Inconsistent as exc:
        field = _dotted(exc.path, data, True)
        raise SpecError(f"{field or '(top level)'}: {exc.message}", field=field or None) from None
    except RecursionError:
        raise SpecError("nested too deeply (a spec is a few levels of mappings)") from None


def _dotted(loc: tuple[Any, ...], data: Any, named: bool) -> str:
    """The path a validation error's location takes through ``data``, as ``ffn.d_ff`` or ``layers[2].kind``:
    entries that are no key of the data (a union member's tag) are skipped; a last one that names a field absent
    from the data (``named``) is kept."""
    out, node = "", data
    for i, step in enumerate(loc):
        if isinstance(node, dict) and step in node:
            out, node = (f"{out}.{step}" if out else str(step)), node[step]
        elif isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            out, node = f"{out}[{step}]", node[step]
        elif i == len(loc) - 1 and named and isinstance(node, dict) and node.get("kind") != step:
            out = f"{out}.{step}" if out else str(step)
    return out


def load(source: Model | Source, *, as_family: str | None = None) -> Model:
    """A model from a preset name or alias, a spec file (.yaml), a Hugging Face config.json (or the folder holding
    one; ``as_family`` reads it as that model_type), or a checkpoint (.safetensors, a folder of shards, .gguf, or
    ORG/NAME[@REVISION] on the Hub: the config.json beside its weights)."""
    if isinstance(source, Model):
        return source
    ref = reference(source)
    from ..sources.checkpoint import is_checkpoint

    if is_checkpoint(ref):
        from ..sources import checkpoint, hf

        ckpt = checkpoint.load(ref, as_family)
        if ckpt.config is None:
            raise InputError(f"{ref}: no config.json ffncalc reads beside the checkpoint's weights", file=ref)
        config: Any = ckpt.config  # a Config: checked just above
        return Model(ckpt.label, hf.to_spec(config))
    return resolve(ref, as_family)


def resolve(source: Model | Source, as_family: str | None = None, text_only: bool = False) -> Model:
    """A model given to a question: a ``Model`` as it is, else read as the command line reads its MODEL argument
    (a preset, a spec file or a config.json); ``text_only``: its language model alone (--text-only)."""
    from ..sources import presets

    if isinstance(source, Model):
        return Model(source.label, presets.without_towers(source.stack, source.label)) if text_only else source
    label, stack = presets.load(reference(source), as_family, text_only=text_only)
    return Model(label, stack)


def reference(source: Any) -> str:
    """A source as the text the command line would be given: a path as its string."""
    if isinstance(source, os.PathLike):
        return str(os.fspath(source))
    if not isinstance(source, str):
        raise InputError(f"a model is a preset name, a path or an ffncalc.Model, not a {type(source).__name__}")
    from ..sources import check_name

    check_name(source)
    return source
