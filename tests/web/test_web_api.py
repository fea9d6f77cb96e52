"""The JSON API under /api/: every answer is the library's (the same function's JSON and renderings), the server
reads no file of its machine, and bad input is a 4xx with the one line the command line prints."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

import ffncalc

pytestmark = [pytest.mark.web, pytest.mark.xdist_group("web")]

CONFIGS = Path(__file__).resolve().parents[1] / "hf_configs"
QWEN3_MOE = CONFIGS / "qwen3-30b-a3b.json"


def cli_error(tmp_path: Path, name: str, text: str) -> str:
    """The line ``ffncalc count NAME`` prints for a file of this text (run where the file is)."""
    (tmp_path / name).write_text(text)
    out = subprocess.run(
        [sys.executable, "-m", "ffncalc", "count", name], capture_output=True, text=True, cwd=tmp_path, env=os.environ
    )
    assert out.returncode == 2, out.stdout
    return out.stderr.strip().removeprefix("ffncalc: error: ")


def test_every_preset_counts_as_the_library_counts(server):
    for name in ffncalc.presets().names:
        status, body = server.get(f"/api/count?model={name}")
        assert status == 200, body
        assert json.loads(body) == ffncalc.count(name).to_dict(), name


def test_llama3_8b_has_its_published_count(server):
    _, body = server.get("/api/count?model=llama3-8b&seq_len=8192&convention=causal")
    d = json.loads(body)
    assert d["totals"]["params"] == 8_030_261_248
    assert d == ffncalc.count("llama3-8b", seq_len=8192, convention="causal").to_dict()


def test_every_format_is_the_library_rendering(server):
    r = ffncalc.count("mixtral-8x7b", seq_len=4096)
    for fmt, text in (("csv", r.to_csv()), ("markdown", r.to_markdown()), ("latex", r.to_latex()), ("json-text", r.to_json())):
        status, body = server.get(f"/api/count?model=mixtral-8x7b&seq_len=4096&format={fmt}")
        assert (status, body) == (200, text), fmt


def test_the_questions_answer_as_the_library(server):
    cases = [
        ("presets", {}, ffncalc.presets()),
        ("fit", {"model": "llama3-70b", "hardware": "h100-sxm", "gpus": 8}, ffncalc.fit("llama3-70b", hardware="h100-sxm", gpus=8)),
        (
            "infer",
            {"model": "llama3-8b", "prompt": 1000, "generate": 100, "hardware": "h100-sxm"},
            ffncalc.infer("llama3-8b", prompt=1000, generate=100, hardware="h100-sxm"),
        ),
        (
            "train",
            {"model": "gpt3", "tokens": "300B", "hardware": "h100-sxm", "gpus": 1024},
            ffncalc.train("gpt3", tokens="300B", hardware="h100-sxm", gpus=1024),
        ),
        ("compare", {"model": "gpt3", "match": "flops"}, ffncalc.compare("gpt3", match="flops")),
        ("table", {"model": "llama3-8b", "model_b": "mixtral-8x7b"}, ffncalc.table(["llama3-8b", "mixtral-8x7b"])),
    ]
    for job, params, expected in cases:
        status, body = server.post(f"/api/{job}", params)
        assert status == 200, body
        assert json.loads(body) == expected.to_dict(), job
    query = "&".join(f"{k}={quote(str(v))}" for k, v in cases[1][1].items())
    assert json.loads(server.get(f"/api/fit?{query}")[1]) == cases[1][2].to_dict()


def test_an_uploaded_config_counts_as_the_file(server):
    status, body = server.post("/api/count", {"text": QWEN3_MOE.read_text(), "filename": "config.json"})
    assert status == 200, body
    d, lib = json.loads(body), ffncalc.count(str(QWEN3_MOE)).to_dict()
    assert d["model"] == "config.json"
    assert (d["totals"], d["components"]) == (lib["totals"], lib["components"])
    assert d["totals"]["active_params"] < d["totals"]["params"]


def test_an_uploaded_spec(server):
    spec = "vocab_size: 100\nd_model: 16\nn_layers: 2\ncontext_length: 32\nattention: {n_heads: 4}\nffn: {kind: dense, d_ff: 64}\n"
    status, body = server.post("/api/count", {"text": spec, "filename": "tiny.yaml"})
    assert status == 200, body
    assert json.loads(body) == ffncalc.count(ffncalc.Model.from_yaml(spec, label="tiny.yaml")).to_dict()


@pytest.mark.parametrize(
    "name, text",
    [
        ("bad.json", "not json at all"),
        ("bad.json", '{"model_type": "llama", "hidden_size": '),
        ("deep.json", '{"a":' * 10_000 + "1" + "}" * 10_000),
        ("deep.json", "[" * 10_000 + "]" * 10_000),
        ("unknown.json", '{"model_type": "no_such_type", "hidden_size": 64}'),
        ("spec.yaml", "vocab_size: 100\nd_model: -1\n"),
    ],
)
def test_a_bad_upload_is_the_command_lines_line(server, tmp_path, name, text):
    status, body = server.post("/api/count", {"text": text, "filename": name})
    assert status == 400, body
    message = json.loads(body)["error"]
    assert "\n" not in message and "Traceback" not in message
    assert message == cli_error(tmp_path, name, text)


def send(server, head: str, body: bytes = b"") -> tuple[int, str]:
    """A raw request: (status, body) of the answer."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as s:
        s.sendall(head.encode() + body)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head_text, _, payload = data.partition(b"\r\n\r\n")
    return int(head_text.split()[1]), payload.decode()


def test_a_large_upload_is_refused_unread(server):
    from ffncalc.web.app import BODY_LIMIT

    # declared: refused on its Content-Length, before a byte of it is sent (the client waits: Expect: 100-continue)
    declared = (
        "POST /api/count HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {50 * 2**20}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
    )
    status, answer = send(server, declared)
    assert status == 413
    assert "at most 2 MiB" in json.loads(answer)["error"]
    # streamed without a length: refused once past the limit (sent to one byte past it: the server reads it all)
    sizes = (2**20, BODY_LIMIT + 1 - 2**20)
    chunks = b"".join(b"%x\r\n%s\r\n" % (n, b"x" * n) for n in sizes)
    streamed = "POST /api/count HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    status, answer = send(server, streamed, chunks)
    assert status == 413
    assert "at most 2 MiB" in json.loads(answer)["error"]


@pytest.mark.parametrize(
    "model", ["/etc/passwd", "../ffncalc/presets/llama3-8b.yaml", "tests/hf_configs/llama3-8b.json", "~/.bashrc", str(QWEN3_MOE)]
)
def test_a_path_is_never_read(server, model):
    status, body = server.get(f"/api/count?model={quote(model)}")
    assert status == 400
    assert "the server reads no file of its machine" in json.loads(body)["error"]


def test_a_repo_id_only_from_the_cache(server):
    status, body = server.get("/api/count?model=tests/hf_configs")  # a folder here, and a repo id's shape
    assert status == 400
    assert "not in this machine's Hugging Face cache" in json.loads(body)["error"]


def test_no_option_that_reads_a_file(server):
    status, body = server.get("/api/fit?model=llama3-8b&hardware=mine&hardware_file=/etc/passwd")
    assert status == 400
    assert json.loads(body)["error"].startswith("unknown field 'hardware_file' for /api/fit")


def test_bad_options_are_the_librarys_lines(server):
    for query, expected in (
        ("seq_len=abc", "--seq-len 'abc': an integer"),
        ("seq_len=0", "--seq-len 0: from 1 to 1,099,511,627,776"),
        ("convention=nope", "--convention 'nope': choose from "),
    ):
        status, body = server.get(f"/api/count?model=llama3-8b&{query}")
        assert status == 400
        assert json.loads(body)["error"].startswith(expected)
    assert server.post("/api/count", b"[1, 2]")[0] == 400
    assert server.post("/api/count", b"{nope")[0] == 400
    assert server.get("/api/nothing")[0] == 404


def test_the_chart_is_the_plot_commands_figure(server):
    import urllib.request

    from ffncalc.output.plot import save

    for fmt in ("svg", "pdf"):
        with urllib.request.urlopen(f"{server.url}/api/chart?model=llama3-8b&format={fmt}", timeout=120) as r:
            got = r.read()
        assert got == save(ffncalc.plot("share", "llama3-8b"), fmt), fmt
    assert server.get("/api/chart?model=llama3-8b&format=gif")[0] == 400


def test_a_repo_in_the_servers_hub_cache(tmp_path):
    from web.conftest import Server  # a server of its own, with a cache of its own

    snapshot = tmp_path / "models--org--tiny" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text((CONFIGS / "llama3-8b.json").read_text())
    (tmp_path / "models--org--tiny" / "refs").mkdir()
    (tmp_path / "models--org--tiny" / "refs" / "main").write_text("abc123")
    s = Server("--workers", "1", env={"HF_HUB_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "1"})
    try:
        status, body = s.get("/api/count?model=org/tiny")
        assert status == 200, body
        d = json.loads(body)
        assert d["model"] == "org/tiny"
        assert d["totals"] == ffncalc.count(str(CONFIGS / "llama3-8b.json")).to_dict()["totals"]
        assert s.get("/api/count?model=org/absent")[0] == 400
    finally:
        s.stop()


def test_on_loopback_a_request_must_name_it(server):
    for host, status in (("127.0.0.1", 200), ("localhost", 200), ("evil.example", 400)):
        got, _ = send(server, f"GET /api/presets HTTP/1.1\r\nHost: {host}:{server.port}\r\nConnection: close\r\n\r\n")
        assert got == status, host
