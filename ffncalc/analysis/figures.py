"""Keyed figures: what every planning analysis returns, and what the renderers turn into any format."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Figure:
    """One result: a stable ``id`` (the JSON key), a label for people, the value (an exact integer where the
    quantity is exact, bytes included; a float for rates, times and ratios), its unit and its source."""

    id: str
    label: str
    value: int | float
    unit: str
    source: str = ""


@dataclass(frozen=True)
class Figures:
    """An analysis's answer: a title, the inputs it was given (by name), notes, and its figures in order."""

    title: str
    inputs: dict[str, object]
    figures: list[Figure]
    notes: list[str] = field(default_factory=list)

    def __getitem__(self, key: str) -> Figure:
        return next(f for f in self.figures if f.id == key)

    def record(self) -> dict[str, object]:
        """JSON-ready: every figure under its id."""
        return {
            "title": self.title,
            "inputs": self.inputs,
            "notes": self.notes,
            "figures": {
                f.id: {"value": f.value, "unit": f.unit, "label": f.label, **({"source": f.source} if f.source else {})}
                for f in self.figures
            },
        }
