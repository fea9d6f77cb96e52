"""The processes that answer requests: each runs one job at a time (``jobs.run``) under a memory limit, and one that
takes longer than the time a request is given is killed and replaced, so no request holds the server. A request
brings everything its job reads; a worker keeps nothing of one request for the next but what the library caches
of its shipped data."""

from __future__ import annotations

import asyncio
import multiprocessing
import sys
import traceback
from dataclasses import dataclass
from typing import Any

TIMEOUT_S = 30.0  # a count takes milliseconds, a plan a second at most
MEMORY_BYTES = 2 * 2**30  # each worker's address space (RLIMIT_AS)


def _serve(conn: Any, memory: int) -> None:
    """A worker's loop: a job in, its (status, answer) out."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    except (ImportError, ValueError, OSError):  # no such limit on this system
        pass
    from . import jobs

    jobs.JOBS["options"]({})  # the library's modules imported once, before the first request
    while True:
        try:
            job, params = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        try:
            answer = jobs.run(job, params)
        except Exception as exc:  # a fault of the library: logged here, one line to the client
            traceback.print_exc(file=sys.stderr)
            answer = (500, {"error": f"internal error ({type(exc).__name__}); the server's log has the details"})
        try:
            conn.send(answer)
        except (OSError, ValueError):  # too large to send, or the server went away
            return


class Worker:
    def __init__(self, memory: int):
        ctx = multiprocessing.get_context("spawn")  # a clean interpreter: nothing of the server's threads
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, memory), daemon=True)
        self.process.start()
        child.close()

    def call(self, job: str, params: dict[str, Any]) -> tuple[int, Any]:
        try:
            self.conn.send((job, params))
            answer: tuple[int, Any] = self.conn.recv()
        except (EOFError, OSError):
            return 500, {"error": "the worker ended before answering (out of memory?)"}
        return answer

    def stop(self) -> None:
        self.process.kill()
        self.process.join(5)
        self.conn.close()


@dataclass
class Pool:
    """``size`` workers; a request waits for a free one (up to ``timeout`` seconds), then has ``timeout`` seconds."""

    size: int = 2
    timeout: float = TIMEOUT_S
    memory: int = MEMORY_BYTES

    def __post_init__(self) -> None:
        self.idle: asyncio.Queue[Worker] | None = None
        self.workers: list[Worker] = []
        self.tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.idle = asyncio.Queue()
        started = await asyncio.gather(*(loop.run_in_executor(None, Worker, self.memory) for _ in range(self.size)))
        for w in started:
            self.workers.append(w)
            self.idle.put_nowait(w)

    async def stop(self) -> None:
        for w in self.workers:
            w.stop()
        self.workers.clear()

    async def run(self, job: str, params: dict[str, Any]) -> tuple[int, Any]:
        assert self.idle is not None, "the pool is not started"
        loop = asyncio.get_running_loop()
        try:
            worker = await asyncio.wait_for(self.idle.get(), self.timeout)
        except asyncio.TimeoutError:
            return 503, {"error": f"the server is busy: no worker was free within {self.timeout:g} s; try again"}
        try:
            status, answer = await asyncio.wait_for(loop.run_in_executor(None, worker.call, job, params), self.timeout)
        except asyncio.TimeoutError:
            self._replace(worker)
            return 503, {"error": f"the question took longer than {self.timeout:g} s, the most a request is given"}
        except BaseException:  # the request was cancelled (the client left): the worker may still be busy with it
            self._replace(worker)
            raise
        if not worker.process.is_alive():
            self._replace(worker)
        else:
            self.idle.put_nowait(worker)
        return status, answer

    def _replace(self, worker: Worker) -> None:
        """Kill ``worker`` (busy past its time, or dead) and start another in its place, in the background."""
        worker.stop()
        self.workers.remove(worker)

        async def fresh() -> None:
            w = await asyncio.get_running_loop().run_in_executor(None, Worker, self.memory)
            self.workers.append(w)
            assert self.idle is not None
            self.idle.put_nowait(w)

        self.tasks.add(task := asyncio.get_running_loop().create_task(fresh()))
        task.add_done_callback(self.tasks.discard)
