"""Ground-truth records of what transformers builds and runs (tests/hf_truth, tests/hf_defaults,
tests/hf_roundtrip): module paths with each run of identical layers stored once, and their JSON text, a key and
an entry a line."""

from __future__ import annotations

import re

NUMBER = re.compile(r"(?<=\.)\d+(?=\.|$)")  # a layer's or an expert's index in a module path


def _runs(values: list[int]) -> str:
    """Sorted integers as ranges: 0-3,5,7-9."""
    out: list[str] = []
    for v in sorted(set(values)):
        if out and out[-1][1] == v - 1:
            out[-1][1] = v
        else:
            out.append([v, v])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in out)


def _unruns(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def compact(entries) -> list[list]:
    """Entries of module paths and values (a parameter and its size; a module, a parameter, an op and its FLOPs)
    with the runs of identical layers stored once: each index in the paths replaced by *, the indices after the
    entry, per position a range list where the entries are every combination of them (else each one's list)."""
    groups: dict[tuple, list[tuple[int, ...]]] = {}
    for entry in entries:
        key = tuple(NUMBER.sub("*", f) if isinstance(f, str) else f for f in entry)
        groups.setdefault(key, []).append(tuple(int(x) for f in entry if isinstance(f, str) for x in NUMBER.findall(f)))
    out = []
    for key, indices in groups.items():
        if not indices[0]:
            out += [list(key)] * len(indices)
            continue
        axes = [sorted({ix[i] for ix in indices}) for i in range(len(indices[0]))]
        every = 1
        for a in axes:
            every *= len(a)
        whole = len(set(indices)) == len(indices) == every
        out.append([*key, [_runs(a) for a in axes] if whole else [list(ix) for ix in indices]])
    return out


def expanded(entries, arity: int) -> list[tuple]:
    """``compact``'s entries of ``arity`` fields back to one per module, in the recorded order of runs."""
    import itertools

    out = []
    for entry in entries:
        if len(entry) == arity:
            out.append(tuple(entry))
            continue
        *key, numbers = entry
        combos = (
            itertools.product(*(_unruns(a) for a in numbers))
            if numbers and isinstance(numbers[0], str)
            else (tuple(ix) for ix in numbers)
        )
        for combo in combos:
            it = iter(combo)
            out.append(tuple(re.sub(r"(?<=\.)\*(?=\.|$)", lambda _: str(next(it)), f) if isinstance(f, str) else f for f in key))
    return out


def record_json(data: dict) -> str:
    """A ground-truth record as JSON text: a key a line, and a list's entries a line each (diffs stay readable)."""
    import json

    def value(v, depth: int) -> str:
        if isinstance(v, list) and v and depth < 2:
            return "[\n" + ",\n".join(json.dumps(x, separators=(",", ":")) for x in v) + "\n]"
        if isinstance(v, dict) and depth < 2:
            return "{\n" + ",\n".join(f"{json.dumps(k)}: {value(x, depth + 1)}" for k, x in v.items()) + "\n}"
        return json.dumps(v, separators=(",", ":"))

    return value(data, 0) + "\n"
