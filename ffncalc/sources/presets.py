"""The shipped presets (``presets/*.yaml``, installed as the ``ffncalc.presetdata`` package) and model lookup."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

from ..errors import InputError
from ..model import Model
from .yaml import load_spec, parse_spec

ALIASES = {"gpt3": "gpt3-175b"}
SPEC_SUFFIXES = (".yaml", ".yml", ".json")


@cache
def _folder():
    """A source checkout: ``presets/`` beside the package (its own, even where an editable install of another
    checkout maps ``ffncalc.presetdata`` elsewhere); installed: the ``ffncalc.presetdata`` package."""
    from importlib.util import find_spec  # importlib.resources would cost more than a count

    checkout = Path(__file__).resolve().parent.parent.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "presets" / "__init__.py").is_file():
        return checkout / "presets"
    try:
        spec = find_spec("ffncalc.presetdata")
    except ModuleNotFoundError:
        spec = None
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(__file__).resolve().parent.parent.parent / "presets"


@cache
def names() -> tuple[str, ...]:
    """Preset names: the file names without ``.yaml``, sorted."""
    return tuple(sorted(f.name[: -len(".yaml")] for f in _folder().iterdir() if f.name.endswith(".yaml")))


def canonical(name: str) -> str:
    """The preset a name or alias stands for; unknown names raise with the closest matches."""
    name = ALIASES.get(name, name)
    if name in names():
        return name
    import difflib

    choices = list(names()) + list(ALIASES)
    close = difflib.get_close_matches(name, choices, n=3, cutoff=0.6) or difflib.get_close_matches(name, choices, n=3, cutoff=0.0)
    raise InputError(f"unknown preset {name!r}; closest: {', '.join(close)} (ffncalc presets lists them all)")


def text(name: str) -> str:
    """The YAML source of a preset, comments included."""
    return _folder().joinpath(f"{canonical(name)}.yaml").read_text(encoding="utf-8")


def load(ref: str, as_family: str | None = None, *, text_only: bool = False) -> tuple[str, Model]:
    """A preset name, alias, spec file path, or Hugging Face config.json (or its folder) -> (label, spec);
    ``as_family`` reads a config.json as that model_type; ``text_only``: its language model alone (``without_towers``)."""
    from . import check_name, hf

    check_name(ref)
    if Path(ref).is_symlink() and not Path(ref).exists():
        raise InputError(f"{ref}: a symbolic link that leads nowhere (a loop, or its target is missing)")
    if ref.endswith((".safetensors", ".gguf")) and not Path(ref).exists():
        raise InputError(f"{ref}: no such file")
    if hf.is_hf_config(ref) or Path(ref).is_dir() or ref.endswith(".json") and Path(ref).is_file():
        label, spec = hf.load(ref, as_family)  # a .json is a config.json, whose model_type names its family
        if not text_only:
            return label, spec
        note = without_towers(spec, label).notes[-1]  # refused where there is no tower to leave out
        # a wrapper's language model as its text-only class builds it (its head tied by its text_config)
        text = without_towers(hf.load(ref, as_family, text=True)[1], label, strict=False)
        return label, text if note in text.notes else replace(text, notes=(*text.notes, note))
    if as_family is not None:
        raise InputError(f"--as {as_family}: only a Hugging Face config.json is read as a family; {ref} is not one")
    path = Path(ref)
    if path.exists() or ref.endswith(SPEC_SUFFIXES) or "/" in ref or "\\" in ref:
        label, spec = path.stem, load_spec(path)
    else:
        label, spec = shipped(ref)
    return (label, without_towers(spec, label)) if text_only else (label, spec)


def without_towers(spec: Model, label: str, strict: bool = True) -> Model:
    """``spec``'s language model alone: without the towers and generators beside it (``Part.beside``: its vision and
    audio towers with their projectors, a talker…), its head tied as it states. ``strict``: refused where there is
    none to leave out."""
    from ..errors import OptionError

    beside = [p for p in spec.parts if p.beside]
    if not beside:
        if strict:
            raise OptionError(f"--text-only: {label} is a language model alone, with no tower beside it", field="text_only")
        return spec
    gone = {p.note(spec) for p in beside}
    named = [p.key.replace("_", " ") for p in beside]
    listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
    note = f"text only: the language model alone, without its {listed}"
    notes = tuple(n for n in spec.notes if n not in gone) + (note,)
    return replace(spec, parts=tuple(p for p in spec.parts if not p.beside), notes=notes)


def shipped(ref: str) -> tuple[str, Model]:
    """A preset by name or alias -> (label, spec), reading no file but the shipped presets."""
    name = canonical(ref)
    return name, parse_spec(text(name), f"preset {name}", check=False)  # shipped and tested: trusted
