"""The HTML, Excel, JUnit and Markdown reports of a grid run with engine- and judge-like
scorers, checked against the stored records and summary."""

from __future__ import annotations

import base64
import gzip
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from openpyxl import load_workbook

from queryeval.errors import InputError
from queryeval.reports._html import write_html
from queryeval.runner import load_suite, run_suite
from reports_plugin import make_suite


@pytest.fixture(scope="module")
def grid_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("grid")
    run_suite(load_suite(make_suite(folder)), folder / "run", progress=False)
    return folder / "run"


def _records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def _embedded(html: str) -> dict:
    m = re.search(r'<script id="qe-data" type="([^"]+)"([^>]*)>(.*?)</script>', html, re.S)
    assert m is not None
    if "gzip+base64" in m.group(2):
        return json.loads(gzip.decompress(base64.b64decode(m.group(3))))
    return json.loads(m.group(3))


def test_html_is_self_contained_and_embeds_every_record(grid_run: Path) -> None:
    html = (grid_run / "report.html").read_text()
    # no external resource: the only URL is the SVG namespace, which is never fetched
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", html))
    assert urls <= {"http://www.w3.org/2000/svg"}
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", html)
    data = _embedded(html)
    records = _records(grid_run)
    assert len(data["rows"]) == len(records) == 160
    assert data["labels"] == ["test_exec_match", "test_judge"]
    by_key = {(data["systems"][r[1]], data["cases"][r[0]][0]): r for r in data["rows"]}
    for rec in records:
        row = by_key[(rec["system"], rec["case_id"])]
        assert row[2] == (None if rec["passed"] is None else int(rec["passed"]))
        judge = rec["scores"]["test_judge"]
        assert row[9][1] == (judge["value"] if judge["status"] == "ok" else judge["status"])
        if judge["status"] == "ok" and "failure" not in judge["details"]:
            assert judge["details"]["reasoning"] in row[12]
        details = rec["scores"]["test_exec_match"]["details"]
        if "execution" in details:
            assert row[5] == details["execution"]["predicted"]["kind"]
        else:  # the system crashed: nothing ran, the failure's reason stands instead
            assert row[5] == details["failure"] == "crashed"
    # the question's markup stays text: escaped in the page, unicode-escaped in the JSON
    assert "</script><b>x</b>" not in html and "\\u003c/script>" in html


def test_html_sections_follow_the_summary(grid_run: Path) -> None:
    html = (grid_run / "report.html").read_text()
    summary = json.loads((grid_run / "summary.json").read_text())
    for name, entry in summary["systems"].items():
        assert name in html
        assert f"{entry['pass_rate']:.3f}" in html
    assert "test_exec_match: error types" in html and "test_exec_match: families" in html
    assert html.count('class="chart"') >= 6  # overview, histograms, tags, components
    assert "Slowest" in html and "Most expensive" in html
    assert "pass_rate &gt;= 0.6" in html  # gates listed
    assert "judge unavailable: HTTP 503" in html  # why cases were not scored


def test_html_compresses_big_data_and_cuts_long_fields(grid_run: Path, tmp_path: Path) -> None:
    from queryeval.runner import plan_run

    summary = json.loads((grid_run / "summary.json").read_text())
    plan = plan_run(load_suite(grid_run.parent / "suite.yaml"))
    records = _records(grid_run)
    path = write_html(
        tmp_path / "r.html",
        summary,
        plan.cases,
        records,
        plan.scorers,
        options={"compress": "always", "max_field_chars": 50},
    )
    html = path.read_text()
    assert 'data-encoding="gzip+base64"' in html
    data = _embedded(html)
    reasoning = [r[12] for r in data["rows"] if r[12]]
    assert reasoning and all("more characters in results.jsonl" in r for r in reasoning)
    assert all(len(r) < 120 for r in reasoning)
    with pytest.raises(InputError, match=r"reports\.html\.options\.page"):
        write_html(tmp_path / "x.html", summary, plan.cases, records, {}, options={"page": 1})


def test_excel_has_a_sheet_per_scorer_judge_components_and_configurations(grid_run: Path) -> None:
    wb = load_workbook(grid_run / "report.xlsx")
    assert wb.sheetnames == [
        "Overview",
        "Statistics",
        "test_exec_match",
        "test_judge",
        "Judge",
        "Components",
        "Gates",
        "Configurations",
    ]
    records = _records(grid_run)
    summary = json.loads((grid_run / "summary.json").read_text())
    for title in wb.sheetnames:
        ws = wb[title]
        if title != "Statistics":
            assert ws.freeze_panes is not None and ws.auto_filter.ref, title

    ws = wb["test_exec_match"]
    header = [c.value for c in ws[1]]
    assert header[:5] == ["system", "case id", "status", "value", "passed"]
    assert {"row_f1", "report: row f1", "details: counts.rows", "details: execution"} <= set(header)
    assert ws.max_row == 1 + len(records)
    value_cell = ws.cell(2, header.index("value") + 1)
    assert isinstance(value_cell.value, int | float) and value_cell.number_format == "0.000"
    assert ws.conditional_formatting  # colour scale and PASS/FAIL fills

    judge = wb["Judge"]
    jh = [c.value for c in judge[1]]
    rows = list(judge.iter_rows(min_row=2, values_only=True))
    scored = [r for r in records if "reasoning" in r["scores"]["test_judge"].get("details", {})]
    assert len(rows) == len(scored)
    first = scored[0]
    row = next(r for r in rows if r[0] == first["system"] and r[1] == first["case_id"])
    assert row[jh.index("reasoning")] == first["scores"]["test_judge"]["details"]["reasoning"]

    grid = wb["Configurations"]
    gh = [c.value for c in grid[1]]
    assert {"skill", "style", "pass rate", "test_judge CI low", "rank"} <= set(gh)
    for r in grid.iter_rows(min_row=2, values_only=True):
        entry = summary["systems"][r[0]]
        assert isinstance(r[gh.index("skill")], float)  # parsed from the name, as a number
        assert r[gh.index("pass rate")] == pytest.approx(entry["pass_rate"])
    ranks = {r[0]: r[gh.index("rank")] for r in grid.iter_rows(min_row=2, values_only=True)}
    assert ranks["sys[skill=0.9,style=a]"] == 1

    comp = list(wb["Components"].iter_rows(min_row=2, values_only=True))
    syntax = [r for r in comp if r[2] == "error_types" and r[3] == "syntax"]
    assert len(syntax) == 4 and all(isinstance(r[5], int) for r in syntax)


def test_junit_lists_cases_and_gates(grid_run: Path) -> None:
    root = ET.parse(grid_run / "junit.xml").getroot()
    summary = json.loads((grid_run / "summary.json").read_text())
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    for name, entry in summary["systems"].items():
        suite = suites[f"grid.{name}"]
        cases = suite.findall("testcase")
        assert len(cases) == entry["cases"]
        errors = sum(1 for c in cases if c.find("error") is not None)
        failures = [c for c in cases if c.find("failure") is not None]
        assert errors == entry["system_errors"] == int(suite.get("errors"))
        assert len(failures) + errors == entry["failed"]
        for c in failures:
            assert "test_exec_match = 0 (threshold 1)" in c.find("failure").get("message")
    gates = suites["grid.gates"].findall("testcase")
    assert len(gates) == 4
    assert sum(1 for g in gates if g.find("failure") is not None) == 2
    assert int(root.get("tests")) == 160 + 4


def test_markdown_summary_has_cis_and_gates(grid_run: Path) -> None:
    text = (grid_run / "report.md").read_text()
    summary = json.loads((grid_run / "summary.json").read_text())
    entry = summary["systems"]["sys[skill=0.9,style=a]"]
    ci = entry["pass_rate_ci95"]
    assert f"{entry['pass_rate']:.3f} [{ci['low']:.3f}, {ci['high']:.3f}]" in text
    assert "### Gates: 2 of 4 passed" in text
