"""Correction overlays: the loader's errors (file:line, exit 2), and a finished run
re-scored under an overlay: the original figures byte-identical, the changed cases listed,
garbage never helping (a failed prediction stays failed whatever the overlay's gold)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from audit_support import make_suite
from queryeval.cli._app import app
from queryeval.config import load_overlay, load_suite
from queryeval.errors import InputError

OVERLAY = """\
# corrections to the planted suite
- case_id: bad-disputed
  gold: "SELECT count(*) FROM people WHERE age > 30"
  reason: the question says older than 30
  source: tests
- {case_id: bad-fails, drop: true, reason: no products table, source: tests}
- case_id: d-missing
  gold: "SELECT name FROM people ORDER BY name"
  reason: hostile - any gold
  source: tests
- case_id: d-broken
  gold: "SELEC broken FROM"
  reason: hostile - the failing prediction's own text as the gold
  source: tests
- case_id: ok-count
  gold: "SELECT count(*) FROM people WHERE age > 1000"
  reason: a draft nobody accepted
  source: tests
  proposed: true
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        (
            "- {case_id: a, drop: true, reason: r, source: s}\n"
            "- {case_id: b, reason: r, source: s}\n",
            2,
            "exactly one of",
        ),
        ("- {case_id: a, drop: true, reason: r}\n", 1, "source"),
        (
            "- {case_id: a, drop: true, reason: r, source: s}\n\n- {case_id: a, drop: true, "
            "reason: r, source: s}\n",
            3,
            "listed twice",
        ),
        ("- {case_id: a, gold: x, drop: true, reason: r, source: s}\n", 1, "exactly one of"),
        ("- {case_id: a, gold: x, reason: r, source: s, colour: red}\n", 1, "colour"),
        ("- just a string\n", 1, "expected an entry"),
    ],
)
def test_bad_overlay_names_file_and_line(tmp_path: Path, text: str, line: int, what: str) -> None:
    path = _write(tmp_path, "o.yaml", text)
    with pytest.raises(InputError) as err:
        load_overlay(path)
    assert err.value.line == line and err.value.path == str(path)
    assert what in err.value.render()


def test_jsonl_overlay_and_its_errors(tmp_path: Path) -> None:
    good = _write(
        tmp_path,
        "fix.jsonl",
        '{"case_id": 7, "gold": "SELECT 1", "reason": "r", '
        '"source": "s"}\n\n{"case_id": "b", "drop": true, "reason": "r", "source": "s"}\n',
    )
    overlay = load_overlay(good)
    assert [(e.case_id, e.action, e.line) for e in overlay.entries] == [
        ("7", "correct", 1),
        ("b", "drop", 3),
    ]
    assert overlay.sha256 == hashlib.sha256(good.read_bytes()).hexdigest()
    bad = _write(
        tmp_path,
        "bad.jsonl",
        '{"case_id": "a", "drop": true, "reason": "r", "source": "s"}\n{not json\n',
    )
    with pytest.raises(InputError) as err:
        load_overlay(bad)
    assert err.value.line == 2


def test_suite_naming_a_missing_overlay_is_exit_2(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, kql=False, only={"ok-count"}, extra="overlays: [nope.yaml]\n")
    with pytest.raises(InputError) as err:
        load_suite(suite)
    assert err.value.line == suite.read_text().splitlines().index("overlays: [nope.yaml]") + 1
    result = CliRunner().invoke(app, ["audit", str(suite), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "nope.yaml" in result.output


CASES = {"ok-count", "ok-paris", "ok-top", "bad-disputed", "bad-fails", "bad-empty"}


def _suite_with_failing_system(folder: Path, overlays: str) -> Path:
    """Some planted cases plus two that system `a` fails: no prediction (d-missing), a
    query that does not parse (d-broken); the other systems answer the gold."""
    suite = make_suite(folder, kql=False, only=CASES | {"d-missing", "d-broken"}, extra=overlays)
    cases = (folder / "cases.jsonl").read_text()
    for case_id in ("d-missing", "d-broken"):
        cases += json.dumps(
            {
                "id": case_id,
                "conversation": [
                    {
                        "content": case_id,
                        "target": {
                            "query": {
                                "text": "SELECT name FROM people ORDER BY name",
                                "database": "shop",
                            }
                        },
                    }
                ],
            }
        )
        cases += "\n"
    (folder / "cases.jsonl").write_text(cases)
    right = "SELECT name FROM people ORDER BY name"
    for system in ("a", "b", "c"):
        with (folder / "preds" / f"{system}.jsonl").open("a") as fh:
            if system != "a":  # a: no prediction for d-missing
                fh.write(json.dumps({"case_id": "d-missing", "query": right}) + "\n")
            broken = "SELEC broken FROM" if system == "a" else right
            fh.write(json.dumps({"case_id": "d-broken", "query": broken}) + "\n")
    return suite


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out: dict[str, Path] = {}
    reports = "reports: [console, json, html, excel]\n"
    for name, overlays in (("plain", reports), ("overlaid", reports + "overlays: [fix.yaml]\n")):
        folder = tmp_path_factory.mktemp(name)
        suite = _suite_with_failing_system(folder, overlays)
        _write(folder, "fix.yaml", OVERLAY)
        result = CliRunner().invoke(
            app, ["run", str(suite), "--out", str(folder / "run"), "--no-progress", "--no-cache"]
        )
        assert result.exit_code in (0, 1), result.output
        (folder / "run-console.txt").write_text(result.output)
        out[name] = folder
    return out


def _apply(folder: Path) -> dict:
    from queryeval.audit import apply_overlays
    from queryeval.cases import load_cases
    from queryeval.scorers import ScoringContext

    suite = load_suite(folder / "suite.yaml")
    cases = load_cases(suite.cases, suite.base_dir)
    ctx = ScoringContext(suite, cache_dir=folder / "cache")
    try:
        (content,) = apply_overlays(folder / "run", suite, cases, ctx)
    finally:
        ctx.close()
    return content


def test_original_figures_byte_identical_with_and_without_overlay(runs) -> None:
    plain, overlaid = runs["plain"] / "run", runs["overlaid"] / "run"
    assert (plain / "summary.json").read_bytes() == (overlaid / "summary.json").read_bytes()
    before = {n: (overlaid / n).read_bytes() for n in ("summary.json", "results.jsonl")}
    content = _apply(runs["overlaid"])
    assert {n: (overlaid / n).read_bytes() for n in before} == before  # nothing rewritten
    written = json.loads((overlaid / "overlay-fix.json").read_text())
    assert written == json.loads(json.dumps(content))
    summary = json.loads(before["summary.json"])
    for system, figs in content["systems"].items():
        assert figs["original"]["pass_rate"] == summary["systems"][system]["pass_rate"]


def test_overlay_figures_and_changed_cases(runs) -> None:
    content = _apply(runs["overlaid"])
    o = content["overlay"]
    assert o["name"] == "fix" and o["applied"] == 4 and o["proposed"] == 1
    assert o["sha256"] == hashlib.sha256((runs["overlaid"] / "fix.yaml").read_bytes()).hexdigest()
    assert content["cases"] == {"original": 8, "overlay": 7, "dropped": 1, "corrected": 3}
    changed = {c["case_id"]: c for c in content["changed"]}
    assert set(changed) == {"bad-disputed", "bad-fails", "d-missing", "d-broken"}
    # the three systems were right against a wrong gold: they pass under the correction
    assert changed["bad-disputed"]["systems"] == {
        s: {"original": False, "overlay": True} for s in ("a", "b", "c")
    }
    assert changed["bad-fails"]["systems"]["a"]["overlay"] is None  # dropped
    for figs in content["systems"].values():
        assert figs["overlay"]["cases"] == 7
    # the proposed entry is not applied: ok-count keeps its verdicts, unlisted
    assert "ok-count" not in changed


def test_a_failed_prediction_stays_failed_under_every_overlay(runs) -> None:
    content = _apply(runs["overlaid"])
    changed = {c["case_id"]: c for c in content["changed"]}
    # system a gave no prediction for d-missing and an unparsable one for d-broken; the
    # overlay's golds (one equal to the broken text itself) change nothing for it
    assert changed["d-missing"]["systems"]["a"] == {"original": False, "overlay": False}
    assert changed["d-broken"]["systems"]["a"] == {"original": False, "overlay": False}
    # the others answered the original gold; under d-broken's failing gold they are not
    # failed either way (the evaluator's fault: no verdict), never raised above the original
    assert changed["d-broken"]["systems"]["b"]["original"] is True
    assert changed["d-broken"]["systems"]["b"]["overlay"] in (None, False)


def test_overlay_never_raises_a_figure_on_the_original_golds(runs) -> None:
    """Whatever the overlay, the figures on the original golds are those of summary.json."""
    content = _apply(runs["overlaid"])
    summary = json.loads((runs["overlaid"] / "run" / "summary.json").read_text())
    for system, figs in content["systems"].items():
        s = summary["systems"][system]
        assert figs["original"]["passed"] == s["passed"]
        assert figs["original"]["means"] == {k: v["mean"] for k, v in s["scorers"].items()}


def test_overlay_command_prints_both_figures(runs) -> None:
    folder = runs["overlaid"]
    result = CliRunner().invoke(
        app,
        [
            "overlay",
            str(folder / "suite.yaml"),
            str(folder / "run"),
            "--cache-dir",
            str(folder / "cache"),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("overlay fix (sha256 ")
    assert any(line.startswith("  b: pass rate ") and "->" in line for line in lines)
    assert any("bad-disputed: correct" in line for line in lines)
    page = (folder / "run" / "overlay-fix.html").read_text()
    assert "<th>pass rate (original)</th><th>pass rate (overlay)</th>" in page
    assert "<td>bad-disputed</td><td>correct</td>" in page and "<script" not in page
    missing = CliRunner().invoke(app, ["overlay", str(folder / "suite.yaml"), str(folder)])
    assert missing.exit_code == 2 and "finished run" in missing.output


def test_run_applies_the_suites_overlays_and_records_them(runs) -> None:
    """`queryeval run` applies the suite's overlays at its end: overlay-<name>.json beside
    the run's own files, its name and hash in run.json; a suite without overlays gets none."""
    overlaid, plain = runs["overlaid"] / "run", runs["plain"] / "run"
    written = json.loads((overlaid / "overlay-fix.json").read_text())
    info = json.loads((overlaid / "run.json").read_text())
    sha = hashlib.sha256((runs["overlaid"] / "fix.yaml").read_bytes()).hexdigest()
    assert [(o["name"], o["sha256"]) for o in info["overlays"]] == [("fix", sha)]
    assert written["overlay"]["sha256"] == sha
    assert not list(plain.glob("overlay-*")) and "overlays" not in json.loads(
        (plain / "run.json").read_text()
    )


CHANGED = ("bad-disputed", "bad-fails", "d-missing", "d-broken")


def _f(value: float | None, none: str) -> str:
    return none if value is None else f"{value:.3f}"


def _figure_lines(output: str, content: dict) -> None:
    """The console's overlay lines: per system both pass rates, then the changed cases."""
    assert "overlay fix (sha256 " in output
    for system, figs in content["systems"].items():
        a, b = figs["original"]["pass_rate"], figs["overlay"]["pass_rate"]
        assert f"  {system}: pass rate {_f(a, 'n/a')} -> {_f(b, 'n/a')}" in output
    for case_id in CHANGED:
        assert f"  {case_id}: " in output


def test_the_runs_own_reports_show_the_overlay(runs) -> None:
    """The run's console and HTML report show each system's original and overlay figures
    side by side and the changed cases; a run without overlays shows no such section."""
    content = json.loads((runs["overlaid"] / "run" / "overlay-fix.json").read_text())
    # the overlay changes the figures here: side by side means two different numbers
    assert any(
        f["original"]["pass_rate"] != f["overlay"]["pass_rate"] for f in content["systems"].values()
    )
    _figure_lines((runs["overlaid"] / "run-console.txt").read_text(), content)
    page = (runs["overlaid"] / "run" / "report.html").read_text()
    assert '<section id="overlays">' in page and 'href="#overlays"' in page
    head = "<th>pass rate (original)</th><th>pass rate (overlay)</th>"
    assert head in page
    for system, figs in content["systems"].items():
        a, b = figs["original"]["pass_rate"], figs["overlay"]["pass_rate"]
        cells = f'<td class="n">{_f(a, "—")}</td><td class="n">{_f(b, "—")}</td>'
        assert f"<tr><td>{system}</td>{cells}" in page
    for case_id in CHANGED:
        assert f">{case_id}</a></td><td>" in page
    from openpyxl import load_workbook

    book = load_workbook(runs["overlaid"] / "run" / "report.xlsx", read_only=True)
    rows = [list(r) for r in book["Overlays"].iter_rows(values_only=True)]
    for system, figs in content["systems"].items():
        a, b = figs["original"]["pass_rate"], figs["overlay"]["pass_rate"]
        assert [system, a, b] == rows[[r[0] for r in rows].index(system)][:3]
    assert {r[0] for r in rows} >= set(CHANGED)
    plain = runs["plain"] / "run"
    assert "overlay " not in (runs["plain"] / "run-console.txt").read_text()
    assert 'id="overlays"' not in (plain / "report.html").read_text()
    assert "Overlays" not in load_workbook(plain / "report.xlsx", read_only=True).sheetnames


def test_report_command_shows_the_runs_overlays(runs, tmp_path: Path) -> None:
    """`queryeval report RUN` reads overlay-*.json from the run folder and shows them;
    summary.json stays byte-identical to the run without overlays."""
    from queryeval.log import read_log

    run = runs["overlaid"] / "run"
    content = json.loads((run / "overlay-fix.json").read_text())
    assert read_log(run).overlays == [content]
    assert read_log(runs["plain"] / "run").overlays == []
    result = CliRunner().invoke(app, ["report", str(run)])
    assert result.exit_code in (0, 1), result.output
    _figure_lines(result.output, content)
    assert 'id="overlays"' in (run / "report.html").read_text()
    plain = runs["plain"] / "run" / "summary.json"
    assert (run / "summary.json").read_bytes() == plain.read_bytes()


def test_a_rerun_without_overlays_removes_the_earlier_overlay_files(tmp_path: Path) -> None:
    """A directory run again by a suite that lists no overlay keeps no overlay-*.json of the
    earlier run, which `queryeval report` would otherwise show."""
    suite = _suite_with_failing_system(tmp_path, "")
    out = tmp_path / "run"
    out.mkdir()
    (out / "overlay-old.json").write_text("{}")
    result = CliRunner().invoke(
        app, ["run", str(suite), "--out", str(out), "--no-progress", "--no-cache", "--overwrite"]
    )
    assert result.exit_code in (0, 1), result.output
    assert not list(out.glob("overlay-*"))
