"""Generated docs, the examples of the README and of the guide's pages, and figures: reproducible, and checked for
drift."""

import json
import re
import shutil
from pathlib import Path

import pytest

from ffncalc.output import docs as generated

# every preset page holds its verify result; the figures need matplotlib. One worker builds the docs set once for
# every test here (the module's fixture), rather than each worker its own.
pytestmark = [pytest.mark.torch, pytest.mark.xdist_group("docs")]

ROOT = Path(__file__).resolve().parents[2]


def tree_checksum(root: Path) -> str:
    """Every file's path, mode and bytes under ``root`` (caches and git's own files aside)."""
    import hashlib

    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        parts = set(p.relative_to(root).parts)
        if parts & {".git", "__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache", ".venv"} or not p.is_file():
            continue
        h.update(f"{p.relative_to(root)} {p.stat().st_mode:o}\n".encode() + p.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def built():
    """The docs set, built once for every test here (it verifies every preset)."""
    return generated.build()


@pytest.fixture(autouse=True)
def one_build(built, monkeypatch):
    monkeypatch.setattr(generated, "build", lambda verify=True: dict(built))


GUIDE = ROOT / "docs" / "guide"


def hand_written() -> list[Path]:
    """Every markdown page under docs/ that ``ffncalc docs`` did not generate."""
    return sorted(p for p in (ROOT / "docs").rglob("*.md") if not generated.owned(p))


def test_committed_docs_readme_and_pages_are_current(cli, monkeypatch):
    monkeypatch.chdir(ROOT)  # the examples name files relative to the repository's root
    before = tree_checksum(ROOT)
    code, out, _ = cli("docs", "--check", "docs", "--readme", "README.md", "--pages", "docs")
    assert code == 0, out
    assert f"up to date (docs, README.md, {len(hand_written())} pages under docs)" in out
    assert tree_checksum(ROOT) == before  # --check, the examples and all, writes nothing


def test_every_hand_written_page_is_checked_and_listed(built):
    """A page added under docs/ cannot escape the check: --pages docs reads every page docs did not generate, and
    each is in the guide and listed on its index; every generated page is one the docs set still makes."""
    pages = hand_written()
    assert pages == generated.pages(ROOT / "docs")
    assert {p.parent for p in pages} == {GUIDE}, "hand-written pages belong in docs/guide/"
    assert GUIDE / "index.md" in pages and len(pages) > 10
    index, readme = (GUIDE / "index.md").read_text(), (ROOT / "README.md").read_text()
    for page in pages:
        if page.name != "index.md":
            assert f"]({page.name}" in index, f"{page.name} is not listed on docs/guide/index.md"
            assert f"](docs/guide/{page.name}" in readme, f"{page.name} is not linked from README.md"
    # what docs generates: everything outside the guide, and the guide's pages that carry its marker
    made = {p for p in (ROOT / "docs").rglob("*") if p.is_file() and (p.parent != GUIDE or generated.owned(p))}
    assert made == {ROOT / "docs" / path for path in built}  # no stale generated file left behind


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (hyphens and underscores kept), spaces to
    hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.DOTALL | re.MULTILINE)  # no headings in code
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.*)$", text, re.MULTILINE)}


def test_links_of_the_readme_and_the_guide_resolve():
    """Every relative link of README.md, ARCHITECTURE.md and each hand-written page names a file that exists, and a
    heading of it where the link has an anchor."""
    for page in [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *hand_written()]:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            assert resolved.exists(), f"{page.relative_to(ROOT)}: {target}"
            if anchor:
                assert anchor in _anchors(resolved), f"{page.relative_to(ROOT)}: {target}"


def test_drift_is_reported(cli, tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    page = docs / "presets" / "gpt2.md"
    page.write_text(page.read_text().replace("124,439,808", "124,439,809"))
    (docs / "plots" / "sweep.svg").unlink()
    readme = tmp_path / "README.md"  # one checked example of the README's, one figure changed
    example = next(
        m.group(0) for m in re.finditer(r"```text\n\$ ffncalc count gpt3\n.*?```", (ROOT / "README.md").read_text(), re.DOTALL)
    )
    readme.write_text(example.replace("617,558,016", "617,558,017"))
    code, out, _ = cli("docs", "--check", str(docs), "--readme", str(readme))
    assert code == 1
    assert "presets/gpt2.md" in out and "plots/sweep.svg" in out and str(readme) in out
    # a hand-written page's example changed, beside a page docs generated (its examples are not the pages')
    pages = tmp_path / "guide"
    pages.mkdir()
    (pages / "count.md").write_text(example.replace("617,558,016", "617,558,017"))
    (pages / "made.md").write_text(generated.NOTICE + "```text\n$ ffncalc conventions\nnot what it prints\n```\n")
    code, out, _ = cli("docs", "--check", str(docs), "--readme", str(readme), "--pages", str(pages))
    assert code == 1
    assert str(pages / "count.md") in out and "made.md" not in out.splitlines()[0]
    assert out.splitlines()[1].endswith(f"--readme {readme} --pages {pages}")


def test_out_refreshes_the_pages_examples(cli, tmp_path):
    """--out writes each page with its examples' output of today: a text block, a markdown one; a timing and any
    other text stay as they are."""
    page = tmp_path / "page.md"
    bench = "```text\n$ ffncalc bench gpt2 --tokens 16\nmeasured once\n```\n"
    page.write_text(
        "# A page\n\n```text\n$ ffncalc count gpt2 -f csv\nold\n```\n\nProse.\n\n"
        "<!-- $ ffncalc conventions -f markdown -->\nold\n<!-- end -->\n\n" + bench
    )
    code, out, _ = cli("docs", "--out", str(tmp_path / "docs"), "--pages", str(page))
    assert code == 0 and out == f"wrote {len(generated.build())} files under {tmp_path / 'docs'} and refreshed {page}\n"
    text = page.read_text()
    assert text.startswith("# A page\n\n```text\n$ ffncalc count gpt2 -f csv\nconvention,seq_len,component,") and "Prose." in text
    assert "<!-- $ ffncalc conventions -f markdown -->\n**conventions**\n\n| name |" in text
    assert "| 3b1b |" in text and "|\n\n<!-- end -->\n" in text and text.endswith(bench)
    assert cli("docs", "--check", str(tmp_path / "docs"), "--pages", str(page))[0] == 0  # refreshed: current
    code, _, err = cli("docs", "--check", str(tmp_path / "docs"), "--pages", str(tmp_path / "nonesuch"))
    assert code == 2 and "--pages" in err and "no such file or folder" in err


def test_timed_examples_are_well_formed_lines():
    """Timings are shown as they ran, never rerun; their command lines still read as the commands declare them."""
    from ffncalc.cli import parse

    lines = [
        m.group(1)
        for page in [ROOT / "README.md", *hand_written()]
        for m in generated._EXAMPLE.finditer(page.read_text())
        if generated.timed(m.group(1))
    ]
    assert len(lines) >= 5
    for line in lines:
        assert parse.read(line.split()[1:]) is not None, line


def test_specs_of_the_guide_are_valid(cli, tmp_path):
    """Every spec on docs/guide/specs.md counts: the first whole, each fragment after it over the first."""
    import yaml

    blocks = re.findall(r"```yaml\n(.*?)```", (GUIDE / "specs.md").read_text(), re.DOTALL)
    assert len(blocks) >= 4
    base = yaml.safe_load(blocks[0])
    for i, text in enumerate(blocks):
        data = yaml.safe_load(text)
        spec = tmp_path / f"spec{i}.yaml"
        spec.write_text(text if "vocab_size" in data else yaml.safe_dump({**base, **data}))
        code, out, err = cli("count", str(spec), "--format", "json")
        assert code == 0 and json.loads(out)["totals"]["params"] > 0, (text, err)


def _write_gpt_oss_20b(folder: Path) -> None:
    """gpt-oss-20b's 459 tensors in one model.safetensors, in the model's order, their header as json.dumps writes
    it and the data a hole of its size (MXFP4 experts: 16-byte blocks of 32 values and a scale byte per block),
    beside the public config.json."""
    import math
    import struct

    d, vocab, heads, kv, head_dim, experts, d_ff = 2880, 201088, 64, 8, 64, 32, 2880
    tensors = [("model.embed_tokens.weight", "BF16", (vocab, d))]
    for i in range(24):
        p = f"model.layers.{i}."
        tensors += [(p + "input_layernorm.weight", "BF16", (d,)), (p + "post_attention_layernorm.weight", "BF16", (d,))]
        for name, rows in (("q", heads * head_dim), ("k", kv * head_dim), ("v", kv * head_dim)):
            tensors += [(p + f"self_attn.{name}_proj.weight", "BF16", (rows, d)), (p + f"self_attn.{name}_proj.bias", "BF16", (rows,))]
        tensors += [
            (p + "self_attn.o_proj.weight", "BF16", (d, heads * head_dim)),
            (p + "self_attn.o_proj.bias", "BF16", (d,)),
            (p + "self_attn.sinks", "BF16", (heads,)),
            (p + "mlp.router.weight", "BF16", (experts, d)),
            (p + "mlp.router.bias", "BF16", (experts,)),
        ]
        for name, rows, width in (("gate_up_proj", 2 * d_ff, d), ("down_proj", d, d_ff)):
            tensors += [
                (p + f"mlp.experts.{name}_blocks", "U8", (experts, rows, width // 32, 16)),
                (p + f"mlp.experts.{name}_scales", "U8", (experts, rows, width // 32)),
                (p + f"mlp.experts.{name}_bias", "BF16", (experts, rows)),
            ]
    tensors += [("model.norm.weight", "BF16", (d,)), ("lm_head.weight", "BF16", (vocab, d))]
    header, offset = {}, 0
    for name, dtype, shape in tensors:
        size = (2 if dtype == "BF16" else 1) * math.prod(shape)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    folder.mkdir()
    with open(folder / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + offset)
    shutil.copy(ROOT / "tests" / "hf_configs" / "gpt-oss-20b.json", folder / "config.json")


def test_checkpoint_example_is_current(tmp_path, monkeypatch):
    """The checkpoint example of docs/guide/checkpoints.md, its input written here first, prints what the page
    shows."""
    from ffncalc.cli import main

    command, shown = re.search(
        r"```console\n\$ (ffncalc count gpt-oss-20b/ --exact)\n(.*?)```", (GUIDE / "checkpoints.md").read_text(), re.DOTALL
    ).groups()
    _write_gpt_oss_20b(tmp_path / "gpt-oss-20b")
    monkeypatch.chdir(tmp_path)
    assert generated.run_example(command, main) == shown


def test_out_writes_only_its_own_files(cli, tmp_path):
    mine = tmp_path / "notes.md"
    mine.write_text("a user's own page")
    code, out, _ = cli("docs", "--out", str(tmp_path))
    assert code == 0 and mine.read_text() == "a user's own page"
    assert (tmp_path / "index.md").read_text().startswith("<!-- generated by")
    assert not [p for p in tmp_path.rglob(".*") if p.is_file()]  # no temporary file left behind
    assert cli("docs", "--check", str(tmp_path))[0] == 0


def test_every_preset_has_a_verified_page():
    for page in (ROOT / "docs" / "presets").glob("*.md"):
        text = page.read_text()
        assert "## Verified against torch" in text and "components agree" in text, page.name


def test_plot_sweep_takes_timings_of_its_own_width_only(cli, tmp_path):
    records = [
        {"kind": kind, "d_ff": d_ff, "median_ms": ms, "d_model": 1024}
        for kind, d_ff, ms in (("dense", 4096, 2.0), ("gated", 2731, 2.1))
    ]
    good, other, old = tmp_path / "good.json", tmp_path / "other.json", tmp_path / "old.json"
    good.write_text(json.dumps({"model": "m", "bench": records}))
    other.write_text(json.dumps({"bench": [{**r, "d_model": 4096} for r in records]}))
    old.write_text(json.dumps({"bench": [{k: v for k, v in r.items() if k != "d_model"} for r in records]}))
    svg = tmp_path / "sweep.svg"
    args = ("plot", "sweep", "--d-model", "1024", "--ratios", "1:4:1", "--out", str(svg))
    assert cli(*args, "--bench-results", str(good))[0] == 0
    assert b"measured ms per run" in svg.read_bytes()
    for path, found in ((other, "d_model 4,096, not --d-model 1,024"), (old, "d_model unstated")):
        code, _, err = cli(*args, "--bench-results", str(path))
        assert code == 2 and found in err and err.count("\n") == 1


def test_paper_widths(cli, tmp_path):
    """--width column and page: figures at a two-column paper's column (3.3 in) and text width (6.9 in), in points
    in the SVG (72 a inch), give or take what a tight bounding box trims or adds for labels."""
    for width, inches in (("column", 3.3), ("page", 6.9)):
        svg = tmp_path / f"{width}.svg"
        assert cli("plot", "sweep", "--d-model", "1024", "--width", width, "--out", str(svg))[0] == 0
        points = float(re.search(rb'<svg[^>]* width="([0-9.]+)pt"', svg.read_bytes()).group(1))
        assert 0.85 * inches * 72 <= points <= 1.1 * inches * 72, (width, points)


def test_plots(cli, tmp_path):
    png, svg = tmp_path / "share.png", tmp_path / "sweep.svg"
    assert cli("plot", "share", "gpt3", "llama2-7b", "mixtral-8x7b", "--out", str(png))[0] == 0
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert cli("plot", "sweep", "--d-model", "1024", "--ratios", "1:4:1", "--out", str(svg))[0] == 0
    first = svg.read_bytes()
    assert b"<svg" in first and b"<dc:date>" not in first
    cli("plot", "sweep", "--d-model", "1024", "--ratios", "1:4:1", "--out", str(svg))
    assert svg.read_bytes() == first  # the same figure, the same bytes
    pdf = tmp_path / "share.pdf"
    assert cli("plot", "share", "gpt3", "--out", str(pdf))[0] == 0
    assert pdf.read_bytes().startswith(b"%PDF-") and b"CreationDate" not in pdf.read_bytes()
    code, _, err = cli("plot", "share", "gpt3", "--out", str(tmp_path / "share.jpg"))
    assert code == 2 and "name an .svg, .pdf or .png file" in err


def test_the_readmes_quoted_training_figures_are_the_plans():
    """The README quotes the GPT-3 training plan in its prose (its whole output is the planning guide's example):
    the figures it names are the plan's, rounded as it rounds them."""
    import ffncalc

    readme = (ROOT / "README.md").read_text()
    plan = ffncalc.train("gpt3", tokens="300B", convention="6n", recompute="full", tflops=140, gpus=1024).figures
    assert f"{plan['train_flops'].value:.2e}".replace("e+", "e") in readme
    assert f"{round(plan['gpu_hours'].value):,} GPU-hours" in readme
    assert f"{plan['wall_clock_days'].value:.1f} days" in readme
