"""`queryeval view` in headless Chromium (Playwright): open a run, filter its cases, open a
case, compare two runs, write a review and see the figure change; no console error and no
request outside the server. A screenshot of each page is kept in test-artifacts/ (on a
failure, the page as it was); with QE_VIEWER_SCREENSHOTS=DIR they are written there too
(docs/img/ for docs/viewer.md)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser_support import chromium
from queryeval.viewer import Viewer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from bench_viewer import make_run, write_cases

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
N = 120

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewer]:
    root = tmp_path_factory.mktemp("viewer-browser")
    cases = write_cases(root / "cases.jsonl", N)
    runs = root / "runs"
    make_run(runs / "nightly" / "2026-11-01", cases, N, systems=("baseline", "tuned"), seed=1,
             suite="sql-nightly", accuracy=0.55, when="2026-11-01T02:00:00+00:00")  # fmt: skip
    make_run(runs / "nightly" / "2026-11-02", cases, N, systems=("baseline", "tuned"), seed=2,
             suite="sql-nightly", accuracy=0.7, when="2026-11-02T02:00:00+00:00")  # fmt: skip
    v = Viewer([runs], index_root=root / "index", background_index=False).start()
    yield v
    v.stop()


@pytest.fixture(scope="module")
def page(viewer: Viewer) -> Iterator[Any]:
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        base = f"http://127.0.0.1:{viewer.port}"
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on(
            "request",
            lambda r: None if r.url.startswith(base) else errors.append(f"network: {r.url}"),
        )
        page.errors = errors
        page.base = base
        yield page
        page.close()


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"viewer-{name}.png"), full_page=False)
    wanted = os.environ.get("QE_VIEWER_SCREENSHOTS")
    if wanted:
        Path(wanted).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(wanted) / f"viewer-{name}.png"), full_page=False)


def _go(page: Any, hash_: str) -> None:
    page.goto(f"{page.base}/#{hash_}") if hash_ else None
    page.wait_for_selector("body[data-ready='1']", timeout=30_000)


def test_the_viewer_in_a_browser(page: Any) -> None:
    try:
        _walk(page)
    except BaseException:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "viewer-failed.png"), full_page=True)
        raise


def _walk(page: Any) -> None:
    # runs: grouped by suite, a trend per system, both runs listed
    page.goto(page.base + "/")
    page.wait_for_selector("body[data-ready='1']", timeout=30_000)
    assert page.locator("h2", has_text="Suite sql-nightly").count() == 1
    assert page.locator(".trend svg").count() == 2
    _shot(page, "runs")
    # a run: figures, failures by reason
    page.locator("a", has_text="nightly/2026-11-02").first.click()
    page.wait_for_selector("body[data-ready='1'] h2:has-text('Failures by reason')")
    stored = page.locator("td.stored[data-system='baseline']").inner_text()
    _shot(page, "run")
    # cases: filter failed cases of one system containing a word
    page.locator("a", has_text="Cases").first.click()
    page.wait_for_selector("body[data-ready='1'] #cases")
    total_all = int(page.locator("#total").inner_text())
    assert total_all == 2 * N
    page.select_option("select[name=system]", "baseline")
    page.select_option("select[name=status]", "fail")
    page.fill("input[name=q]", "orders")
    page.click("form#f button[type=submit]")
    page.wait_for_function(
        "document.body.dataset.ready === '1' && !!document.querySelector('#cases')"
    )
    total = int(page.locator("#total").inner_text())
    assert 0 < total < total_all
    statuses = page.locator("#cases td:nth-child(3)").all_inner_texts()
    assert statuses and all(s.startswith("fail") for s in statuses)
    _shot(page, "cases")
    # one case: question, gold, prediction, diff
    page.locator("#cases a.case").first.click()
    page.wait_for_selector("body[data-ready='1'] #diff")
    assert page.locator("#diff del").count() >= 1 and page.locator("#diff ins").count() >= 1
    _shot(page, "case")
    # review: override the verdict; the run's figure changes and says it was reviewed
    page.select_option("form#review select[name=scorer]", "execution_match")
    page.select_option("form#review select[name=verdict]", "pass")
    page.fill("form#review input[name=note]", "the query is equivalent")
    page.fill("form#review input[name=reviewer]", "ana")
    page.click("form#review button[type=submit]")
    page.wait_for_selector("#review-msg:has-text('saved in review.json')")
    assert page.locator("#verdict").inner_text() == "pass"
    assert page.locator(".rev", has_text="overridden by ana").count() == 1
    _shot(page, "review")
    page.locator("#crumbs a").nth(1).click()
    page.wait_for_selector("body[data-ready='1'] #counted")
    reviewed = page.locator("td.figure[data-system='baseline']").inner_text()
    assert float(reviewed) > float(stored.split()[0])
    # side by side: the two runs, flipped cases first, compare's statistics on top
    _go(page, "/")
    page.select_option("#ca", index=0)
    page.select_option("#cb", index=1)
    page.click("#cgo")
    page.wait_for_selector("body[data-ready='1'] #pairs")
    flipped = int(page.locator("#flipped").inner_text())
    assert flipped > 0
    first = page.locator("#pairs tr").nth(1)
    assert "flipped" in first.inner_text()
    assert page.locator("#cmp-verdict").inner_text() in (
        "better", "worse", "no significant difference",
    )  # fmt: skip
    _shot(page, "compare")
    assert page.errors == []
