"""Writing the user's files: atomically, never half-written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .errors import InputError


def write_atomic(path: str | Path, data: str | bytes, option: str = "--out") -> None:
    """Write beside the target and rename over it, so a reader never sees half a file."""
    target = Path(path)
    if target.is_dir():
        raise InputError(f"{option} {path}: is a directory")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    except OSError as exc:
        raise InputError(f"{option} {path}: cannot write there ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise
