"""`queryeval history`: the runs table, trend charts and diffs come from the runs' own
summaries and `compare_records`; the page works in headless Chromium (no console errors,
no network, a trend chart, a diff that follows the selects)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from browser_support import chromium, open_page
from queryeval.cli._app import app
from queryeval.config import load_suite
from queryeval.reports import history_context, write_history
from queryeval.runner import run_suite
from queryeval.stats import compare_runs
from reports_plugin import make_suite

SKILLS = (0.5, 0.9, 0.7)  # the system "sys" gets better, then worse; "fixed" stays


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("history")
    suite_path = make_suite(folder, n=30)
    (folder / "history_plugin.py").write_text(
        "import os\nfrom reports_plugin import answer_system\n\n\n"
        "def answer(case):\n"
        "    return answer_system(case, skill=float(os.environ['QE_SKILL']), style='a')\n"
    )
    text = suite_path.read_text().replace(
        "  - name: sys\n    callable: reports_plugin:answer_system\n"
        "    params: {skill: [0.5, 0.9], style: [a, crash]}\n",
        "  - name: sys\n    callable: history_plugin:answer\n"
        "  - name: fixed\n    callable: reports_plugin:answer_system\n"
        "    params: {skill: [0.6], style: [b]}\n",
    )
    text = text.replace("plugins: [reports_plugin]", "plugins: [reports_plugin, history_plugin]")
    text = text.replace("reports: [html, excel, junit, markdown, json]", "reports: [json]")
    suite_path.write_text(text)
    out = []
    mp = pytest.MonkeyPatch()
    for i, skill in enumerate(SKILLS):
        mp.setenv("QE_SKILL", str(skill))
        run_suite(load_suite(suite_path), folder / "runs" / f"run{i + 1}", progress=False)
        out.append(folder / "runs" / f"run{i + 1}")
    mp.undo()
    return out


def test_context_from_the_runs_own_figures(runs: list[Path]) -> None:
    # a folder of runs is read like the runs themselves, oldest first
    ctx = history_context([runs[0].parent])
    assert [r["path"] for r in ctx["runs"]] == [str(p) for p in runs]
    for row, run in zip(ctx["runs"], runs, strict=True):
        summary = json.loads((run / "summary.json").read_text())
        info = json.loads((run / "run.json").read_text())
        assert row["config_hash"] == info["config_hash"][:12]
        assert {s["name"]: s["pass_rate"] for s in row["systems"]} == {
            name: e["pass_rate"] for name, e in summary["systems"].items()
        }
    trend = next(t for t in ctx["trends"] if t["metric"] == "pass_rate")
    points = str(trend["svg"]).count('class="pt"')
    assert points == 2 * len(runs)  # two systems, every run
    # every pair, each with the statistics `compare` computes for it
    assert [(d["a"], d["b"]) for d in ctx["diffs"]] == [(0, 1), (0, 2), (1, 2)]
    for d in ctx["diffs"]:
        expected = compare_runs(runs[d["a"]], runs[d["b"]]).as_dict()
        for got, want in zip(d["systems"], expected["systems"], strict=True):
            assert got["fixed"] == want["fixed"] and got["broken"] == want["broken"]
            assert got["metrics"] == want["metrics"]
            assert {t["tag"] for t in got["tags"]} == {
                "even",
                "odd",
                "bucket-0",
                "bucket-1",
                "bucket-2",
            }
    first = next(p for p in ctx["diffs"][0]["systems"] if p["system_a"] == "sys")
    assert first["fixed"] and not first["broken"]  # skill 0.5 -> 0.9
    fixed = next(p for p in ctx["diffs"][0]["systems"] if p["system_a"].startswith("fixed["))
    assert not fixed["fixed"] and not fixed["broken"]
    last = next(p for p in ctx["diffs"][2]["systems"] if p["system_a"] == "sys")
    assert last["broken"] and not last["fixed"]  # 0.9 -> 0.7


def test_tag_deltas_are_the_summaries_differences(runs: list[Path]) -> None:
    ctx = history_context(runs)
    a, b = (json.loads((r / "summary.json").read_text()) for r in runs[:2])
    pair = next(p for p in ctx["diffs"][0]["systems"] if p["system_a"] == "sys")
    for row in pair["tags"]:
        ra = a["systems"]["sys"]["by_tag"][row["tag"]]["pass_rate"]
        rb = b["systems"]["sys"]["by_tag"][row["tag"]]["pass_rate"]
        assert row["delta"] == pytest.approx(rb - ra)


def test_many_runs_diff_consecutive_and_against_latest() -> None:
    from queryeval.reports._history import _pairs

    assert _pairs(3, 12) == [(0, 1), (0, 2), (1, 2)]
    assert _pairs(5, 4) == [(0, 1), (0, 4), (1, 2), (1, 4), (2, 3), (2, 4), (3, 4)]


def test_cli(runs: list[Path], tmp_path: Path) -> None:
    cli = CliRunner()
    out = tmp_path / "h.html"
    result = cli.invoke(app, ["history", *map(str, runs), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.exists() and "<svg" in out.read_text()
    result = cli.invoke(app, ["history", str(tmp_path / "empty"), "--out", str(out)])
    assert result.exit_code == 2 and "no run directory" in result.output


# --- in the browser ---------------------------------------------------------------------

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture(scope="module")
def page_path(runs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_history(runs, tmp_path_factory.mktemp("page") / "history.html")


@pytest.fixture(scope="module")
def browser(page_path: Path) -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.mark.browser
def test_history_page_in_the_browser(browser: Any, page_path: Path) -> None:
    page, errors = open_page(browser, page_path, local=("file:", "data:"))
    # runs table: one row per (run, system)
    assert page.locator("#runs-table tbody tr").count() == 2 * len(SKILLS)
    # a trend chart with a line per system
    chart = page.locator(".trend-chart[data-metric='pass_rate'] svg")
    assert chart.is_visible() and chart.locator("polyline").count() == 2
    # the default diff is the last two runs; one diff visible at a time
    visible = page.locator(".diff:visible")
    assert visible.count() == 1
    assert visible.get_attribute("data-a") == "1" and visible.get_attribute("data-b") == "2"
    assert visible.locator("table.metrics tbody tr").count() >= 2
    assert int(visible.locator(".broken-count").first.inner_text()) > 0
    page.select_option("#pick-a", "0")
    page.select_option("#pick-b", "1")
    visible = page.locator(".diff:visible")
    assert visible.get_attribute("data-a") == "0" and visible.get_attribute("data-b") == "1"
    assert int(visible.locator(".fixed-count").first.inner_text()) > 0
    page.select_option("#pick-a", "2")  # a newer A than B: not on the page, said so
    assert page.locator(".diff:visible").count() == 0
    assert page.locator("#no-diff").is_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "history.png"), full_page=True)
    page.close()
    assert errors == []
