"""Datasheet figures of accelerators (``hardware.yaml``, and a user's own file), matched by the name a device
reports or by the key ``--hardware`` takes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

from ..errors import InputError

GIB = 2**30
FIELDS = {
    "key",
    "name",
    "match",
    "tflops",
    "source",
    "memory_gib",
    "bandwidth_gbs",
    "link_gbs",
    "link_peer_gbs",
    "link_latency_us",
    "node",
    "unified",
}
NODE = 8  # devices a scale-up link joins where a table entry does not say (an HGX or DGX board of 8)


@dataclass(frozen=True)
class Hardware:
    key: str  # what --hardware takes
    name: str
    match: tuple[str, ...]
    tflops: dict[str, float]  # dense peak by dtype, never a structured-sparsity figure
    source: str
    memory_bytes: int | None = None  # exact: the datasheet's GB of HBM/GDDR are GiB (2^30 bytes)
    bandwidth_gbs: float | None = None  # 10^9 bytes/s
    link_gbs: float | None = None  # scale-up interconnect (NVLink, Infinity Fabric, ICI, PCIe) per direction, 10^9 B/s
    link_peer_gbs: float | None = None  # to any one peer, in a point-to-point mesh
    link_latency_us: tuple[float, float] | None = None  # a small ring all-reduce: base + per hop, 2(n − 1) hops
    node: int = NODE  # devices the scale-up link joins (NVL72: 72; a TPU pod's ICI)
    unified: bool = False  # the CPU's and GPU's memory is one (Apple silicon): the GPU may wire only part of it

    def allreduce_gbs(self, n: int) -> float | None:
        """What a ring over n devices gets per direction: the whole link behind a switch; in a mesh, at most
        the n − 1 peers' links."""
        if self.link_gbs is None or self.link_peer_gbs is None or n == 1:
            return self.link_gbs
        return min(self.link_gbs, (n - 1) * self.link_peer_gbs)

    def allreduce_latency_us(self, n: int) -> float:
        if self.link_latency_us is None or n == 1:
            return 0.0
        base, hop = self.link_latency_us
        return base + 2 * (n - 1) * hop

    @property
    def memory_gib(self) -> float | None:
        return None if self.memory_bytes is None else self.memory_bytes / GIB


def _entry(entry: object, where: str) -> Hardware:
    """One table entry, checked: a one-line error naming the file, the entry and the field."""
    if not isinstance(entry, dict):
        raise InputError(f"{where}: each entry is a mapping with key, name, tflops, memory_gib, bandwidth_gbs, source")
    name = f"{where}: entry {entry.get('key', '?')!r}"
    unknown = set(entry) - FIELDS
    if unknown:
        raise InputError(f"{name}: unknown field {sorted(unknown)[0]!r}; known: {', '.join(sorted(FIELDS))}")
    for need in ("key", "name", "source"):
        if not isinstance(entry.get(need), str) or not entry[need].strip():
            raise InputError(f"{name}: {need} must be a non-empty string")
    tflops = entry.get("tflops", {}) or {}
    if not isinstance(tflops, dict) or not all(
        isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for k, v in tflops.items()
    ):
        raise InputError(f"{name}: tflops must map dtypes (bf16, fp8, …) to positive numbers")
    match = entry.get("match", [])
    if not isinstance(match, list) or not all(isinstance(m, str) for m in match):
        raise InputError(f"{name}: match must be a list of strings")
    numbers = {}
    for field in ("memory_gib", "bandwidth_gbs", "link_gbs", "link_peer_gbs"):
        v = entry.get(field)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0 or v > 10**7):
            raise InputError(f"{name}: {field} must be a positive number")
        numbers[field] = v
    latency = entry.get("link_latency_us")
    if latency is not None and (
        not isinstance(latency, list)
        or len(latency) != 2
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 10**6 for v in latency)
    ):
        raise InputError(f"{name}: link_latency_us must be [base, per hop], two times in µs")
    node = entry.get("node", NODE)
    if isinstance(node, bool) or not isinstance(node, int) or not 1 <= node <= 10**6:
        raise InputError(f"{name}: node must be a whole number of devices, at least 1")
    unified = entry.get("unified", False)
    if not isinstance(unified, bool):
        raise InputError(f"{name}: unified must be true or false")
    memory = numbers["memory_gib"]
    return Hardware(
        entry["key"].lower(),
        entry["name"],
        tuple(match),
        dict(tflops),
        entry["source"],
        None if memory is None else round(memory * GIB),
        numbers["bandwidth_gbs"],
        numbers["link_gbs"],
        numbers["link_peer_gbs"],
        None if latency is None else (float(latency[0]), float(latency[1])),
        node,
        unified,
    )


def parse(text: str, where: str) -> tuple[Hardware, ...]:
    from ..sources.yaml import load_yaml

    data = load_yaml(text, where)
    if not isinstance(data, list):
        raise InputError(f"{where}: a YAML list of devices, each with key, name, tflops, memory_gib, bandwidth_gbs, source")
    out = tuple(_entry(e, where) for e in data)
    keys = [h.key for h in out]
    dup = next((k for k in keys if keys.count(k) > 1), None)
    if dup:
        raise InputError(f"{where}: key {dup!r} appears twice")
    return out


@cache
def table() -> tuple[Hardware, ...]:
    text = resources.files("ffncalc.analysis").joinpath("hardware.yaml").read_text(encoding="utf-8")
    return parse(text, "hardware.yaml")


def user_table(path: str | None) -> tuple[Hardware, ...]:
    """The devices of ``--hardware-file`` (read through the project's bounded reader), or none."""
    if path is None:
        return ()
    from pathlib import Path

    from ..sources.yaml import read_text

    where = f"--hardware-file {path}"
    try:
        size = Path(path).stat().st_size
    except OSError:
        size = 0  # read_text names what is wrong
    if size > 1 << 20:
        raise InputError(f"{where}: {size:,} bytes; a device table is a small YAML file (at most 1 MiB)")
    try:
        text = read_text(Path(path))
    except InputError as exc:
        raise InputError(f"--hardware-file {exc}") from None
    return parse(text, where)


def by_key(key: str, path: str | None = None) -> Hardware:
    """The entry named by ``--hardware`` (a user's file first); an unknown key raises with the known ones."""
    if not isinstance(key, str):
        raise InputError(f"--hardware {type(key).__name__}: a name of the hardware table (ffncalc hardware lists them)")
    entries = user_table(path) + table()
    for hw in entries:
        if hw.key == key.lower():
            return hw
    shown = key if len(key) <= 60 else f"{key[:59]}… ({len(key):,} characters)"
    raise InputError(f"--hardware {shown}: unknown; known: {', '.join(hw.key for hw in entries)}")


def lookup(device_name: str) -> Hardware | None:
    """The table's entry for a reported device name, or None (CPUs, unlisted devices).

    A pattern matches as a whole word run: "L4" finds "NVIDIA L4", not "NVIDIA L40S".
    """
    for hw in table():
        if any(re.search(rf"(?<!\w){re.escape(m)}(?!\w)", device_name, re.IGNORECASE) for m in hw.match):
            return hw
    return None
