"""ffncalc: exact parameter and FLOP counts for transformer language models.

    >>> import ffncalc
    >>> ffncalc.count("llama3-8b").params
    8030261248

Every command of the command line is a function here with its options as keyword arguments (``count``,
``compare``, ``train``, ``infer``, ``fit``, ``verify``, ``bench``, ``table``, ``presets``), returning a result
whose ``to_dict()`` is the command's JSON (its ``schema`` key names its shape: ``docs/schemas/``); ``plot``
returns the ``plot`` command's figures. Names are imported on first use, so ``import ffncalc`` costs next to
nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_WHERE = {
    **dict.fromkeys(("load", "Model"), "ffncalc.api.models"),
    **dict.fromkeys(("count", "compare", "train", "infer", "fit", "verify", "bench"), "ffncalc.api.commands"),
    **dict.fromkeys(("table", "presets", "plot"), "ffncalc.api.tables"),
    **dict.fromkeys(
        (
            "Result",
            "Count",
            "Component",
            "CheckpointCount",
            "Comparison",
            "Sweep",
            "Table",
            "Plan",
            "Presets",
            "Verification",
            "Bench",
            "Collectives",
            "ParallelBench",
            "Table",
            "Presets",
        ),
        "ffncalc.api.results",
    ),
    "Figure": "ffncalc.analysis.figures",
    **dict.fromkeys(("InputError", "SpecError", "OptionError", "MissingDependency", "MeasurementError"), "ffncalc.errors"),
}

__all__ = [
    "Bench",
    "CheckpointCount",
    "Collectives",
    "Comparison",
    "Component",
    "Count",
    "Figure",
    "InputError",
    "MeasurementError",
    "MissingDependency",
    "Model",
    "OptionError",
    "ParallelBench",
    "Plan",
    "Presets",
    "Result",
    "SpecError",
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
    "__version__",
]

if TYPE_CHECKING:
    from .analysis.figures import Figure
    from .api.commands import bench, compare, count, fit, infer, train, verify
    from .api.models import Model, load
    from .api.results import (
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
    from .api.tables import plot, presets, table
    from .errors import InputError, MeasurementError, MissingDependency, OptionError, SpecError


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (PEP 562)."""
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'ffncalc' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(where), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
