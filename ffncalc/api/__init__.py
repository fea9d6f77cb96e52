"""The library's public API, which ``ffncalc`` itself exposes lazily: ``load`` and ``Model`` (``models.py``), one
function per question (``commands.py``), the results they return (``results.py``), and the option choices the
command line shares (``options.py``)."""

from __future__ import annotations

from .commands import bench, compare, count, fit, infer, train, verify
from .models import Model, load
from .results import (
    Bench,
    CheckpointCount,
    Collectives,
    Comparison,
    Component,
    Count,
    ParallelBench,
    Plan,
    Presets,
    Result,
    Sweep,
    Table,
    Verification,
)
from .tables import plot, presets, table

__all__ = [
    "Bench",
    "CheckpointCount",
    "Collectives",
    "Comparison",
    "Component",
    "Count",
    "Model",
    "ParallelBench",
    "Plan",
    "Presets",
    "Result",
    "Sweep",
    "Table",
    "Verification",
    "bench",
    "compare",
    "count",
    "fit",
    "infer",
    "load",
    "plot",
    "presets",
    "table",
    "train",
    "verify",
]
