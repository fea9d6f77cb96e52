"""Writing the user's files: atomically, never half-written, with the mode the user expects.

A regular file is written beside its target and renamed over it: a reader sees the old file or the new one,
never half of either. The new file gets the mode a new file gets under the umask, or, replacing a file, that
file's mode. A symbolic link is written through (its target is replaced, the link stays); a device or a pipe
(/dev/null, /dev/stdout, a FIFO) is written as a stream. A failed write (a full disk, a file-size limit, an
interrupt) leaves the target as it was and no temporary file behind.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Iterator

from .errors import InputError

# While set (a scratch folder), every write lands under it instead: examples run by `docs` write nothing of
# the user's.
_redirect: Path | None = None


@contextlib.contextmanager
def scratch(folder: str | Path) -> Iterator[None]:
    """Within it, every write goes under ``folder`` (by the target's path made relative)."""
    global _redirect
    before, _redirect = _redirect, Path(folder)
    try:
        yield
    finally:
        _redirect = before


def _redirected(path: Path) -> Path:
    if _redirect is None:
        return path
    absolute = Path(os.path.abspath(path))
    return _redirect / absolute.relative_to(absolute.anchor)


def new_file_mode() -> int:
    """The mode open(2) gives a new file: 0666 less the umask."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def resolve(path: str | Path, option: str = "--out") -> Path:
    """The file a write to ``path`` changes: a symbolic link's final target; a folder is an error."""
    target = Path(os.path.realpath(_redirected(Path(path))))
    if target.is_dir():
        raise InputError(f"{option} {path}: is a directory")
    return target


def _fail(option: str, path, exc: OSError) -> InputError:
    return InputError(f"{option} {path}: cannot write there ({exc.strerror or exc})")


def write_atomic(path: str | Path, data: str | bytes, option: str = "--out") -> None:
    """Write ``data`` to ``path``: atomically for a regular file, as a stream for a device or a pipe."""
    write_all({path: data}, option)


def write_all(files: dict, option: str = "--out") -> None:
    """Write every file or none: each is staged beside its target first, then all are renamed into place; a
    failure at any point puts back what was there and removes every staged file."""
    payload = {resolve(p, option): (p, d.encode() if isinstance(d, str) else d) for p, d in files.items()}
    streams = {t: v for t, v in payload.items() if t.exists() and not t.is_file()}
    staged: list[tuple[Path, str]] = []
    made: list[Path] = []  # folders made for the files, outermost first: removed again unless the files land
    try:
        for target, (shown, data) in payload.items():
            if target not in streams:
                staged.append((target, _stage(target, shown, data, option, made)))
        _commit(staged, payload, option)
        staged = made = []
        for target, (shown, data) in streams.items():
            _stream(target, shown, data, option)
    finally:
        for _, tmp in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        for folder in reversed(made):  # innermost first; one that holds anything else stays
            with contextlib.suppress(OSError):
                folder.rmdir()


def _stage(target: Path, shown, data: bytes, option: str, made: list[Path]) -> str:
    try:
        made += reversed([p for p in (target.parent, *target.parent.parents) if not p.exists()])
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else new_file_mode()
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise _fail(option, shown, exc) from None
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            f.write(data)
            f.flush()
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise _fail(option, shown, exc) from None
        raise
    return tmp


def _commit(staged: list[tuple[Path, str]], payload, option: str) -> None:
    """Rename each staged file over its target; should one fail, the ones already renamed get their old
    content back (kept as a hard link until all are in place)."""
    done: list[tuple[Path, str | None]] = []
    try:
        for target, tmp in staged:
            backup = None
            if target.exists():
                backup = f"{tmp}.old"
                try:
                    os.link(target, backup)
                except OSError:  # a file system without hard links: a copy
                    import shutil

                    shutil.copy2(target, backup)
            try:
                os.replace(tmp, target)
            except BaseException:
                if backup:
                    os.unlink(backup)
                raise
            done.append((target, backup))
    except BaseException as exc:
        for target, backup in reversed(done):
            with contextlib.suppress(OSError):
                if backup:
                    os.replace(backup, target)
                else:
                    os.unlink(target)
        if isinstance(exc, OSError):
            raise _fail(option, payload[target][0], exc) from None
        raise
    for _, backup in done:
        if backup:
            with contextlib.suppress(OSError):
                os.unlink(backup)


def _stream(target: Path, shown, data: bytes, option: str) -> None:
    try:
        with open(target, "wb") as f:
            f.write(data)
    except OSError as exc:
        raise _fail(option, shown, exc) from None
