"""The page in a real browser (the system's Chromium, headless): the numbers it shows are the library's, read off the
rendered page; options, uploads, the fit panel, the comparison and the downloads work; it fits a phone's width."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ffncalc
from ffncalc.output.sheet import one_line

pytestmark = [pytest.mark.web, pytest.mark.xdist_group("web")]

CONFIGS = Path(__file__).resolve().parents[1] / "hf_configs"
QWEN3_MOE = CONFIGS / "qwen3-30b-a3b.json"


def shown(n: int) -> str:
    return f"{n:,}"


def counted(page, before: str = "") -> None:
    """Wait until the shown count is another than ``before`` (the page answered)."""
    page.wait_for_function(
        "([b]) => { const t = document.getElementById('model-title'); return t && t.textContent && t.textContent !== b; }",
        arg=[before],
        timeout=60_000,
    )


def rows(page, table: str) -> list[list[str]]:
    return page.eval_on_selector_all(f"#{table} tbody tr", "trs => trs.map(tr => [...tr.cells].map(td => td.textContent))")


def test_llama3_8b_from_the_url(page):
    page.open("?model=llama3-8b")
    lib = ffncalc.count("llama3-8b")
    assert page.text_content("#total-params") == shown(8_030_261_248) == shown(lib.params)
    assert page.text_content("#active-params") == shown(lib.active_params)
    assert page.text_content("#flops-per-token") == shown(lib.forward_flops_per_token)
    table = rows(page, "components")
    assert [r[0] for r in table] == [c.name for c in lib.components]
    assert [r[4] for r in table] == [shown(c.params) for c in lib.components]
    assert lib.convention in page.text_content("#convention-info")


SAMPLE = ffncalc.presets().names[::12]  # a spread of the shipped presets, every family's size


@pytest.mark.parametrize("name", SAMPLE)
def test_a_sample_of_presets_read_off_the_page(page, name):
    page.open(f"?model={name}")
    lib = ffncalc.count(name)
    assert page.text_content("#model-title") == lib.model
    assert page.text_content("#total-params") == shown(lib.params)
    assert page.text_content("#active-params") == shown(lib.active_params)
    expected = [
        [c.name, shown(c.count), shown(c.params), shown(c.active_params), shown(c.forward_flops_per_token)] for c in lib.components
    ]
    assert [[r[0], r[3], r[4], r[5], r[6]] for r in rows(page, "components")] == expected
    totals = {r[0]: r[1] for r in rows(page, "totals")}
    assert totals == {k.replace("_", " "): shown(v) for k, v in lib.totals.items()}


def test_the_url_holds_the_view(page):
    page.open("?model=llama3-8b&seq_len=8192&convention=causal")
    lib = ffncalc.count("llama3-8b", seq_len=8192, convention="causal")
    assert page.text_content("#flops-per-token") == shown(lib.forward_flops_per_token)
    assert page.input_value("#convention") == "causal"
    assert "seq_len=8192" in page.url and "convention=causal" in page.url


def test_options_change_the_count(page):
    page.open("?model=mixtral-8x7b")
    before = page.text_content("#flops-per-token")
    page.select_option("#convention", "6n")
    page.fill("#seq-len", "4096")
    page.dispatch_event("#seq-len", "change")
    lib = ffncalc.count("mixtral-8x7b", seq_len=4096, convention="6n")
    page.wait_for_function(
        "([v]) => document.getElementById('flops-per-token').textContent === v", arg=[shown(lib.forward_flops_per_token)]
    )
    assert page.text_content("#flops-per-token") != before
    assert page.text_content("#active-params") == shown(lib.active_params)
    assert "convention=6n" in page.url and "seq_len=4096" in page.url


def test_choosing_a_preset(page):
    page.open()
    page.select_option("#preset", "gpt3-175b")
    counted(page)
    assert page.text_content("#total-params") == shown(ffncalc.count("gpt3").params)
    assert "model=gpt3-175b" in page.url


def test_a_pasted_config(page):
    page.open()
    page.click("#upload summary")
    page.fill("#config-text", QWEN3_MOE.read_text())
    page.click("#use-text")
    counted(page)
    lib = ffncalc.count(str(QWEN3_MOE))
    assert lib.active_params < lib.params
    assert page.text_content("#total-params") == shown(lib.params)
    assert page.text_content("#active-params") == shown(lib.active_params)


def test_an_uploaded_file(page, tmp_path):
    page.open()
    path = tmp_path / "config.json"
    path.write_text(QWEN3_MOE.read_text())
    page.set_input_files("#config-file", str(path))
    counted(page)
    assert page.text_content("#model-title") == "config.json"
    assert page.text_content("#total-params") == shown(ffncalc.count(str(QWEN3_MOE)).params)


@pytest.mark.parametrize(
    "text",
    ["not json at all", '{"a":' * 10_000 + "1" + "}" * 10_000, '{"model_type": "no_such_type", "hidden_size": 64}'],
    ids=["not-json", "nested", "unknown-type"],
)
def test_a_bad_upload_is_one_line_on_the_page(page, tmp_path, text):
    page.open("?model=llama3-8b")
    path = tmp_path / "bad.json"
    path.write_text(text)
    page.set_input_files("#config-file", str(path))
    page.wait_for_selector("#error:not([hidden])")
    message = page.text_content("#error")
    with pytest.raises(ffncalc.InputError) as exc:
        ffncalc.Model.from_text(text, label="bad.json")
    assert message == one_line(exc.value)
    assert "\n" not in message and "Traceback" not in message


def test_a_huge_upload_is_refused(page, tmp_path):
    page.open()
    path = tmp_path / "big.json"
    with open(path, "wb") as f:
        f.truncate(50 * 2**20)
    page.set_input_files("#config-file", str(path))
    page.wait_for_selector("#error:not([hidden])")
    assert page.text_content("#error") == "big.json: 52,428,800 bytes; at most 2 MiB (a config.json or spec is kilobytes)"


def test_fit_llama3_70b_on_8_h100(page):
    page.open("?model=llama3-70b")
    page.select_option("#question", "fit")
    page.select_option("#hardware", "h100-sxm")
    page.fill("#gpus", "8")
    page.click("#run-plan")
    page.wait_for_selector("#plan-result:not([hidden])")
    lib = ffncalc.fit("llama3-70b", hardware="h100-sxm", gpus=8, dtype="bf16", batch=1)
    assert page.text_content("#verdict") == lib.notes[0]
    assert lib.notes[0].startswith("fits on 8 × h100-sxm")
    figures = {r[0]: r[1] for r in rows(page, "plan-figures")}
    assert figures[lib["max_context"].label] == shown(lib["max_context"].value)
    assert "question=fit" in page.url and "gpus=8" in page.url


def test_infer_and_train(page):
    page.open("?model=llama3-8b")
    page.select_option("#question", "infer")
    page.click("#run-plan")
    page.wait_for_selector("#plan-result:not([hidden])")
    lib = ffncalc.infer("llama3-8b", prompt=1024, generate=256, hardware="h100-sxm", gpus=1, dtype="bf16", batch=1)
    assert page.text_content("#plan-title") == lib.title
    page.select_option("#question", "train")
    page.click("#run-plan")
    train = ffncalc.train("llama3-8b", tokens="1T", hardware="h100-sxm", gpus=1, dtype="bf16")
    page.wait_for_function("([t]) => document.getElementById('plan-title').textContent === t", arg=[train.title])


def test_two_models_side_by_side(page):
    page.open("?model=llama3-8b")
    page.select_option("#preset-b", "mixtral-8x7b")
    page.click("#run-compare")
    page.wait_for_selector("#comparison:not([hidden])")
    lib = ffncalc.table(["llama3-8b", "mixtral-8x7b"]).to_dict()["models"]
    table = {r[0]: r[1:] for r in rows(page, "comparison")}
    assert table["params"] == [shown(lib[0]["params"]), shown(lib[1]["params"])]
    assert table["active params"] == [shown(lib[0]["active_params"]), shown(lib[1]["active_params"])]
    assert "model_b=mixtral-8x7b" in page.url


def test_sorting_by_a_column(page):
    page.open("?model=llama3-8b")
    page.click("#components th[data-key=params]")
    first = rows(page, "components")[0]
    biggest = max(ffncalc.count("llama3-8b").components, key=lambda c: c.params)
    assert first[4] == shown(biggest.params)
    assert page.get_attribute("#components th[data-key=params]", "aria-sort") == "descending"


def test_downloads(page, tmp_path):
    page.open("?model=llama3-8b&seq_len=4096")
    lib = ffncalc.count("llama3-8b", seq_len=4096)
    for fmt, expected in (("csv", lib.to_csv()), ("json", lib.to_json()), ("markdown", lib.to_markdown()), ("latex", lib.to_latex())):
        with page.expect_download() as got:
            page.click(f"[data-download={fmt}]")
        target = tmp_path / got.value.suggested_filename
        got.value.save_as(target)
        assert target.read_text() == expected, fmt
    assert json.loads((tmp_path / "llama3-8b.json").read_text()) == lib.to_dict()
    with page.expect_download() as got:
        page.click("#download-svg")
    got.value.save_as(tmp_path / "chart.svg")
    svg = (tmp_path / "chart.svg").read_text()
    assert svg.startswith("<svg") and "embed.weight" in svg
    with page.expect_download() as got:
        page.click("#download-pdf")
    got.value.save_as(tmp_path / "chart.pdf")
    assert (tmp_path / "chart.pdf").read_bytes().startswith(b"%PDF")


@pytest.mark.parametrize("width, height", [(1280, 800), (390, 844)], ids=["desktop", "phone"])
def test_no_overflow_at_desktop_and_phone_widths(browser, server, tmp_path, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.goto(server.url + "/?model=llama3-70b&question=fit&hardware=h100-sxm&gpus=8&model_b=mixtral-8x7b")
    page.wait_for_selector("body[data-ready=true]", timeout=60_000)
    page.screenshot(path=str(tmp_path / f"page-{width}.png"))
    page.screenshot(path=str(tmp_path / f"page-{width}-full.png"), full_page=True)
    scroll, client = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert scroll <= client
    assert page.is_visible("#verdict") and page.is_visible("#comparison")
    assert (tmp_path / f"page-{width}.png").stat().st_size > 0
    context.close()
