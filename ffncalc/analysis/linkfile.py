"""Measured links: the collectives ``bench --collective`` times, their bus bandwidth factors, the latency and
bandwidth fitted to their times (t = α + β·bytes), and the links file (``ffncalc.links/1``) that carries the fits
into the plans (``--links``). Pure arithmetic and JSON; no torch."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")
SCHEMA = "ffncalc.links/1"
MAX_FILE = 16 << 20  # a links file is a few kilobytes; far beyond is not one


def bus_factor(collective: str, n: int) -> float:
    """Bus bandwidth over algorithm bandwidth for ``n`` ranks (nccl-tests, doc/PERFORMANCE.md): all-reduce
    2(n − 1)/n; all-gather, reduce-scatter and all-to-all (n − 1)/n; send/receive 1. Times the algorithm bandwidth
    (bytes / time), it is what each rank's link carries, comparable across rank counts and with the link's peak."""
    if collective == "all_reduce":
        return 2 * (n - 1) / n
    if collective in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    if collective == "send_recv":
        return 1.0
    raise KeyError(collective)


@dataclass(frozen=True)
class Fit:
    """t = α + β·bytes for one collective over ``ranks`` ranks: ``latency_s`` α, ``s_per_byte`` β, fitted over
    messages of ``low`` to ``high`` bytes (``points`` sizes); ``clamped``: the free fit's α was negative and α = 0
    was fitted instead."""

    collective: str
    ranks: int
    latency_s: float
    s_per_byte: float
    low: int = 0
    high: int = 0
    points: int = 0
    clamped: bool = False

    @property
    def algbw_gbs(self) -> float:
        """The bandwidth the fit tends to for large messages: bytes / (β·bytes), in 10^9 bytes/s."""
        return 1 / self.s_per_byte / 1e9

    @property
    def busbw_gbs(self) -> float:
        """Its bus bandwidth (nccl-tests' factor times the algorithm bandwidth), in 10^9 bytes/s."""
        return bus_factor(self.collective, self.ranks) * self.algbw_gbs

    def seconds(self, nbytes: float) -> float:
        return self.latency_s + self.s_per_byte * nbytes

    def record(self) -> dict:
        return {
            "latency_s": self.latency_s,
            "seconds_per_byte": self.s_per_byte,
            "algbw_gbs": self.algbw_gbs,
            "busbw_gbs": self.busbw_gbs,
            "from_bytes": self.low,
            "to_bytes": self.high,
            "points": self.points,
            "latency_clamped": self.clamped,
        }


def fit(collective: str, ranks: int, sizes: list[int], seconds: list[float]) -> Fit:
    """Least squares of t = α + β·bytes over every size, each residual relative to its time (weights 1/t²), so the
    latency-bound small messages count as much as the bandwidth-bound large ones; centred on the weighted means
    (β = Σw(x − x̄)(t − t̄) / Σw(x − x̄)², α = t̄ − β·x̄). Where α comes out negative, α = 0 and β = Σwxt / Σwx²."""
    if len(set(sizes)) < 2 or len(sizes) != len(seconds):
        raise InputError("--sizes: two message sizes or more, to fit a latency and a bandwidth", field="sizes")
    w = [1 / (t * t) for t in seconds]
    total = sum(w)
    xm = sum(wi * x for wi, x in zip(w, sizes)) / total
    tm = sum(wi * t for wi, t in zip(w, seconds)) / total
    sxx = sum(wi * (x - xm) ** 2 for wi, x in zip(w, sizes))
    beta = sum(wi * (x - xm) * (t - tm) for wi, x, t in zip(w, sizes, seconds)) / sxx
    alpha, clamped = tm - beta * xm, False
    if alpha < 0 or beta <= 0:
        alpha, clamped = 0.0, True
        beta = sum(wi * x * t for wi, x, t in zip(w, sizes, seconds)) / sum(wi * x * x for wi, x in zip(w, sizes))
    return Fit(collective, ranks, alpha, beta, min(sizes), max(sizes), len(sizes), clamped)


@dataclass(frozen=True)
class Links:
    """A links file read: its path and its fits, each a collective over a number of ranks."""

    path: str
    fits: tuple[Fit, ...]

    def pick(self, collective: str, n: int) -> Fit | None:
        """The fit of ``collective`` over ``n`` ranks, else over the nearest count (the larger of two as near), else
        None."""
        mine = [f for f in self.fits if f.collective == collective]
        return min(mine, key=lambda f: (abs(f.ranks - n), -f.ranks), default=None)


def read(path: str) -> Links:
    """The links file at ``path`` (``bench --collective --out``): anything it cannot be read as is one line that
    names the file and the field."""
    from ..sources import parse_json

    where = f"--links {path}"
    try:
        size = Path(path).stat().st_size
        if size > MAX_FILE:
            raise InputError(f"{where}: {size:,} bytes; a links file is a small JSON file (ffncalc bench --collective --out)")
        text = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{where}: {exc.strerror or exc}", file=path) from None
    data = parse_json(text, where)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        got = data.get("schema") if isinstance(data, dict) else None
        raise InputError(
            f"{where}: schema: {got!r:.60}, not {SCHEMA!r} (write one with ffncalc bench --collective … --out FILE)",
            file=path,
            field="schema",
        )
    entries = data.get("collectives")
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{where}: collectives: a list of one or more measured collectives", file=path, field="collectives")
    return Links(path, tuple(_entry(e, f"collectives[{i}]", where, path) for i, e in enumerate(entries)))


def _entry(e: object, at: str, where: str, path: str) -> Fit:
    def bad(field: str, what: str) -> InputError:
        return InputError(f"{where}: {at}.{field}: {what}", file=path, field=f"{at}.{field}")

    if not isinstance(e, dict):
        raise InputError(f"{where}: {at}: an object with collective, ranks and fit", file=path, field=at)
    name, ranks, fitted = e.get("collective"), e.get("ranks"), e.get("fit")
    if name not in COLLECTIVES:
        raise bad("collective", f"{name!r:.60}: one of {', '.join(COLLECTIVES)}")
    if isinstance(ranks, bool) or not isinstance(ranks, int) or not 2 <= ranks <= 1 << 20:
        raise bad("ranks", f"{ranks!r:.60}: an integer, 2 or more")
    if not isinstance(fitted, dict):
        raise bad("fit", "an object with latency_s and seconds_per_byte")
    alpha, beta = fitted.get("latency_s"), fitted.get("seconds_per_byte")
    if not _number(alpha) or not 0 <= alpha < 3600:
        raise bad("fit.latency_s", f"{alpha!r:.60}: a time in seconds, from 0, under an hour")
    if not _number(beta) or not 0 < beta < 1:
        raise bad("fit.seconds_per_byte", f"{beta!r:.60}: seconds a byte, above 0 and below 1")
    low, high = fitted.get("from_bytes", 0), fitted.get("to_bytes", 0)
    sizes = (low, high) if all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (low, high)) else (0, 0)
    points = fitted.get("points", 0) if isinstance(fitted.get("points", 0), int) else 0
    return Fit(name, ranks, float(alpha), float(beta), sizes[0], sizes[1], points, fitted.get("latency_clamped") is True)


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def size_text(n: int) -> str:
    """Bytes as a power-of-two size: 8 B, 64 KiB, 1 GiB (1.5 MiB where not whole)."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            v = n / (1 << shift)
            return f"{v:g} {unit}"
    return f"{n} B"


def describe(f: Fit) -> str:
    """One fit in words, for a note."""
    span = f" over {size_text(f.low)}–{size_text(f.high)}" if f.high else ""
    return (
        f"{f.collective} over {f.ranks} ranks: {f.latency_s * 1e6:.3g} µs + bytes at {f.busbw_gbs:.4g} GB/s bus "
        f"bandwidth (t = α + β·bytes fitted{span})"
    )


def measured(link, links: Links, p) -> object:
    """``link`` (links.Link, the table's) with what ``links`` measured in place of its figures: the all-reduce's
    bus bandwidth and latency over tp, the all-to-all's over ep, a hand-off's (send/receive) bandwidth and latency
    between stages. A count of ranks that was not measured takes the nearest one's fit: its bus bandwidth, which
    nccl-tests' factors make independent of the count for ring algorithms, and its latency as it is."""
    from dataclasses import replace

    said: list[str] = []
    changes: dict = {"source": links.path}
    ar = links.pick("all_reduce", p.tp) if p.tp > 1 else None
    if ar is not None:
        # allreduce_s charges 2(n − 1)/n · bytes / gbs: at the measured count, β·bytes
        changes |= {"gbs": ar.busbw_gbs, "latency_s": ar.latency_s, "measured_over": ar.ranks}
        said.append(describe(ar) + _applied(ar, p.tp, "tp"))
    a2a = links.pick("all_to_all", p.ep) if p.ep_copies > 1 else None
    if a2a is not None:
        changes |= {"a2a_gbs": a2a.busbw_gbs, "a2a_latency_s": a2a.latency_s, "a2a_over": a2a.ranks}
        said.append(describe(a2a) + _applied(a2a, p.ep, "ep"))
    sr = links.pick("send_recv", 2) if p.pp > 1 else None
    if sr is not None:
        changes |= {"p2p_gbs": sr.algbw_gbs, "p2p_latency_s": sr.latency_s}
        said.append(describe(sr))
    return replace(link, measured=tuple(said), **changes)


def _applied(f: Fit, n: int, degree: str) -> str:
    return "" if f.ranks == n else f", applied to {degree} {n} (no fit over {n} ranks in the file: the nearest count's)"
