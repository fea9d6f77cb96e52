"""Measured links: nccl-tests' bus bandwidth factors, the α–β fit, and a links file read into infer and fit in place
of the table's link figures (no torch: the analytic path reads the file)."""

import json
import subprocess
import sys

import pytest

import ffncalc
from ffncalc.analysis import linkfile
from ffncalc.errors import InputError


def links_file(tmp_path, *entries, name="links.json"):
    """A links file holding ``entries`` (collective, ranks, α seconds, β seconds a byte)."""
    path = tmp_path / name
    body = [{"collective": c, "ranks": n, "fit": {"latency_s": a, "seconds_per_byte": b}} for c, n, a, b in entries]
    path.write_text(json.dumps({"schema": "ffncalc.links/1", "collectives": body}))
    return str(path)


@pytest.mark.parametrize(
    "collective, n, factor",
    [
        # nccl-tests doc/PERFORMANCE.md. All-reduce: a reduce-scatter then an all-gather, each rank sending
        # (n − 1)/n of the buffer in each: 2(n − 1)/n.
        ("all_reduce", 2, 1.0),
        ("all_reduce", 4, 1.5),  # 2 · 3/4
        ("all_reduce", 8, 1.75),  # 2 · 7/8
        # All-gather: each rank receives the n − 1 other ranks' 1/n shares of the output: (n − 1)/n.
        ("all_gather", 2, 0.5),
        ("all_gather", 8, 0.875),
        # Reduce-scatter: each rank sends the n − 1 shares it does not keep: (n − 1)/n.
        ("reduce_scatter", 4, 0.75),
        # All-to-all: each rank keeps 1/n of its buffer and sends the rest: (n − 1)/n.
        ("all_to_all", 4, 0.75),
        # Send/receive: the message crosses once.
        ("send_recv", 2, 1.0),
        ("send_recv", 8, 1.0),
    ],
)
def test_bus_bandwidth_factors(collective, n, factor):
    assert linkfile.bus_factor(collective, n) == pytest.approx(factor, rel=1e-15)


def test_the_fit_reproduces_synthetic_times():
    """Times made exactly of α = 25 µs and 40 GB/s (β = 1/(40·10⁹) s a byte) over 8 B to 1 GiB: the fit returns
    them, and its bandwidths are 40 GB/s as algbw and 2 · 3/4 · 40 = 60 GB/s as all-reduce busbw over 4 ranks."""
    alpha, beta = 25e-6, 1 / 40e9
    sizes = [1 << k for k in range(3, 31)]
    f = linkfile.fit("all_reduce", 4, sizes, [alpha + beta * x for x in sizes])
    assert f.latency_s == pytest.approx(alpha, rel=1e-9)
    assert f.s_per_byte == pytest.approx(beta, rel=1e-9)
    assert f.algbw_gbs == pytest.approx(40.0, rel=1e-9)
    assert f.busbw_gbs == pytest.approx(60.0, rel=1e-9)
    assert (f.low, f.high, f.points, f.clamped) == (8, 1 << 30, 28, False)


def test_two_sizes_are_a_line_through_both():
    """Two points: α and β solve t₁ = α + β·x₁, t₂ = α + β·x₂; 1 ms at 1 KiB and 2 ms at 2 KiB give β = 1 ms / 1 KiB
    and α = 0."""
    f = linkfile.fit("send_recv", 2, [1024, 2048], [1e-3, 2e-3])
    assert f.s_per_byte == pytest.approx(1e-3 / 1024, rel=1e-12)
    assert f.latency_s == pytest.approx(0.0, abs=1e-15)


def test_a_negative_latency_is_clamped_to_zero():
    """Times 1 µs below a line through the origin (t = β·x − 1 µs) fit α < 0: α is set to 0 and β refitted."""
    sizes = [1 << k for k in range(10, 20)]
    f = linkfile.fit("all_reduce", 2, sizes, [x * 1e-9 - 1e-6 for x in sizes])
    assert f.clamped and f.latency_s == 0.0 and f.s_per_byte > 0


def test_one_size_fits_nothing():
    with pytest.raises(InputError, match="--sizes"):
        linkfile.fit("all_reduce", 2, [8, 8], [1e-5, 1e-5])


# llama3-70b: d_model 8,192, 80 layers; each layer ends its attention and its FFN with an all-reduce over tp.
LAYERS, D_MODEL = 80, 8192


def test_a_huge_latency_makes_the_all_reduce_time(tmp_path):
    """A links file whose all-reduce over 8 ranks takes α = 1 s a call and β = 10⁻¹⁰ s a byte: one decode step of
    one sequence over tp 8 all-reduces 160 times (2 a layer) 1 token × 8,192 × 2 bytes (16-bit activations), so its
    communication is 160 · (1 + 16,384 · 10⁻¹⁰) s; the note names the file."""
    path = links_file(tmp_path, ("all_reduce", 8, 1.0, 1e-10))
    plan = ffncalc.infer("llama3-70b", prompt=64, generate=8, hardware="h100-sxm", gpus=8, tp=8, links=path)
    assert plan.answer["decode_comm_s"].value == pytest.approx(2 * LAYERS * (1.0 + D_MODEL * 2 * 1e-10), rel=1e-12)
    assert path in plan.answer["decode_comm_s"].source
    assert plan.to_dict()["inputs"]["links"] == path
    assert any(n.startswith(f"communication (measured in {path}: all_reduce over 8 ranks") for n in plan.to_dict()["notes"])


def test_the_nearest_count_is_applied_through_its_bus_bandwidth(tmp_path):
    """Measured over 2 ranks only: its bus bandwidth (2 · 1/2 / β = 1/β) carries to tp 8, whose ring moves
    2 · 7/8 of the bytes: 1.75 · 16,384 · β + α a call."""
    alpha, beta = 1e-3, 1e-9
    path = links_file(tmp_path, ("all_reduce", 2, alpha, beta))
    plan = ffncalc.infer("llama3-70b", prompt=64, generate=8, hardware="h100-sxm", gpus=8, tp=8, links=path)
    assert plan.answer["decode_comm_s"].value == pytest.approx(2 * LAYERS * (alpha + 1.75 * D_MODEL * 2 * beta), rel=1e-12)
    assert any("applied to tp 8" in n for n in plan.to_dict()["notes"])


def test_the_exact_count_is_preferred_to_another(tmp_path):
    path = links_file(tmp_path, ("all_reduce", 2, 5.0, 1e-9), ("all_reduce", 8, 1.0, 1e-10))
    plan = ffncalc.infer("llama3-70b", prompt=64, generate=8, hardware="h100-sxm", gpus=8, tp=8, links=path)
    assert plan.answer["decode_comm_s"].value == pytest.approx(2 * LAYERS * (1.0 + D_MODEL * 2 * 1e-10), rel=1e-12)


def test_what_the_file_does_not_hold_stays_the_tables(tmp_path):
    """A file with a send/receive only: tp's all-reduces keep the table's link, so the figure is the table's."""
    path = links_file(tmp_path, ("send_recv", 2, 1.0, 1e-9))
    kw = dict(prompt=64, generate=8, hardware="h100-sxm", gpus=8, tp=8)
    table = ffncalc.infer("llama3-70b", **kw).answer["decode_comm_s"].value
    assert ffncalc.infer("llama3-70b", links=path, **kw).answer["decode_comm_s"].value == table


def test_pipeline_hand_offs_take_the_send_recv_fit(tmp_path):
    """pp 2 of tp 1 (within a node): one hand-off a decode step from stage 0 to stage 1, of 1 token × 8,192 × 2
    bytes, at α + bytes / (1/β) = 0.5 s + 16,384 · 10⁻⁹ s."""
    path = links_file(tmp_path, ("send_recv", 2, 0.5, 1e-9))
    plan = ffncalc.infer("llama3-70b", prompt=64, generate=8, hardware="h100-sxm", gpus=2, tp=1, pp=2, links=path)
    assert plan.answer["decode_comm_s"].value == pytest.approx(0.5 + D_MODEL * 2 * 1e-9, rel=1e-12)


def test_fit_names_the_file(tmp_path):
    path = links_file(tmp_path, ("all_reduce", 2, 1e-5, 1e-10))
    plan = ffncalc.fit("llama3-8b", hardware="h100-sxm", gpus=2, tp=2, links=path)
    assert plan.to_dict()["inputs"]["links"] == path
    assert any(f"measured in {path}" in n for n in plan.to_dict()["notes"])


def test_answers_without_links_are_the_tables(tmp_path):
    """No --links: no links input, and the note names the table's link."""
    plan = ffncalc.infer("llama3-70b", prompt=64, generate=8, hardware="h100-sxm", gpus=8, tp=8)
    assert "links" not in plan.to_dict()["inputs"]
    assert any(n.startswith("communication (h100-sxm's scale-up link") for n in plan.to_dict()["notes"])


def test_reading_a_links_file_imports_no_torch(tmp_path):
    path = links_file(tmp_path, ("all_reduce", 8, 1e-5, 1e-10))
    code = (
        "import sys, ffncalc; "
        f"ffncalc.infer('llama3-70b', prompt=64, generate=8, hardware='h100-sxm', gpus=8, tp=8, links={path!r}); "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr


def one(collective="all_reduce", ranks=2, **fit):
    """A links file's record of one entry."""
    return {"schema": "ffncalc.links/1", "collectives": [{"collective": collective, "ranks": ranks, "fit": fit}]}


BAD = [
    ("missing", None, "No such file"),
    ("not json", "{", "not JSON"),
    ("schema", {"schema": "ffncalc.bench/1", "collectives": []}, "schema"),
    ("no list", {"schema": "ffncalc.links/1", "collectives": {}}, "collectives"),
    ("collective", one("gather"), "collectives[0].collective"),
    ("ranks", one(ranks=1), "collectives[0].ranks"),
    ("latency", one(latency_s=-1, seconds_per_byte=1e-9), "collectives[0].fit.latency_s"),
    ("beta", one(latency_s=0, seconds_per_byte="fast"), "collectives[0].fit.seconds_per_byte"),
]


@pytest.mark.parametrize("case, content, field", BAD, ids=[b[0] for b in BAD])
@pytest.mark.parametrize("command", ["infer", "fit"])
def test_bad_links_files_are_one_line(cli, tmp_path, case, content, field, command):
    path = tmp_path / "links.json"
    if content is not None:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    args = {"infer": ["infer", "llama3-8b", "--prompt", "8", "--generate", "8"], "fit": ["fit", "llama3-8b"]}[command]
    code, out, err = cli(*args, "--hardware", "h100-sxm", "--gpus", "2", "--tp", "2", "--links", str(path))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and f"--links {path}" in err and field in err and "Traceback" not in err


def test_links_beside_link_gbs_is_refused(cli, tmp_path):
    path = links_file(tmp_path, ("all_reduce", 2, 1e-5, 1e-10))
    code, _, err = cli("infer", "llama3-8b", "--prompt", "8", "--generate", "8", "--gpus", "2", "--links", path, "--link-gbs", "100")
    assert code == 2 and "--links" in err and "--link-gbs" in err and len(err.strip().splitlines()) == 1


def test_expert_parallel_dispatch_and_combine_take_the_all_to_all_fit(tmp_path):
    """mixtral-8x7b (d_model 4,096, 32 layers, 2 of 8 experts a token) on 2 devices, tp 1, ep 2: the experts shared
    by 2 copies, so each mixture layer dispatches and combines by all-to-alls in place of the FFN's all-reduce (tp 1
    has no all-reduce of its own). One sequence: a copy decodes 1 token, whose 2 expert slots of 4,096 16-bit values
    (16,384 bytes) each all-to-all carries; at the fit's bus bandwidth (n − 1)/n / β, of which (n − 1)/n cross:
    α + 16,384 · β a call, 2 calls a layer, 64 a decode step. (tp 1 shows no communication figure of its own: the
    step's time holds it, so two files that differ in α alone, or in β alone, differ by 64 · Δα, or 64 · 16,384 · Δβ.)"""
    kw = dict(prompt=64, generate=8, hardware="h100-sxm", gpus=2, tp=1, ep=2)

    def step(alpha, beta, name):
        path = links_file(tmp_path, ("all_to_all", 2, alpha, beta), name=name)
        plan = ffncalc.infer("mixtral-8x7b", links=path, **kw)
        assert any("all_to_all over 2 ranks" in n for n in plan.to_dict()["notes"])
        return plan.answer["decode_step_s"].value

    base = step(0.0, 1e-9, "a.json")
    assert step(0.25, 1e-9, "b.json") - base == pytest.approx(64 * 0.25, rel=1e-9)
    assert step(0.0, 3e-9, "c.json") - base == pytest.approx(64 * 2 * 4096 * 2 * 2e-9, rel=1e-6)


def test_without_a_device_the_note_still_names_the_file(tmp_path):
    """No --hardware: no rates to charge the link to, but the plan says which link it would use."""
    path = links_file(tmp_path, ("all_reduce", 8, 1e-5, 1e-10))
    notes = ffncalc.infer("llama3-70b", prompt=64, generate=8, gpus=8, tp=8, links=path).to_dict()["notes"]
    assert any(n.startswith(f"communication (measured in {path}: all_reduce over 8 ranks: 10 µs") for n in notes)
