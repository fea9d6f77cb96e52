"""The web server as its users start it (``ffncalc serve`` in a process of its own, on a free loopback port), and
the system's Chromium driven by Playwright. Every test here is marked ``web`` (needs the extra); one without a
browser is skipped with the line that says how to install it, and fails instead where CI requires the browser
(FFNCALC_REQUIRE_BROWSER=1, set by .ci/run)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

INSTALL = (
    "no Chromium for the page's tests: install it with `apt-get install -y chromium` (Debian) "
    "and `pip install 'ffncalc[web]' playwright==1.64.1`"
)
ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, *args: str, env: dict[str, str] | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ffncalc", "serve", "--port", str(self.port), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        # until it answers, or exits (uvicorn exits when it cannot bind): no bound on the time a busy machine takes
        while True:
            try:
                with urllib.request.urlopen(self.url + "/api/options", timeout=5) as r:
                    if r.status == 200:
                        break
            except (OSError, urllib.error.URLError):
                pass
            if self.process.poll() is not None:
                self.stop()
                raise RuntimeError(f"ffncalc serve did not start: {self.process.stderr.read() if self.process.stderr else ''}")
            time.sleep(0.2)

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=60) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def post(self, path: str, data: dict | bytes) -> tuple[int, str]:
        body = data if isinstance(data, bytes) else json.dumps(data).encode()
        request = urllib.request.Request(self.url + path, body, {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def stop(self) -> str:
        self.process.terminate()
        try:
            _, err = self.process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
        return err


@pytest.fixture(scope="session")
def server():
    s = Server("--workers", "2")
    yield s
    s.stop()


def chromium() -> str | None:
    found = os.environ.get("FFNCALC_CHROMIUM") or next(
        (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None
    )
    try:
        import playwright  # noqa: F401
    except ImportError:
        return None
    return found


@pytest.fixture(scope="session")
def browser():
    path = chromium()
    if path is None:
        if os.environ.get("FFNCALC_REQUIRE_BROWSER") == "1":
            pytest.fail(INSTALL)
        pytest.skip(INSTALL)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser, server):
    """A fresh page at desktop size; ``page.open(query)`` loads the app and waits until it has answered."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True)
    p = context.new_page()
    errors: list[str] = []
    p.on("pageerror", lambda e: errors.append(str(e)))

    def open_(query: str = "") -> None:
        p.goto(server.url + "/" + query)
        p.wait_for_selector("body[data-ready=true]", timeout=60_000)

    p.open = open_
    p.errors = errors
    yield p
    context.close()
    assert not errors, errors
