"""Datasheet figures of accelerators (``hardware.yaml``), matched by the name a device reports."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml


@dataclass(frozen=True)
class Hardware:
    key: str  # what --hardware takes
    name: str
    match: tuple[str, ...]
    tflops: dict[str, float]  # dense peak by dtype
    source: str
    memory_gb: float | None = None
    bandwidth_gbs: float | None = None


@cache
def table() -> tuple[Hardware, ...]:
    text = resources.files("ffncalc.analysis").joinpath("hardware.yaml").read_text(encoding="utf-8")
    return tuple(Hardware(**{**entry, "match": tuple(entry["match"])}) for entry in yaml.safe_load(text))


def by_key(key: str) -> Hardware:
    """The entry named by ``--hardware``; an unknown key raises with the known ones."""
    for hw in table():
        if hw.key == key.lower():
            return hw
    from ..errors import InputError

    raise InputError(f"--hardware {key}: unknown; known: {', '.join(hw.key for hw in table())}")


def lookup(device_name: str) -> Hardware | None:
    """The table's entry for a reported device name, or None (CPUs, unlisted devices).

    A pattern matches as a whole word run: "L4" finds "NVIDIA L4", not "NVIDIA L40S".
    """
    for hw in table():
        if any(re.search(rf"(?<!\w){re.escape(m)}(?!\w)", device_name, re.IGNORECASE) for m in hw.match):
            return hw
    return None
