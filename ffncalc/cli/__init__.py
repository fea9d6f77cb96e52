"""The command line: ``app`` holds the commands, ``options`` what they are made of; ``main`` is the entry
point. A well-formed line is read by ``parse`` from the commands alone; any other (help, completion, an
error to explain) by the typer app that ``typer_app`` builds from the same commands."""

from __future__ import annotations

import errno
import os
import sys

# The command line needs no pydantic plugins; skipping their discovery (a scan of every installed
# distribution's entry points) saves a third of the model-building time. A user's setting still wins.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

from ..errors import InputError, Interrupted, MeasurementError  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    """Entry point: bad input is one line on stderr and exit status 2, never a traceback."""
    from . import app, parse  # noqa: F401  (app registers the commands)

    if sys.stdout is None or sys.stdout.closed:  # started with standard output closed (>&-)
        _fail("standard output is closed; nothing can be printed")
    for stream in (sys.stdout, sys.stderr):  # a character the encoding lacks (PYTHONIOENCODING=ascii) as \\uXXXX
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass
    args = sys.argv[1:] if argv is None else list(argv)
    _on_signals()
    found = parse.read(args)
    try:
        if found is not None:
            command, values = found
            command.call(values)
            code = 0
        else:
            code = _typer(args)
        sys.stdout.flush()
    except InputError as exc:
        _fail(str(exc))
    except MeasurementError as exc:
        _fail(str(exc), code=1)
    except KeyboardInterrupt:
        raise Interrupted(130) from None
    except BrokenPipeError:  # the reader went away (| head): nothing more to say
        _quiet_exit(0)
    except OSError as exc:
        if exc.filename is not None:  # the file system refuses a path the user named (too long a name, no access)
            _fail(f"{exc.filename}: {exc.strerror or exc}")
        if exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EIO, errno.EBADF):
            _quiet_exit(None, f"cannot write standard output ({exc.strerror})")
        raise
    except RecursionError:
        _fail("input nested too deeply")
    sys.exit(code if isinstance(code, int) else 0)


def _typer(args: list[str]):
    """Read the line with the full typer app: help, the version, completion, and typer's error messages."""
    from typer.exceptions import Abort, TyperException
    from typer.main import get_command

    from .app import HELP
    from .typer_app import build

    command = get_command(build(HELP))
    try:
        return command.main(args=args, prog_name="ffncalc", standalone_mode=False)
    except TyperException as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # a bare command: its help, as --help would print
            sys.stdout.write(exc.format_message() + "\n")
            sys.exit(0)
        _fail(exc.format_message())
    except Abort:
        raise Interrupted(130) from None


def _on_signals() -> None:
    """SIGTERM and SIGHUP unwind as an interrupt does, so a write in progress removes its temporary file."""
    import signal

    def stop(signum, frame):
        raise Interrupted(128 + signum)

    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None:
            try:
                signal.signal(sig, stop)
            except ValueError:  # not the main thread
                pass


def _quiet_exit(code: int | None, message: str | None = None) -> None:
    """Leave with standard output unusable: point it at /dev/null so the interpreter's final flush is
    silent, then exit (2 with the message, else ``code``)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    if message:
        _fail(message)
    sys.exit(code)


def _fail(message: str, code: int = 2) -> None:
    from ..output.sheet import one_line

    text = one_line(message)
    try:
        sys.stderr.write(f"ffncalc: error: {text}\n")
    except (OSError, ValueError, AttributeError):
        pass
    sys.exit(code)


__all__ = ["main"]
