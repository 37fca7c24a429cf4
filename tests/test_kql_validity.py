"""Offline KQL validity with Kusto.Language under Node: the validator, the NL2KQL scorers
`kql_syntax` / `kql_semantic` in a run, gold queries in `validate`. One helper process serves
the whole test session (the shared validator); the tests skip when Node or the npm package is
not installed (`make install` installs it when npm is present)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from queryeval.cli import app
from queryeval.engines import (
    KqlSchema,
    KqlValidator,
    KqlValidatorTimeout,
    independent_verdict,
    shared_validator,
)
from queryeval.engines import _kusto_language as kusto_language

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "examples" / "kql" / "fixtures" / "logs"
# the logs fixture's table, as DuckDB types (the engine's schema gives them so)
TABLES = {
    "Logs": {
        "Timestamp": "TIMESTAMP",
        "Level": "VARCHAR",
        "Service": "VARCHAR",
        "DurationMs": "BIGINT",
        "Props": "JSON",
    }
}

needs_kusto_language = pytest.mark.skipif(
    shared_validator().missing() is not None,
    reason=f"Kusto.Language is not installed: {shared_validator().missing()}",
)


@pytest.fixture(scope="module")
def validator() -> KqlValidator:
    return shared_validator()


@needs_kusto_language
@pytest.mark.parametrize(
    ("query", "syntax_ok", "semantic_ok", "kind"),
    [
        ("Logs | where Level == 'Error' | summarize n = count() by Service", True, True, None),
        ("Logs | where Timestamp > ago(1h) | extend s = Props.user | take 5", True, True, None),
        ("Logs | wher Level == 'Error'", False, False, "syntax"),
        ("Logs | where Level == ", False, False, "syntax"),
        ("Logs | summarize count( by Service", False, False, "syntax"),
        ("", False, False, "syntax"),
        ("Log | take 1", True, False, "schema"),  # unknown table
        ("Logs | where Levl == 'Error'", True, False, "schema"),  # unknown column
        ("Logs | extend x = no_such_function(Level)", True, False, "schema"),  # unknown function
        ("Logs | extend x = Level + 1", True, False, "syntax"),  # a type error
        ("Logs | extend a = 1, b = a + 1", True, False, "schema"),  # same-clause reference
    ],
)
def test_known_syntax_and_schema_errors(
    validator: KqlValidator, query: str, syntax_ok: bool, semantic_ok: bool, kind: str | None
) -> None:
    schema = KqlSchema.from_tables(TABLES)
    verdict = validator.check(query, schema)
    assert (verdict.syntax_ok, verdict.semantic_ok) == (syntax_ok, semantic_ok), verdict.message()
    if not semantic_ok:
        assert verdict.message()
    validity, found_kind, _ = independent_verdict(query, TABLES, validator)
    assert validity == ("valid" if semantic_ok else "invalid")
    assert found_kind == kind


@needs_kusto_language
def test_column_types_come_from_the_engine_types(validator: KqlValidator) -> None:
    schema = KqlSchema.from_tables(TABLES)
    assert validator.check(
        "Logs | where DurationMs > 10 and Timestamp > ago(1d)", schema
    ).semantic_ok
    # a string column is not a datetime, so this is a type error against this schema
    assert not validator.check("Logs | where Level > ago(1d)", schema).semantic_ok


@needs_kusto_language
def test_a_remote_cluster_is_not_established(validator: KqlValidator) -> None:
    verdict = independent_verdict("cluster('x').database('y').Logs | take 1", TABLES, validator)
    assert verdict[0] == "unknown"


@needs_kusto_language
def test_a_helper_past_its_deadline_is_replaced(validator: KqlValidator) -> None:
    """The limit is the helper's own CPU time for the query: a query that costs more is
    blamed (and the busy helper replaced); a cheap one gets its verdict, however small the
    limit (the start is not counted against it)."""
    slow = KqlValidator(timeout_s=0.1)
    long = "range x from 1 to 10 step 1" + "".join(f" | extend c{i} = x" for i in range(3000))
    try:
        assert slow.check("print 1").semantic_ok  # the start is not the query's
        with pytest.raises(KqlValidatorTimeout, match="CPU time"):
            slow.check(long)
        assert slow.check("print 2").semantic_ok  # a fresh helper answers
        assert slow.starts == 2
    finally:
        slow.close()


def test_without_node_or_the_package_the_message_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    missing = KqlValidator(node="", package=Path("/nonexistent"))
    missing.package = None
    message = missing.missing()
    assert message is not None and "npm install" in message and "Node.js" in message
    assert independent_verdict("print 1", None, missing)[0] == "unknown"


# -- the scorers in a run ----------------------------------------------------------------------


def write_suite(
    tmp: Path,
    predictions: list[dict[str, Any]],
    golds: list[str],
    scorers: list[str] | None = None,
    extra: tuple[str, ...] = (),
) -> Path:
    cases = [
        {"id": f"c{i}", "conversation": [{"content": "q", "target": {"query": g}}]}
        for i, g in enumerate(golds)
    ]
    (tmp / "cases.yaml").write_text(yaml.safe_dump(cases))
    (tmp / "preds.jsonl").write_text("".join(json.dumps(p) + "\n" for p in predictions))
    suite = {
        "name": "kql-validity",
        "cases": "cases.yaml",
        "databases": {
            "logs": {
                "engine": "kql",
                "fixture": str(LOGS),
                "options": {"now": "2024-06-01T12:00:00Z"},
            }
        },
        "systems": [{"name": "s", "predictions": "preds.jsonl"}],
        "scorers": [{"name": n} for n in (scorers or ["kql_syntax", "kql_semantic", *extra])],
        "reports": ["json"],
    }
    path = tmp / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


GOLD = "Logs | where Level == 'Error' | count"
PREDICTIONS = [
    {"case_id": "c0", "query": "Logs | where Level == 'Error' | count"},  # valid
    {"case_id": "c1", "query": "Logs | wher Level == 'Error'"},  # syntax error
    {"case_id": "c2", "query": "Logs | where Levl == 'Error' | count"},  # unknown column
    {"case_id": "c3", "query": ""},  # nothing
    {"case_id": "c4", "error": "the model timed out"},  # the system failed
]


@needs_kusto_language
def test_the_scorers_score_a_run(tmp_path: Path) -> None:
    from queryeval.runner import load_suite, run_suite

    suite = write_suite(tmp_path, PREDICTIONS, [GOLD] * 5)
    result = run_suite(load_suite(suite), tmp_path / "run", progress=False)
    records = [json.loads(line) for line in (result.out_dir / "results.jsonl").open()]
    by_case = {r["case_id"]: r["scores"] for r in records}
    assert [by_case[f"c{i}"]["kql_syntax"]["value"] for i in range(5)] == [1, 0, 1, 0, 0]
    assert [by_case[f"c{i}"]["kql_semantic"]["value"] for i in range(5)] == [1, 0, 0, 0, 0]
    semantic = by_case["c2"]["kql_semantic"]
    assert "Levl" in semantic["explanation"]
    assert semantic["details"]["validity"]["semantic"][0]["code"] == "KS142"
    summary = json.loads((result.out_dir / "summary.json").read_text())
    text = json.dumps(summary)
    assert "KS142" in text and "KS176" in text  # the diagnostic codes, counted


def test_a_suite_asking_for_the_scorers_without_kusto_language_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kusto_language, "_SHARED", KqlValidator(node="", package=None))
    monkeypatch.setattr(kusto_language._SHARED, "package", None)
    suite = write_suite(tmp_path, PREDICTIONS[:1], [GOLD])
    run = CliRunner().invoke(app, ["run", str(suite), "--out", str(tmp_path / "run")])
    assert run.exit_code == 2
    assert "npm install" in run.output and "scorers.kql_syntax" in run.output
    assert not (tmp_path / "run" / "results.jsonl").exists()


@needs_kusto_language
def test_validate_flags_a_gold_that_is_not_valid_kql(tmp_path: Path) -> None:
    good = write_suite(tmp_path, PREDICTIONS[:1], [GOLD], extra=("executes",))
    ok = CliRunner().invoke(app, ["validate", str(good), "--strict"])
    assert ok.exit_code == 0, ok.output
    # flagged whether or not the engine runs it
    bad = write_suite(
        tmp_path, PREDICTIONS[:1], ["Logs | where Levl == 'x' | count"], extra=("executes",)
    )
    run = CliRunner().invoke(app, ["validate", str(bad), "--strict"])
    assert run.exit_code == 1
    assert "c0 (gold 0): invalid: not valid KQL (Kusto.Language)" in run.output
    assert "Levl" in run.output


# -- the relabelling: valid KQL the engine cannot run is the evaluator's; invalid, the system's


RELABEL = [
    # valid KQL the embedded engine does not run (a construct it lacks)
    {"case_id": "c0", "query": "Logs | summarize percentiles_array(DurationMs, 95)"},
    # the same construct over a column that does not exist: invalid
    {"case_id": "c1", "query": "Logs | summarize percentiles_array(NoSuchColumn, 95)"},
    # valid KQL duckdb-kql's own parser rejects (it reports `syntax`)
    {"case_id": "c2", "query": "Logs | serialize | extend p = prev(Level) | count"},
    # a syntax error
    {"case_id": "c3", "query": "Logs | wher Level == 'Error'"},
]


def relabel_run(tmp_path: Path) -> dict[str, dict[str, Any]]:
    from queryeval.runner import load_suite, run_suite

    predictions = [{**p, "language": "kql"} for p in RELABEL]
    suite = write_suite(tmp_path, predictions, [GOLD] * 4, scorers=["execution_match"])
    result = run_suite(load_suite(suite), tmp_path / "run", progress=False)
    records = [json.loads(line) for line in (result.out_dir / "results.jsonl").open()]
    return {r["case_id"]: r["scores"]["execution_match"] for r in records}


@needs_kusto_language
def test_valid_kql_the_engine_cannot_run_is_unscored_and_invalid_kql_fails(
    tmp_path: Path,
) -> None:
    scores = relabel_run(tmp_path)
    for case in ("c0", "c2"):  # the engine's fault: unscored, never a 0
        assert scores[case]["status"] == "unscored", scores[case]
        assert "Kusto.Language" in scores[case]["explanation"]
    assert scores["c1"]["value"] == 0 and scores["c1"]["details"]["failure"] == "schema"
    assert "NoSuchColumn" in scores["c1"]["explanation"]
    assert scores["c3"]["value"] == 0 and scores["c3"]["details"]["failure"] == "syntax"


def test_without_kusto_language_the_engine_gap_fails_and_is_reported_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kusto_language, "_SHARED", KqlValidator(node="", package=None))
    monkeypatch.setattr(kusto_language._SHARED, "package", None)
    scores = relabel_run(tmp_path)
    assert scores["c0"]["value"] == 0
    assert scores["c0"]["details"]["failure"] == "engine_could_not_run"
