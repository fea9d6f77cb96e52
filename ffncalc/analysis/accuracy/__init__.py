"""How close the plans come to published runs and measurements, one module per kind of plan: ``training`` (each
record a run someone measured and published, its memory per device or its GPU-hours, the command that plans it and
the band the plan must fall in) and ``serving`` (engines' measured rates, capacities and bytes). ``page`` writes
docs/guide/accuracy.md from them and the tests hold each record in its band. A record that calibrates a constant says
which; the rest are held out: no constant was fitted to them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

GIB = 2**30
# The sections of the page, in order: the module holding each one's TITLE, INTRO, RECORDS (held in a band),
# VERDICTS (runs that ran, measured 1, or ran out of memory, 0: the plan must say which) and GAPS.
SECTIONS = ["ffncalc.analysis.accuracy.training", "ffncalc.analysis.accuracy.finetuning"]


def devices_file() -> str:
    """The devices of published runs that the device table does not hold (published.yaml)."""
    return str(resources.files("ffncalc.analysis") / "published.yaml")


@dataclass(frozen=True)
class Record:
    """One published run: what it measured, and the plan held against it."""

    name: str
    source: str  # where it is published (a document, its table)
    measured: float  # in ``unit``
    unit: str  # "GiB" (a figure in bytes, shown in GiB), "GPU-hours" or "s" (a step's seconds)
    figure: str  # the plan's figure id held against it
    model: str
    kwargs: dict[str, Any] = field(default_factory=dict)  # ffncalc.train's keywords (a flag of the command each)
    band: float = 0.15  # the plan within ±band of the measurement
    calibrates: str = ""  # the constant the record sets (empty: held out)
    ran: bool = False  # the run ran on its devices: the plan must say it fits
    gap: str = ""  # a run the plan does not model yet: why (shown, not held in a band)

    @property
    def command(self) -> str:
        """The command line of the plan: a flag a keyword."""
        flags = []
        for key, value in self.kwargs.items():
            flag = "--" + key.replace("_", "-")
            flags.append(flag if value is True else "--no-" + flag[2:] if value is False else f"{flag} {value}")
        return f"ffncalc train {self.model} " + " ".join(flags)

    def fits(self) -> bool:
        """Whether the plan says the run fits on its device."""
        return self.plan()["free_bytes_per_device"].value >= 0

    def plan(self) -> Any:
        from ...api import commands

        kwargs = dict(self.kwargs)
        if kwargs.get("hardware_file") == "published.yaml":
            kwargs["hardware_file"] = devices_file()
        return commands.train(self.model, **kwargs).answer

    def planned(self) -> float:
        value = self.plan()[self.figure].value
        return value / GIB if self.unit == "GiB" else float(value)


def sections() -> list[Any]:
    return [importlib.import_module(name) for name in SECTIONS]


def shown(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value:,.1f} s"
    return f"{value:,.1f} GiB" if unit == "GiB" else f"{value / 1e6:,.3f}M {unit}"


def _row(r: Record) -> str:
    planned = r.planned()
    within = "yes" if abs(planned / r.measured - 1) <= r.band else "NO"
    kind = f"calibrates `{r.calibrates}`" if r.calibrates else "held out"
    return (
        f"| {r.name} | {shown(r.measured, r.unit)} | {shown(planned, r.unit)} | {planned / r.measured:.3f} | "
        f"±{r.band:.0%}: {within} | {kind} |\n"
    )


def page(notice: str) -> str:
    """docs/guide/accuracy.md: every section's records beside their plans, with the ratio and the band."""
    parts = [
        notice,
        "# How close are the plans\n\n",
        "Each row is a run someone measured and published, beside what `ffncalc` plans for it with the same model, "
        "layout and settings. The ratio is planned / measured. A row that calibrates a constant says which one; "
        "every other row is held out: no constant was fitted to it. The tests hold every row within its band, and "
        "the page is generated, so it cannot drift from the code (`ffncalc docs --check docs`). `--hardware-file "
        "published.yaml` is `ffncalc/analysis/published.yaml`: devices of published runs the device table does not "
        "hold.\n",
    ]
    for section in sections():
        parts += [f"\n## {section.TITLE}\n\n", section.INTRO, "\n\n"]
        parts.append("| run | measured | planned | ratio | band | set |\n| --- | ---: | ---: | ---: | --- | --- |\n")
        parts += [_row(r) for r in section.RECORDS]
        parts.append("\nThe plans, and where each measurement is published:\n\n")
        for r in section.RECORDS:
            parts.append(f"- {r.name}: `{r.command}` — {r.source}\n")
        if section.VERDICTS:
            parts.append(
                "\nWhether it fits, against runs that ran or ran out of memory:\n\n"
                "| run | ran | the plan says | right |\n| --- | --- | --- | --- |\n"
            )
            for r in section.VERDICTS:
                ran, fits = bool(r.measured), r.fits()
                parts.append(
                    f"| {r.name} | {'yes' if ran else 'out of memory'} | {'fits' if fits else 'does not fit'} | "
                    f"{'yes' if ran == fits else 'NO'} |\n"
                )
            parts.append("\n")
            parts += [f"- {r.name}: `{r.command}` — {r.source}\n" for r in section.VERDICTS]
        if section.GAPS:
            parts.append("\nOutside the plans, each with its reason (shown, not held in a band):\n\n")  # a section's gaps
            for r in section.GAPS:
                parts.append(
                    f"- {r.name}: measured {shown(r.measured, r.unit)}, planned {shown(r.planned(), r.unit)} "
                    f"(ratio {r.planned() / r.measured:.2f}); {r.gap}. `{r.command}` — {r.source}\n"
                )
    from . import serving

    parts += ["\n", serving.page()]
    return "".join(parts)
