"""The scoring rule in one place: what the system produced and could not be used is a
failure (0 in every mean and sub-metric, its reason counted in every report); only the
evaluator's trouble is unscored, counted beside every mean and flagged above the suite's
share (`--strict` fails the run on it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from queryeval.cases import Attempt, Case, Output, Score, describe_failures
from queryeval.cli import app
from queryeval.config import ScorerConfig
from queryeval.reports._console import print_summary
from queryeval.runner import load_suite, run_suite
from queryeval.scorers import Scorer, ScoringContext, apply_rule, register_scorer, score_case
from queryeval.stats import summarize


@register_scorer("test_rule_echo")
class Echo(Scorer):
    """Reads the answer: 1 when it says "right"; reports a sub-metric only on some cases
    (`sub_metrics` is not declared, as a plugin may leave it)."""

    reads: ClassVar[Any] = "answer"

    def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
        answer = output.final.answer if output.final else ""
        value = 1.0 if answer == "right" else 0.0
        metrics = {"right": value} if case.id != "c0" else {}
        return Score(value=value, passed=value == 1.0, details={"metrics": metrics})


def _case(i: int) -> Case:
    return Case.model_validate(
        {"id": f"c{i}", "conversation": [{"content": "q", "target": {"answer": "right"}}]}
    )


def test_a_failure_is_zero_everywhere_and_keeps_its_reason() -> None:
    scorer = Echo(Echo.Options(), ScorerConfig(name="test_rule_echo"))
    ctx = ScoringContext()
    missing = score_case(scorer, _case(1), Output(error="gone", failure="missing"), ctx)
    assert (missing.value, missing.passed, missing.failure_reason) == (0.0, False, "missing")
    empty = score_case(scorer, _case(1), Output(attempts=[Attempt(answer="  ")]), ctx)
    assert empty.failure_reason == "empty"
    brace = score_case(scorer, _case(1), Output(attempts=[Attempt(answer="{")]), ctx)
    assert brace.failure_reason == "invalid_output"
    # a scorer reporting a failure with figures of its own: the rule zeroes them all
    own = Score.failure("runtime", "it broke", metrics={"right": 1.0, "extra": 0.7})
    assert apply_rule(scorer, own).details["metrics"] == {"extra": 0.0, "right": 0.0}


def _summary(outputs: list[Output], max_unscored_share: float = 0.05) -> dict[str, Any]:
    scorer = Echo(Echo.Options(), ScorerConfig(name="test_rule_echo"))
    cases = [_case(i) for i in range(len(outputs))]
    records = []
    for case, output in zip(cases, outputs, strict=True):
        score = score_case(scorer, case, output, ScoringContext())
        records.append(
            {
                "system": "s",
                "case_id": case.id,
                "scores": {"test_rule_echo": json.loads(score.model_dump_json())},
                "passed": score.passed,
                "error": output.error,
            }
        )
    summary = summarize("t", cases, records, {"test_rule_echo": scorer}, ["s"],
                        max_unscored_share=max_unscored_share)  # fmt: skip
    return summary["systems"]["s"]["scorers"]["test_rule_echo"]


def right() -> Output:
    return Output(attempts=[Attempt(answer="right")])


def test_failures_count_zero_in_the_mean_and_every_sub_metric() -> None:
    s = _summary([right(), right(), Output(error="x", failure="missing"), Output(error="boom")])
    assert s["mean"] == pytest.approx(0.5) and s["failed_outputs"] == 2
    assert s["failures"] == {"crashed": 1, "missing": 1}
    # c0 reports no sub-metric; c2 and c3 failed: the sub-metric counts them as 0 anyway
    assert s["metrics"]["right"]["n"] == 3 and s["metrics"]["right"]["mean"] == pytest.approx(1 / 3)
    assert s["unscored_share"] == 0.0 and s["flagged"] is False


def test_only_failures_while_the_evaluator_failed_is_no_mean() -> None:
    """A judge down on every real output, and two missing ones: the mean of the two zeros
    would describe the evaluator, not the system: "—", with its counts, flagged."""

    class Down(Echo):
        def score(self, case: Case, output: Output, ctx: ScoringContext) -> Score:
            return Score.unscored("judge unreachable")

    register_scorer("test_rule_down")(Down)
    scorer = Down(Down.Options(), ScorerConfig(name="test_rule_down"))
    cases = [_case(i) for i in range(6)]
    outputs = [right()] * 4 + [Output(error="x", failure="missing")] * 2
    scores = [
        score_case(scorer, c, o, ScoringContext()) for c, o in zip(cases, outputs, strict=True)
    ]
    records = [
        {"system": "s", "case_id": c.id, "passed": s.passed, "error": None,
         "scores": {"test_rule_down": json.loads(s.model_dump_json())}}
        for c, s in zip(cases, scores, strict=True)
    ]  # fmt: skip
    summary = summarize("t", cases, records, {"test_rule_down": scorer}, ["s"])
    s = summary["systems"]["s"]["scorers"]["test_rule_down"]
    assert s["mean"] is None and s["ci95"] is None and s["flagged"] is True
    assert s["pass_rate"] is None  # the two failures' verdicts alone: no rate either
    assert (s["unscored"], s["failed_outputs"]) == (4, 2)
    system = summary["systems"]["s"]
    assert system["flagged"] is True and system["no_verdict_share"] == pytest.approx(4 / 6)


def test_an_unscored_share_above_the_limit_is_flagged() -> None:
    outputs = [right()] * 19 + [Output(attempts=[Attempt(answer="right")])]
    assert _summary(outputs)["flagged"] is False
    assert describe_failures({}) == ""


def _answer_suite(folder: Path, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    cases = [
        {"id": f"c-{i}", "conversation": [{"content": "q", "target": {"answer": f"a{i}"}}]}
        for i in range(10)
    ]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    preds = [{"case_id": f"c-{i}", "answer": f"a{i}"} for i in range(8)]  # c-8, c-9 missing
    (folder / "preds.jsonl").write_text("".join(json.dumps(p) + "\n" for p in preds))
    (folder / "runner_plugin.py").write_text(
        (Path(__file__).parent / "runner_plugin.py").read_text()
    )
    (folder / "suite.yaml").write_text(
        "name: rule\ncases: cases.jsonl\nplugins: [runner_plugin]\n"
        "systems: [{name: s, predictions: preds.jsonl}]\n"
        "scorers: [test_slow_echo, test_half_unscored]\n"
        f"reports: [console, json, html, excel, markdown]\n{extra}"
    )
    return folder / "suite.yaml"


def test_every_report_counts_the_failures_and_flags_the_unscored(tmp_path: Path) -> None:
    suite = _answer_suite(tmp_path / "s")
    result = CliRunner().invoke(app, ["run", str(suite), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.stderr  # flagged, but not --strict
    out = result.stdout
    assert "test_slow_echo: failed 2: missing: 2" in out
    # 4 of 10 unscored (its even cases; the two missing outputs are failures, counted)
    assert "⚠ test_half_unscored: 40.0% of the cases unscored" in out
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())["systems"]["s"]
    echo = summary["scorers"]["test_slow_echo"]
    assert echo["failures"] == {"missing": 2} and echo["mean"] == pytest.approx(0.8)
    half = summary["scorers"]["test_half_unscored"]
    # flagged: no mean, no pass rate; what was scored and the bounds shown beside
    assert (half["flagged"], half["mean"], half["pass_rate"]) == (True, None, None)
    assert half["mean_scored"] == pytest.approx(4 / 6)
    assert half["bounds"] == pytest.approx([0.4, 0.8])
    note = "no mean (what was scored: 0.667; over every case it lies in 0.400-0.800)"
    assert note in out.replace("\n", " ").replace("  ", " ") or note in out
    html = (tmp_path / "r" / "report.html").read_text()
    assert "failed: missing: 2" in html and "⚠" in html and note in html
    markdown = (tmp_path / "r" / "report.md").read_text()
    assert (
        "failed missing: 2" in markdown
        and f"40.0% of the cases unscored or in error: {note}" in markdown
    )
    from openpyxl import load_workbook

    cells = {
        str(c.value)
        for ws in load_workbook(tmp_path / "r" / "report.xlsx").worksheets
        for row in ws.iter_rows()
        for c in row
        if c.value is not None
    }
    assert "missing: 2" in cells and any(c.startswith("40.0% (flagged") for c in cells)


def test_strict_fails_a_run_with_a_flagged_mean(tmp_path: Path) -> None:
    suite = _answer_suite(tmp_path / "s")
    strict = CliRunner().invoke(app, ["run", str(suite), "--out", str(tmp_path / "r"), "--strict"])
    assert strict.exit_code == 1
    assert "strict: s: test_half_unscored: 40.0% of the cases unscored" in strict.stderr
    relaxed = _answer_suite(tmp_path / "t", "settings: {max_unscored_share: 0.5}\n")
    ok = CliRunner().invoke(app, ["run", str(relaxed), "--out", str(tmp_path / "r2"), "--strict"])
    assert ok.exit_code == 0, ok.stderr


def test_a_mean_with_nothing_scored_reads_a_dash_with_its_counts() -> None:
    from io import StringIO

    from rich.console import Console

    summary = {
        "suite": "t",
        "systems": {
            "s": {
                "cases": 3,
                "pass_rate": None,
                "scorers": {
                    "judged": {"mean": None, "ok": 1, "failed_outputs": 1, "unscored": 2,
                               "error": 0, "pass_rate": 0.0, "flagged": True,
                               "unscored_share": 2 / 3, "failures": {"missing": 1}}
                },
            }
        },
    }  # fmt: skip
    buffer = StringIO()
    print_summary(summary, Console(file=buffer, width=150))
    text = buffer.getvalue()
    row = next(line for line in text.splitlines() if "judged" in line and "│" in line)
    assert row.split("│")[2].strip() == "— ⚠"  # the mean cell: a dash, flagged
    assert "judged: failed 1: missing: 1" in text and "66.7% of the cases unscored" in text


def test_a_text_to_sql_callable_returns_a_plain_string(tmp_path: Path) -> None:
    """In a query suite a plain string from a callable is the query (in a RAG suite, the
    answer): the README's text-to-SQL example, run on the SQL example's cases."""
    root = Path(__file__).resolve().parents[1]
    (tmp_path / "text_to_sql.py").write_text(
        "def answer(case):\n"
        "    query = case.target.query  # this stand-in model answers with the gold\n"
        "    return query.text if query else 'SELECT DISTINCT status FROM orders ORDER BY 1'\n"
    )
    suite = tmp_path / "suite.yaml"
    sql = root / "examples" / "sql"
    suite.write_text(
        f"name: callable\ncases: {sql}/cases/*.yaml\n"
        f"databases:\n  sales: {{engine: duckdb, fixture: {sql}/fixtures/sales}}\n"
        f"  sales_sqlite: {{engine: sqlite, fixture: {sql}/fixtures/sales}}\n"
        "comparison: {columns: permutation}\n"
        "systems: [{name: model, callable: 'text_to_sql:answer'}]\n"
        "scorers: [execution_match]\nreports: [json]\n"
    )
    result = run_suite(load_suite(suite), tmp_path / "r", progress=False)
    s = result.summary["systems"]["model"]["scorers"]["execution_match"]
    assert s["mean"] == 1.0 and s["failed_outputs"] == 0
