"""Writing the user's files: atomic, with the mode the umask gives, through links, to streams; docs writes only
its own files, all or none; no temporary file survives a failure, a full disk or a signal."""

import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from ffncalc import files
from ffncalc.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
CONFIG = str(ROOT / "tests" / "hf_configs" / "deepseek-v2-lite.json")


def leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.rglob(".*") if p.is_file()]


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_new_file_mode_follows_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        files.write_atomic(tmp_path / "a.yaml", "x: 1\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.yaml").stat().st_mode) == mode


def test_replacing_keeps_the_mode(tmp_path):
    target = tmp_path / "a.yaml"
    target.write_text("old\n")
    target.chmod(0o640)
    files.write_atomic(target, "new\n")
    assert target.read_text() == "new\n" and stat.S_IMODE(target.stat().st_mode) == 0o640
    assert not leftovers(tmp_path)


def test_written_through_a_symlink(tmp_path):
    real = tmp_path / "real" / "spec.yaml"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "link.yaml"
    link.symlink_to(real)
    files.write_atomic(link, "new\n")
    assert link.is_symlink() and real.read_text() == "new\n"
    assert not leftovers(tmp_path)


def test_a_pipe_is_written_as_a_stream(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    files.write_atomic(fifo, "through the pipe\n")
    reader.join(10)
    assert got == [b"through the pipe\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)  # still the pipe, not a file put in its place
    assert not leftovers(tmp_path)


def test_dev_null_stays_a_device():
    files.write_atomic("/dev/null", "nothing\n")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(InputError, match="is a directory"):
        files.write_atomic(tmp_path, "x")


def test_all_or_nothing(tmp_path):
    (tmp_path / "keep.md").write_text("before\n")
    (tmp_path / "plots").write_text("a file where a folder is needed\n")
    with pytest.raises(InputError):
        files.write_all({tmp_path / "keep.md": "after\n", tmp_path / "plots" / "a.svg": "<svg/>"})
    assert (tmp_path / "keep.md").read_text() == "before\n"
    assert not leftovers(tmp_path)


def test_rollback_when_a_rename_fails(tmp_path, monkeypatch):
    """The second rename fails: the first file gets its old content back."""
    (tmp_path / "a.md").write_text("old a\n")
    real = os.replace
    calls = []

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(files.os, "replace", replace)
    with pytest.raises(InputError, match="No space left"):
        files.write_all({tmp_path / "a.md": "new a\n", tmp_path / "b.md": "new b\n"})
    monkeypatch.setattr(files.os, "replace", real)
    assert (tmp_path / "a.md").read_text() == "old a\n" and not (tmp_path / "b.md").exists()
    assert not leftovers(tmp_path)


def test_interrupt_while_staging_leaves_nothing(tmp_path, monkeypatch):
    real = files._stage
    count = []

    def stage(*args):
        count.append(1)
        if len(count) == 2:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(files, "_stage", stage)
    with pytest.raises(KeyboardInterrupt):
        files.write_all({tmp_path / "a.md": "a", tmp_path / "b.md": "b"})
    assert not list(tmp_path.iterdir())


def _run(args, cwd, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "ffncalc", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=120, **kw
    )


def test_file_size_limit_is_one_line(tmp_path):
    """A write past RLIMIT_FSIZE (as a full disk): one line, exit 2, no file, no temporary file."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))

    (tmp_path / "spec.yaml").write_text("kept\n")
    out = _run(["import", CONFIG, "--out", "spec.yaml"], tmp_path, preexec_fn=limit)
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("ffncalc: error: --out spec.yaml: cannot write")
    assert "Traceback" not in out.stderr
    assert (tmp_path / "spec.yaml").read_text() == "kept\n" and not leftovers(tmp_path)


def test_sigterm_mid_write_leaves_no_temporary_file(tmp_path):
    """The write is held once its temporary file exists; SIGTERM then ends the run, and the file goes."""
    script = textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from ffncalc import files
        from ffncalc.cli import _on_signals
        _on_signals()
        real = os.fchmod
        def slow(fd, mode):
            real(fd, mode)
            print("staged", flush=True)
            time.sleep(60)
        files.os.fchmod = slow
        files.write_atomic("out.yaml", "x: 1\\n")
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "staged\n"
    assert leftovers(tmp_path)  # the temporary file exists now
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 128 + signal.SIGTERM
    assert not list(tmp_path.iterdir())


# --- docs ------------------------------------------------------------------------------------------


@pytest.fixture
def small_docs(monkeypatch):
    """A docs set of two files, so these tests need not build the real one."""
    from ffncalc.output import docs

    built = {"index.md": (docs.NOTICE + "# index\n").encode(), "plots/a.svg": docs._marked(b"<?xml?>\n<svg/>\n")}
    monkeypatch.setattr(docs, "build", lambda verify=True: built)
    return built


def test_docs_refuses_a_users_file(cli, tmp_path, small_docs):
    (tmp_path / "index.md").write_text("my own index\n")
    code, _, err = cli("docs", "--out", str(tmp_path))
    assert code == 2 and "index.md" in err and "--force" in err and err.count("\n") == 1
    assert (tmp_path / "index.md").read_text() == "my own index\n"
    assert not (tmp_path / "plots").exists()  # none of the set was written
    code, _, _ = cli("docs", "--out", str(tmp_path), "--force")
    assert code == 0 and (tmp_path / "index.md").read_bytes() == small_docs["index.md"]
    # its own files it replaces without --force
    assert cli("docs", "--out", str(tmp_path))[0] == 0
    assert not leftovers(tmp_path)


def test_docs_examples_run_in_a_scratch_folder(cli, tmp_path, small_docs):
    """An example that writes a file (import --out) writes nothing of the user's during --check."""
    readme = tmp_path / "README.md"
    readme.write_text(f"```text\n$ ffncalc import {CONFIG} --out spec.yaml\nwrote spec.yaml\n```\n")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
        code, out, _ = cli("docs", "--check", str(tmp_path / "docs"), "--readme", str(readme))
    finally:
        os.chdir(cwd)
    assert code == 1  # the docs folder is missing; the README is current
    assert out.splitlines()[0].endswith("out of date: index.md, plots/a.svg")
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
