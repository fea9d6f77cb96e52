"""Which keys of a config.json each family reads, and the other names transformers gives them.

``keys_read`` reads a config with every key lookup logged (``Config.data`` wrapped for the length of one read);
``listing`` is the union over every config ffncalc is proven on (each type's defaults, the public configs, the
configs transformers wrote in the round trip), recorded in config_keys.json by scripts/hf_roundtrip.py and
kept current by tests/families/test_roundtrip.py. The aliases are the configuration class's attribute_map
(class_defaults.json): a file may state either name, and ``class_defaults`` gives both the value transformers
builds with.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from .config import Config, class_defaults_of

LISTING = Path(__file__).with_name("config_keys.json")


class _Logged(dict):
    """A config's keys, each lookup added to ``log``."""

    log: set[str]

    def get(self, key, default=None):
        self.log.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.log.add(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self.log.add(key)
        return super().__contains__(key)


@contextmanager
def _recording():
    log: set[str] = set()
    original = Config.__init__

    def init(self, data, *args, **kwargs):
        logged = _Logged(data)
        logged.log = log
        original(self, logged, *args, **kwargs)

    Config.__init__ = init
    try:
        yield log
    finally:
        Config.__init__ = original


def keys_read(c: Config) -> set[str]:
    """The keys the family of ``c`` looks up while reading it (its model_type aside)."""
    from ...errors import InputError
    from . import spec_data

    with _recording() as log:
        try:
            spec_data(Config(dict(c.data), c.text, c.source, start=c.start, wrapper=c.wrapper, towers=c.towers))
        except InputError:  # refused after reading what it read
            pass
    return log - {"model_type"}


def aliases(model_type: str) -> dict[str, str]:
    """The configuration class's attribute_map: a name a file may use -> the attribute it sets."""
    return dict((class_defaults_of(model_type) or {}).get("aliases", {}))


@cache
def listing() -> dict[str, list[str]]:
    """Every supported model_type's keys, as recorded (config_keys.json)."""
    return json.loads(LISTING.read_text())["types"]


def described(model_type: str) -> list[str]:
    """The keys a type's family reads, each with its other name: "num_local_experts (also num_experts)"."""
    other = {}
    for alias, key in aliases(model_type).items():
        other.setdefault(key, []).append(alias)
        other.setdefault(alias, []).append(key)
    out, seen = [], set()
    for key in listing().get(model_type, []):
        if key in seen:
            continue
        names = [n for n in other.get(key, []) if n != key]
        seen.update(names)
        out.append(f"{key} (also {', '.join(names)})" if names else key)
    return out
