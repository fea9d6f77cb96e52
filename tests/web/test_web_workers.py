"""What answers a request: a worker process, killed and replaced when a question runs past its time or the process
dies, and the names a request may give (presets, repos in the local Hugging Face cache; never a path)."""

from __future__ import annotations

import asyncio
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import ffncalc

pytestmark = [pytest.mark.web, pytest.mark.xdist_group("web")]

CONFIGS = Path(__file__).resolve().parents[1] / "hf_configs"


def test_a_question_past_its_time_is_stopped_and_the_pool_goes_on():
    from ffncalc.web.workers import Pool

    async def scenario():
        pool = Pool(1, timeout=60)
        await pool.start()
        try:
            pool.timeout = 0.001  # no question is answered this fast: this one is cut off
            status, answer = await pool.run("presets", {})
            assert status == 503 and "took longer than" in answer["error"]
            pool.timeout = 60
            status, answer = await pool.run("count", {"model": "llama3-8b"})  # a fresh worker answers
            assert status == 200 and answer["json"] == ffncalc.count("llama3-8b").to_dict()
            pool.workers[0].process.kill()  # a worker that dies (as one out of memory would)
            pool.workers[0].process.join()
            status, answer = await pool.run("count", {"model": "gpt2"})
            assert status == 500 and "ended before answering" in answer["error"]
            status, answer = await pool.run("count", {"model": "gpt2"})
            assert status == 200 and answer["json"]["totals"]["params"] == ffncalc.count("gpt2").params
        finally:
            await pool.stop()

    with ThreadPoolExecutor(1) as thread:  # a loop of its own: the browser's tests may hold this thread's
        thread.submit(asyncio.run, scenario()).result()


def test_a_repo_in_the_local_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants  # the test extra's transformers brings it

    from ffncalc.web import jobs

    snapshot = tmp_path / "models--org--tiny" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    shutil.copy(CONFIGS / "llama3-8b.json", snapshot / "config.json")
    (tmp_path / "models--org--tiny" / "refs").mkdir()
    (tmp_path / "models--org--tiny" / "refs" / "main").write_text("abc123")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    m = jobs.named("org/tiny")
    assert ffncalc.count(m).to_dict()["totals"] == ffncalc.count(str(CONFIGS / "llama3-8b.json")).to_dict()["totals"]
    for name in ("org/other", "org/tiny@../../../etc", "org/tiny@/etc"):
        with pytest.raises(ffncalc.InputError, match="not in this machine's Hugging Face cache"):
            jobs.named(name)


@pytest.mark.parametrize("name", ["/etc/passwd", "./llama3-8b", "..", "~root", "a/b/c", "C:\\x"])
def test_a_path_is_refused(name):
    from ffncalc.web import jobs

    with pytest.raises(ffncalc.InputError, match="the server reads no file of its machine"):
        jobs.named(name)


def test_serve_binds_loopback_and_warns_otherwise(monkeypatch, capsys):
    import uvicorn

    from ffncalc.web import serve

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append(kw))
    serve()
    assert calls[-1]["host"] == "127.0.0.1" and calls[-1]["port"] == 8000
    assert "warning" not in capsys.readouterr().err
    serve("0.0.0.0", 8123)
    assert calls[-1]["host"] == "0.0.0.0"
    assert "ffncalc: warning: serving on 0.0.0.0, reachable from other machines" in capsys.readouterr().err


@pytest.mark.skipif(not Path("/proc/self/limits").exists(), reason="reads the workers' limits from /proc (Linux)")
def test_each_worker_is_limited_in_memory(server):
    from ffncalc.web.workers import MEMORY_BYTES

    children = [int(c) for task in Path(f"/proc/{server.process.pid}/task").iterdir() for c in (task / "children").read_text().split()]
    limits = []
    for pid in children:
        line = next(x for x in Path(f"/proc/{pid}/limits").read_text().splitlines() if x.startswith("Max address space"))
        limits.append(line.split()[3])
    assert limits.count(str(MEMORY_BYTES)) == 2, limits  # serve --workers 2; the rest (multiprocessing's tracker) unlimited
