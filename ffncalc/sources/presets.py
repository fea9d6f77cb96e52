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
        # a wrapper's language model as its text-only class builds it (its head tied by its text_config)
        return label, without_towers(spec, label, hf.load(ref, as_family, text=True)[1])
    if as_family is not None:
        raise InputError(f"--as {as_family}: only a Hugging Face config.json is read as a family; {ref} is not one")
    path = Path(ref)
    if path.exists() or ref.endswith(SPEC_SUFFIXES) or "/" in ref or "\\" in ref:
        label, spec = path.stem, load_spec(path)
    else:
        label, spec = shipped(ref)
    return (label, without_towers(spec, label)) if text_only else (label, spec)


TEXT_ONLY_NOTE = "text only: the language model alone"


def without_towers(spec: Model, label: str, text: Model | None = None) -> Model:
    """``spec``'s language model alone: ``text`` (a wrapper's text_config read, default ``spec``) without the towers and
    generators beside its layers (``Part.beside``: vision and audio towers with their projectors, a talker…), its
    head tied as it states; its note names every part of ``spec`` it leaves out. Refused where ``spec`` has no tower."""
    from ..errors import OptionError

    if not any(p.beside for p in spec.parts):
        raise OptionError(f"--text-only: {label} is a language model alone, with no tower beside it", field="text_only")
    text = spec if text is None else text
    kept = tuple(p for p in text.parts if not p.beside)
    gone = [p for p in spec.parts if p.key not in {k.key for k in kept}]
    named = [p.key.replace("_", " ") for p in gone]
    listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
    notes = {p.note(text) for p in text.parts if p.beside}
    kept_notes = tuple(n for n in text.notes if n not in notes)
    return replace(text, parts=kept, notes=(*kept_notes, f"{TEXT_ONLY_NOTE}, without its {listed}"))


def shipped(ref: str) -> tuple[str, Model]:
    """A preset by name or alias -> (label, spec), reading no file but the shipped presets."""
    name = canonical(ref)
    return name, parse_spec(text(name), f"preset {name}", check=False)  # shipped and tested: trusted
