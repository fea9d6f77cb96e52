"""``ffncalc serve``: every answer of the library in a browser. A page (``static/``: plain HTML, CSS and JavaScript,
shipped with the package, nothing fetched from elsewhere) and a JSON API under ``/api/`` that calls ``ffncalc.api``
(``app.py``, ``jobs.py``), served by uvicorn. Needs the extra ``web`` (starlette, uvicorn); the command line
imports this package only when ``serve`` runs."""

from __future__ import annotations

import sys

from ..errors import MissingDependency

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def serve(host: str = "127.0.0.1", port: int = 8000, *, open_browser: bool = False, workers: int = 2) -> None:
    """Serve the page and the API on ``host``:``port`` until interrupted."""
    try:
        import uvicorn

        from .app import LOOPBACK_NAMES, create
    except ImportError as exc:
        raise MissingDependency(f"serve needs starlette and uvicorn ({exc}); install them: pip install 'ffncalc[web]'") from None
    if host not in LOOPBACK:
        sys.stderr.write(
            f"ffncalc: warning: serving on {host}, reachable from other machines; the API answers anyone who reaches it\n"
        )
    url = f"http://{'[' + host + ']' if ':' in host else host}:{port}/"
    sys.stderr.write(f"ffncalc: serving {url} (Ctrl-C stops)\n")
    if open_browser:
        import threading
        import webbrowser

        threading.Timer(1.0, webbrowser.open, (url,)).start()
    hosts = LOOPBACK_NAMES if host in LOOPBACK else None  # on loopback, only requests that name it
    uvicorn.run(create(workers, hosts=hosts), host=host, port=port, log_level="warning", limit_concurrency=256, timeout_keep_alive=5)
