"""The HTML report in headless Chromium: renders without console errors, the filter box and
the selects filter, headers sort, rows expand, pages turn; a screenshot is kept under
test-artifacts/. Chromium comes from scripts/install-browser.sh (run by `make test`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser_support import chromium, open_page
from queryeval.reports._html import write_html
from queryeval.runner import load_suite, plan_run, run_suite
from reports_plugin import make_suite

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    folder = tmp_path_factory.mktemp("grid")
    run_suite(load_suite(make_suite(folder)), folder / "run", progress=False)
    run = folder / "run"
    records = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]
    return run, records


@pytest.fixture(scope="module")
def browser(grid: tuple[Path, list[dict]]) -> Iterator[Any]:
    """Chromium, started after the runs (Playwright's sync API holds an event loop)."""
    with chromium() as b:
        yield b


def _count(page: Any) -> str:
    return page.inner_text("#count")


def _wait_count(page: Any, before: str) -> str:
    page.wait_for_function(
        "b => document.getElementById('count').textContent !== b", arg=before, timeout=10_000
    )
    return _count(page)


def test_report_renders_filters_sorts_and_expands(
    browser: Any, grid: tuple[Path, list[dict]]
) -> None:
    run, records = grid
    page, errors = open_page(browser, run / "report.html")
    assert _count(page) == f"{len(records)} rows"
    assert page.locator("#case-table tbody tr.r").count() == 50  # one page, not every row
    assert page.locator("svg.chart").count() >= 6

    # the filter box filters: an id matches its 4 configurations
    page.fill("#q", "id:case-1")
    assert _wait_count(page, f"{len(records)} rows") == f"4 of {len(records)} rows"
    assert page.locator("#case-table tbody tr.r").count() == 4

    # free text and a score comparison
    low = sum(1 for r in records if r["scores"]["test_exec_match"].get("value", 1) < 0.5)
    page.fill("#q", "test_exec_match<0.5")
    assert _wait_count(page, f"4 of {len(records)} rows") == f"{low} of {len(records)} rows"
    before = _count(page)
    page.fill("#q", "exploded")  # the crashed cases' system error
    crashed = sum(1 for r in records if r["error"])
    assert _wait_count(page, before) == f"{crashed} of {len(records)} rows"

    # the verdict select
    before = _count(page)
    page.fill("#q", "")
    before = _wait_count(page, before)
    page.select_option("#f-verdict", "0")
    failed = sum(1 for r in records if r["passed"] is False)  # system errors fail too
    assert _wait_count(page, before) == f"{failed} of {len(records)} rows"
    page.click("#reset")

    # sorting by latency, both ways
    header = page.locator("#case-table thead th", has_text="latency (s)")
    header.click()
    latencies = sorted(r["latency_s"] for r in records if r["latency_s"] is not None)
    cells = page.locator("#case-table tbody tr.r td.s").all_inner_texts()
    assert f"{latencies[0]:.2f}" in cells
    assert header.get_attribute("aria-sort") == "ascending"
    # the whole row (system, case, ...): under load one case can be both the fastest of one
    # system and the slowest of another
    first_row = page.locator("#case-table tbody tr.r").first.inner_text()
    header.click()
    assert header.get_attribute("aria-sort") == "descending"
    assert page.locator("#case-table tbody tr.r").first.inner_text() != first_row

    # a row expands to every field in full
    page.locator("#case-table tbody tr.r").first.click()
    detail = page.locator("#case-table tbody tr.detail")
    assert detail.count() == 1 and "question" in detail.inner_text()

    # pages turn
    page.click("#next")
    assert page.inner_text("#pageinfo").startswith("rows 51–100")

    ARTIFACTS.mkdir(exist_ok=True)
    page.click("#reset")
    page.screenshot(path=str(ARTIFACTS / "report-grid.png"), full_page=True)
    assert (ARTIFACTS / "report-grid.png").stat().st_size > 10_000
    assert errors == []


def test_compressed_report_and_case_links(
    browser: Any, grid: tuple[Path, list[dict]], tmp_path: Path
) -> None:
    run, records = grid
    plan = plan_run(load_suite(run.parent / "suite.yaml"))
    summary = json.loads((run / "summary.json").read_text())
    path = write_html(
        tmp_path / "compressed.html",
        summary,
        plan.cases,
        records,
        plan.scorers,
        options={"compress": "always"},
    )
    page, errors = open_page(browser, path)
    assert _count(page) == f"{len(records)} rows"
    # a link from the slowest-cases table filters the table to that case and opens it
    link = page.locator("#outliers a").first
    case_id = link.inner_text()
    link.click()
    page.wait_for_function("() => document.querySelector('#case-table tbody tr.detail') !== null")
    assert page.input_value("#q") == f"id:{case_id}"
    assert page.locator("#case-table tbody tr.r").count() == 1
    page.locator("#cases").screenshot(path=str(ARTIFACTS / "report-case-detail.png"))
    assert errors == []


def test_sdmx_example_report(browser: Any, tmp_path: Path) -> None:
    result = run_suite(
        load_suite(ROOT / "examples" / "sdmx" / "suite.yaml"), tmp_path / "run", progress=False
    )
    page, errors = open_page(browser, result.reports["html"])
    assert _count(page) == "32 rows"
    page.select_option("#f-tag", label="growth")
    assert _wait_count(page, "32 rows") == "8 of 32 rows"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-sdmx.png"), full_page=True)
    assert errors == []
