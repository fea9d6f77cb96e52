"""A load on ``ffncalc serve`` over loopback: concurrent clients, each on its own kept-alive connection, asking in
turn for the page and for ``/api/count`` of a preset, for a while; then the requests served, the errors, and the
memory of the server (its process and its workers, resident) before and after.

    python benchmarks/web_load.py [--clients 50] [--seconds 10] [--model llama3-8b]

It starts the server itself (``python -m ffncalc serve`` on a free port) and warms it first (a round of every
client), so the memory before is the steady state's. Not a test of speed: nothing here times the answers
(tests/web/test_web_load.py runs a bounded load and holds the errors and the memory to account).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path


def rss(pid: int) -> int:
    """Resident bytes of a process and all its descendants (Linux: /proc)."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
            total += next(int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmRSS:"))
            for task in Path(f"/proc/{p}/task").iterdir():
                stack += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, StopIteration):
            continue
    return total


def load(port: int, clients: int, *, seconds: float | None = None, rounds: int | None = None, model: str = "llama3-8b") -> dict:
    """``clients`` threads, each asking for the page and the count in turn, for ``seconds`` or ``rounds`` pairs;
    returns the requests served and the failures (a status other than 200, or no answer)."""
    paths = ["/", f"/api/count?model={model}"]
    served, failures, lock = [0], [], threading.Lock()
    stop = time.monotonic() + seconds if seconds is not None else None
    start = threading.Barrier(clients)

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        start.wait()
        i = 0
        while (stop is None and i < 2 * (rounds or 0)) or (stop is not None and time.monotonic() < stop):
            path = paths[i % 2]
            try:
                conn.request("GET", path)
                r = conn.getresponse()
                body = r.read()
                ok = r.status == 200 and (path == "/" or json.loads(body)["totals"]["params"] > 0)
            except Exception as exc:  # counted as a failure, with its reason
                ok, body = False, repr(exc).encode()
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            with lock:
                if ok:
                    served[0] += 1
                else:
                    failures.append(f"{path}: {body[:200]!r}")
            i += 1
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"requests": served[0], "failures": failures}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--model", default="llama3-8b")
    args = ap.parse_args()
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "ffncalc", "serve", "--port", str(port)], env=os.environ)
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/options", timeout=5).close()
                break
            except OSError:
                time.sleep(0.2)
        load(port, args.clients, rounds=1, model=args.model)  # warm: every worker and connection once
        before = rss(server.pid)
        got = load(port, args.clients, seconds=args.seconds, model=args.model)
        after = rss(server.pid)
    finally:
        server.terminate()
        server.wait(20)
    print(
        json.dumps(
            {
                "clients": args.clients,
                "seconds": args.seconds,
                "requests": got["requests"],
                "failures": len(got["failures"]),
                "first_failures": got["failures"][:5],
                "rss_before_mib": round(before / 2**20, 1),
                "rss_after_mib": round(after / 2**20, 1),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
