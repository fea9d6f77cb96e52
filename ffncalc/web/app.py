"""The web server's application (Starlette): the page and its files (``static/``, shipped with the package), and the
JSON API under ``/api/``, one route per question of the library (``jobs.py``), each answered by a worker
(``workers.py``). A request's body is bounded in size; a bad request is a 4xx with the one line the command line
would print, never a traceback."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..output.sheet import one_line
from . import jobs
from .workers import MEMORY_BYTES, TIMEOUT_S, Pool

STATIC = Path(__file__).resolve().parent / "static"
BODY_LIMIT = jobs.TEXT_LIMIT + 64 * 2**10  # an upload's text and the options beside it
READ_S = 30.0  # the most a request's body may take to arrive
MEDIA = {
    "json": "application/json",
    "csv": "text/csv",
    "markdown": "text/markdown",
    "latex": "application/x-latex",
    "html": "text/html",
}
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=HEADERS)


async def body(request: Request) -> dict[str, Any] | JSONResponse:
    """A POST's JSON object, read up to ``BODY_LIMIT`` bytes."""
    size = request.headers.get("content-length")
    limit = f"at most {BODY_LIMIT // 2**20} MiB (a config.json or spec is kilobytes)"
    if size is not None and size.isdigit() and int(size) > BODY_LIMIT:
        return error(413, f"the request is {int(size):,} bytes; {limit}")
    data = bytearray()

    async def read() -> bool:
        async for chunk in request.stream():
            data.extend(chunk)
            if len(data) > BODY_LIMIT:
                return False
        return True

    try:
        if not await asyncio.wait_for(read(), READ_S):
            return error(413, f"the request is larger than {BODY_LIMIT:,} bytes; {limit}")
    except asyncio.TimeoutError:
        return error(408, f"the request's body took longer than {READ_S:g} s to arrive")
    if not data:
        return {}
    try:
        parsed = json.loads(data)
    except RecursionError:
        return error(400, "the request is nested too deeply")
    except (ValueError, UnicodeDecodeError) as exc:
        return error(400, f"the request is not JSON ({type(exc).__name__})")
    if not isinstance(parsed, dict):
        return error(400, f"the request is a JSON object of fields, not a {type(parsed).__name__}")
    return parsed


def endpoint(job: str) -> Any:
    async def answer(request: Request) -> Response:
        got: dict[str, Any] = {}
        if request.method == "POST":
            read = await body(request)
            if isinstance(read, Response):
                return read
            got = read
        try:  # a query string's fields read as text, a JSON body's as they are; the body's win
            params = {**jobs.typed(job, dict(request.query_params), True), **jobs.typed(job, got, False)}
        except jobs.InputError as exc:
            return error(400, one_line(exc))
        status, out = await request.app.state.pool.run(job, params)
        if status != 200:
            return error(status, out["error"])
        if "bytes" in out:
            kind = {"svg": "image/svg+xml", "pdf": "application/pdf", "png": "image/png"}[out["format"]]
            return Response(out["bytes"], media_type=kind, headers=HEADERS)
        if "text" in out:
            kind = MEDIA.get(out["format"], "text/plain")
            return PlainTextResponse(out["text"], media_type=f"{kind}; charset=utf-8", headers=HEADERS)
        return JSONResponse(out["json"], headers=HEADERS)

    return answer


async def page(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers=HEADERS)


async def missing(request: Request) -> Response:
    return error(404, f"no such API: {request.url.path}; the API: {', '.join('/api/' + j for j in jobs.JOBS)}")


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def create(
    workers: int = 2, timeout: float = TIMEOUT_S, memory: int = MEMORY_BYTES, hosts: Sequence[str] | None = LOOPBACK_NAMES
) -> Starlette:
    """The application, with ``workers`` processes answering (each limited to ``memory`` bytes and ``timeout``
    seconds a request); ``hosts``: the names a request's Host header may give (a page elsewhere that resolves its
    own name to this machine's loopback is refused), None for any."""
    pool = Pool(workers, timeout, memory)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await pool.start()
        app.state.pool = pool
        try:
            yield
        finally:
            await pool.stop()

    routes = [Route("/", page)]
    routes += [Route(f"/api/{job}", endpoint(job), methods=["GET", "POST"]) for job in jobs.JOBS]
    routes += [Route("/api/{rest:path}", missing), Mount("/static", StaticFiles(directory=STATIC), name="static")]
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=list(hosts))] if hosts is not None else []
    return Starlette(routes=routes, lifespan=lifespan, middleware=middleware)
