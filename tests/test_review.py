"""Human review: verdict overrides change the verdicts, the case verdicts and the means,
are shown as overrides in the HTML and Excel reports, and give the judge-human kappa;
gold corrections are scored by `run`; bad review files name the file and line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from browser_support import chromium, open_page
from queryeval.cli._report import report_command
from queryeval.config import load_suite
from queryeval.errors import InputError
from queryeval.runner import load_review, run_suite
from reports_plugin import make_suite

SYSTEM = "sys[skill=0.5,style=a]"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("review")
    suite = load_suite(make_suite(folder, n=20))
    suite.reports = [r for r in suite.reports if r.kind in ("json", "html", "excel", "junit")]
    run_suite(suite, folder / "run", progress=False)
    return folder / "run"


@pytest.fixture
def run(base: Path, tmp_path: Path) -> Path:
    shutil.copytree(base, tmp_path / "run")
    return tmp_path / "run"


def _records(run: Path) -> dict[tuple[str, str], dict]:
    lines = (run / "results.jsonl").read_text().splitlines()
    return {(r["system"], r["case_id"]): r for r in map(json.loads, lines)}


def _pick(records: dict, want) -> str:
    return next(cid for (s, cid), r in records.items() if s == SYSTEM and want(r))


def _review_file(run: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """Overrides of the judge-like scorer: a pass made fail, a fail made pass, a pass
    confirmed, an unscored case given a verdict (which no kappa can use)."""
    records = _records(run)
    judge = lambda r: r["scores"]["test_judge"]  # noqa: E731
    picked = {
        "to_fail": _pick(records, lambda r: judge(r).get("passed") is True and r["passed"]),
        "to_pass": _pick(records, lambda r: judge(r).get("passed") is False),
    }
    picked["confirm"] = _pick(
        records, lambda r: judge(r).get("passed") is True and r["case_id"] != picked["to_fail"]
    )
    picked["unscored"] = _pick(records, lambda r: judge(r)["status"] == "unscored")
    verdicts = {"to_fail": "fail", "to_pass": "pass", "confirm": "pass", "unscored": "fail"}
    lines = ["overrides:"]
    for key, cid in picked.items():
        lines.append(
            f"  - {{case_id: {cid}, system: '{SYSTEM}', scorer: test_judge, "
            f"verdict: {verdicts[key]}, note: 'checked {key}', reviewer: ana}}"
        )
    path = tmp_path / "review.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path, picked


def test_overrides_change_verdicts_means_and_give_kappa(run: Path, tmp_path: Path) -> None:
    from sklearn.metrics import cohen_kappa_score

    before = _records(run)
    base_copy = shutil.copytree(run, tmp_path / "machine")
    old_summary = json.loads((run / "summary.json").read_text())
    path, picked = _review_file(run, tmp_path)
    report_command(run, path)
    summary = json.loads((run / "summary.json").read_text())
    info = json.loads((run / "run.json").read_text())
    assert info["review"]["overrides"] == 4
    # results.jsonl keeps the machine's verdicts; the reports read the overrides
    assert _records(run) == before
    judge_old = old_summary["systems"][SYSTEM]["scorers"]["test_judge"]
    judge_new = summary["systems"][SYSTEM]["scorers"]["test_judge"]
    # one pass -> fail, one fail -> pass, one unscored -> fail (now scored)
    assert judge_new["passed"] == judge_old["passed"]
    assert judge_new["failed"] == judge_old["failed"] + 1
    assert judge_new["unscored"] == judge_old["unscored"] - 1
    assert judge_new["ok"] == judge_old["ok"] + 1
    # the case that passed everything fails now: the human's fail decides it
    sys_old, sys_new = old_summary["systems"][SYSTEM], summary["systems"][SYSTEM]
    assert before[(SYSTEM, picked["to_fail"])]["passed"] is True
    exec_passed = {
        key: before[(SYSTEM, cid)]["scores"]["test_exec_match"]["passed"]
        for key, cid in picked.items()
    }
    # the case verdict again: fails on any fail, passes when both scorers pass
    expected = (
        sys_old["passed"]
        - 1  # to_fail
        + int(exec_passed["to_pass"])  # the judge's fail had failed it
        - int(before[(SYSTEM, picked["unscored"])]["passed"] is True)  # now a human fail
    )
    assert sys_new["passed"] == expected
    # other systems are untouched
    for name, entry in summary["systems"].items():
        if name != SYSTEM:
            assert entry["scorers"] == old_summary["systems"][name]["scorers"]
    # kappa from the three overrides whose original had a verdict (sklearn as reference)
    judge = [1, 0, 1]  # to_fail (judge pass), to_pass (judge fail), confirm (judge pass)
    human = [0, 1, 1]
    agreement = summary["review"]["agreement"]["test_judge"]
    assert agreement["overrides"] == 4 and agreement["compared"] == 3
    assert agreement["changed"] == 2
    assert agreement["kappa"] == pytest.approx(cohen_kappa_score(judge, human))

    # review.json: comparisons, the history page and the exporters read the overrides too
    from queryeval.log import read_log
    from queryeval.stats import compare_runs

    overlaid = {(r["system"], r["case_id"]): r for r in read_log(run).records}
    to_fail = overlaid[(SYSTEM, picked["to_fail"])]
    assert to_fail["passed"] is False and to_fail["scores"]["test_judge"]["passed"] is False
    assert (
        to_fail["scores"]["test_exec_match"]
        == before[(SYSTEM, picked["to_fail"])]["scores"]["test_exec_match"]
    )
    pair = next(p for p in compare_runs(base_copy, run).systems if p.system_a == SYSTEM)
    assert picked["to_fail"] in pair.broken

    from rich.console import Console

    from queryeval.reports._console import print_summary
    from queryeval.reports._markdown import summary_markdown

    markdown = summary_markdown(summary)
    kappa = f"{agreement['kappa']:.3f}"
    assert "### Human review" in markdown and "| test_judge | 4 | 3 | 2 |" in markdown
    assert markdown.rstrip().endswith(kappa + " |")
    console = Console(record=True, width=200)
    print_summary(summary, console)
    assert f"test_judge kappa {kappa}" in console.export_text()

    junit = (run / "junit.xml").read_text()
    assert "overridden by ana: checked to_fail" in junit

    html = (run / "report.html").read_text()
    assert 'id="review"' in html and "overridden pass -&gt; fail by ana: checked to_fail" in html
    payload = html[html.index('"rows":') :]
    assert payload.count('"pf"') + payload.count('"Ff"') + payload.count('"Pf"') >= 1

    from openpyxl import load_workbook

    book = load_workbook(run / "report.xlsx", read_only=True)
    rows = list(book["Review"].iter_rows(values_only=True))
    assert rows[0][:3] == ("system", "case id", "scorer") and len(rows) == 1 + 4
    by_case = {r[1]: r for r in rows[1:]}
    assert by_case[picked["to_fail"]][5:7] == ("PASS", "FAIL")
    assert by_case[picked["unscored"]][3] == "unscored"
    sheet = list(book["test_judge"].iter_rows(values_only=True))
    column = sheet[0].index("human review")
    marked = {r[1] for r in sheet[1:] if r[column]}
    assert marked == set(picked.values())
    book.close()


def test_csv_review_equals_yaml(run: Path, tmp_path: Path) -> None:
    path, _ = _review_file(run, tmp_path)
    yaml_review = load_review(path)
    csv_path = tmp_path / "review.csv"
    rows = ["case_id,system,scorer,verdict,note,reviewer"]
    for o in yaml_review.overrides:
        rows.append(
            f'{o.case_id},"{o.system}",{o.scorer},{"pass" if o.verdict else "fail"},'
            f"{o.note},{o.reviewer}"
        )
    csv_path.write_text("\n".join(rows) + "\n")
    got = load_review(csv_path)
    assert [(o.case_id, o.system, o.scorer, o.verdict, o.note) for o in got.overrides] == [
        (o.case_id, o.system, o.scorer, o.verdict, o.note) for o in yaml_review.overrides
    ]


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        (
            "overrides:\n  - {case_id: case-1, scorer: test_judge, verdict: maybe}\n",
            "pass or fail",
            2,
        ),
        ("overrides:\n  - {case_id: case-1, scorer: test_judge}\n", "verdict is required", 2),
        (
            "overrides:\n  - {case_id: case-1, scorer: nope, verdict: pass}\n",
            "unknown scorer",
            None,
        ),
        (
            "overrides:\n  - {case_id: case-99, scorer: test_judge, verdict: pass}\n",
            "no record",
            None,
        ),
        ("overrides:\n  - {case: case-1, scorer: test_judge, verdict: pass}\n", "unknown key", 2),
    ],
)
def test_bad_review_files(
    run: Path, tmp_path: Path, text: str, message: str, line: int | None
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as err:
        report_command(run, path)
    assert str(path) in err.value.render()
    if line is not None:
        assert err.value.line == line


def test_gold_correction_is_scored_by_run(tmp_path: Path) -> None:
    """case-7's gold corrected to what the 0.5-skill systems answer ("wrong"): they now match
    it, and the 0.9-skill ones (which answer a7) no longer do."""
    suite_path = make_suite(tmp_path / "suite", n=10)
    review = tmp_path / "golds.yaml"
    review.write_text(
        "golds:\n  - {case_id: case-7, gold: wrong, note: 'the gold was wrong', reviewer: bo}\n"
    )
    suite = load_suite(suite_path)
    suite.reports = [r for r in suite.reports if r.kind in ("json", "html")]
    run_suite(suite, tmp_path / "run", progress=False, review=review)
    records = _records(tmp_path / "run")
    for (system, cid), rec in records.items():
        if cid != "case-7" or rec["error"]:
            continue
        answered = json.loads(json.dumps(rec["output"]))["attempts"][-1]["answer"]
        assert rec["scores"]["test_exec_match"]["value"] == float(answered == "wrong"), system
    assert any(
        r["scores"]["test_exec_match"]["value"] == 1.0
        for (s, c), r in records.items()
        if c == "case-7"
    )
    html = (tmp_path / "run" / "report.html").read_text()
    assert "gold corrected by bo: the gold was wrong; was: a7" in html
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["review"]["gold_corrections"] == 1
    # report re-applies the recorded review; another file with golds needs a new run
    report_command(tmp_path / "run")
    other = tmp_path / "other.yaml"
    other.write_text("golds:\n  - {case_id: case-3, gold: x}\n")
    with pytest.raises(InputError, match="needs scoring again"):
        report_command(tmp_path / "run", other)
    # resuming the run with other gold corrections (or none) would mix two sets of golds
    for changed in (other, None):
        with pytest.raises(InputError, match="gold corrections changed"):
            run_suite(suite, tmp_path / "run", progress=False, resume=True, review=changed)
    run_suite(suite, tmp_path / "run", progress=False, resume=True, review=review)


@pytest.mark.browser
def test_override_marked_in_the_browser(run: Path, tmp_path: Path) -> None:
    """The overridden score's cell is marked ✎ (and only that one), its row says so when
    expanded, and the Human review section links to it; no console errors."""
    path, picked = _review_file(run, tmp_path)
    report_command(run, path)
    with chromium() as browser:
        page, errors = open_page(browser, run / "report.html")
        assert page.locator("#review tr.override").count() == 4
        page.fill("#q", f"id:{picked['to_fail']} system:{SYSTEM}")
        page.wait_for_function("document.querySelectorAll('#case-table tbody tr.r').length == 1")
        row = page.locator("#case-table tbody tr.r").first
        marked = row.locator("td.ov")
        assert marked.count() == 1 and marked.inner_text().startswith("✎")
        assert "F" in (marked.get_attribute("class") or "")
        assert row.locator("td.s.P").count() == 1  # test_exec_match: the machine's pass
        row.click()
        page.wait_for_selector("text=overridden by human review")
    assert errors == []
