"""Headless Chromium for the browser tests of the HTML pages (the report, the run history):
one way to start it and one way to open a page that collects console errors, page errors
and any request that is not local (a self-contained page makes none)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")  # scripts/install-browser.sh (run by `make test`)
LOCAL = ("file:", "data:", "blob:")  # any other request would be network access
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def chromium() -> Iterator[Any]:
    """A started headless Chromium (Playwright's sync API), closed after the block."""
    from playwright.sync_api import sync_playwright

    assert CHROMIUM.exists(), "headless Chromium is missing: run scripts/install-browser.sh"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


def open_page(browser: Any, path: Path, local: tuple[str, ...] = LOCAL) -> tuple[Any, list[str]]:
    """`path` opened and ready (`body[data-ready='1']`), and the list its console errors,
    page errors and requests outside `local` are appended to."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on(
        "request",
        lambda r: errors.append(f"network: {r.url}") if not r.url.startswith(local) else None,
    )
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=30_000)
    return page, errors
