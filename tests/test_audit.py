"""`queryeval audit` on a suite with planted defects of every kind (tests/audit_support.py):
each found, no clean gold flagged, every finding re-checked from audit.json alone."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from audit_support import PLANTED, make_suite
from queryeval.cli._app import app


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    folder = tmp_path_factory.mktemp("planted")
    suite = make_suite(folder)
    result = CliRunner().invoke(
        app,
        [
            "audit",
            str(suite),
            "--out",
            str(folder / "out"),
            "--cache-dir",
            str(folder / "cache"),
            "--fail-on",
            "disputed,gold_fails",
            "--write-overlay",
            str(folder / "draft.yaml"),
        ],
    )
    return folder, result


def _findings(folder: Path) -> list[dict]:
    return json.loads((folder / "out" / "audit.json").read_text())


def test_every_planted_defect_is_found_and_no_clean_gold_flagged(audited) -> None:
    folder, result = audited
    assert result.exit_code == 1, result.output  # --fail-on disputed,gold_fails
    found = {(f["case_id"], f["kind"]) for f in _findings(folder)}
    assert found == PLANTED
    assert not any(case.startswith(("ok-", "duck-ok", "kql-ok")) for case, _ in found)


def test_console_and_html_show_the_findings(audited) -> None:
    folder, result = audited
    assert "22 finding(s)" in result.output
    assert (
        "bad-case (gold 0): unknown_literal: 'paris' never occurs in people.city" in result.output
    )
    page = (folder / "out" / "audit.html").read_text()
    assert "<script" not in page and "http" not in page  # self-contained
    for case_id, kind in PLANTED:
        assert f"<td>{case_id}</td>" in page and kind in page
    summary = json.loads((folder / "out" / "audit-summary.json").read_text())
    assert summary["counts"]["nondeterministic"] == 5 and summary["golds"] == 37


def _sqlite_rows(path: str, query: str) -> list[list]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [list(r) for r in con.execute(query).fetchall()]
    finally:
        con.close()


def _duck_rows(path: str, query: str) -> list[list]:
    import duckdb

    con = duckdb.connect(path, read_only=True)
    try:
        return [list(r) for r in con.execute(query).fetchall()]
    finally:
        con.close()


def _rows(database: dict, query: str) -> list[list]:
    run = _sqlite_rows if database["dialect"] == "sqlite" else _duck_rows
    return run(database["file"], query)


def test_every_sql_finding_is_recheckable_from_audit_json_alone(audited, tmp_path: Path) -> None:
    """Re-run what each finding's evidence says with sqlite3 / duckdb directly (no queryeval
    engine) and get what it says."""
    folder, _ = audited
    checked = 0
    for f in _findings(folder):
        ev = f["evidence"]
        db = ev["database"]
        if db["language"] != "sql":
            assert ev["query"] and db["name"] == "logs"
            continue
        checked += 1
        if f["kind"] == "gold_fails":
            import duckdb

            with pytest.raises((sqlite3.Error, duckdb.Error)):
                _rows(db, ev["query"])
        elif f["kind"] == "unknown_literal":
            assert _rows(db, ev["check"]) == []
            assert ev["literal"] in ev["query"] and ev["near_matches"]
            assert any(
                _rows(db, ev["check"].replace(f"'{ev['literal']}'", f"'{m['value']}'"))
                for m in ev["near_matches"]
            )
        elif f["kind"] == "non_discriminating":
            rows = _rows(db, ev["query"])
            assert rows == ev["result"]["rows"]
            assert (
                rows == []
                or all(v is None for r in rows for v in r)
                or (ev["reason"] == "same_on_empty")
            )
        elif f["kind"] == "nondeterministic":
            from queryeval.audit._permute import permuted_copy

            assert _rows(db, ev["query"]) == ev["result"]["rows"]
            copy = tmp_path / f"{f['case_id']}.{db['dialect']}"
            permuted_copy(
                db["dialect"],
                Path(db["file"]),
                copy,
                ev["permuted"]["order"],
                ev["permuted"]["seed"],
            )
            other = _rows({**db, "file": str(copy)}, ev["query"])
            assert other == ev["permuted"]["result"]["rows"] != ev["result"]["rows"]
        elif f["kind"] == "disputed":
            gold = _rows(db, ev["query"])
            assert gold == ev["gold_result"]["rows"]
            majority = [_rows(db, s["query"]) for s in ev["systems"]]
            assert len(ev["systems"]) >= 3
            assert all(m == ev["majority_result"]["rows"] != gold for m in majority)
        elif f["kind"] == "conflicting_golds":
            results = {json.dumps(_rows(db, g["query"])) for g in ev["golds"]}
            assert len(results) >= 2
    assert checked == 16


def test_drafted_overlay_is_proposed_and_loads(audited) -> None:
    from queryeval.config import load_overlay

    folder, _ = audited
    overlay = load_overlay(folder / "draft.yaml")
    by_case = {e.case_id: e for e in overlay.entries}
    assert {c for c, _ in PLANTED} == set(by_case)
    assert all(e.proposed for e in overlay.entries) and overlay.applied == {}
    assert by_case["bad-disputed"].gold.text == "SELECT count(*) FROM people WHERE age > 30"
    assert "'Paris'" in by_case["bad-case"].gold.text
    assert by_case["bad-fails"].drop


def test_clean_golds_exit_0_and_bad_fail_on_is_exit_2(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, kql=False, only={"ok-count", "ok-paris", "ok-top", "ok-max"})
    command = [
        "audit",
        str(suite),
        "--out",
        str(tmp_path / "o"),
        "--cache-dir",
        str(tmp_path / "c"),
    ]
    result = CliRunner().invoke(app, [*command, "--fail-on", "gold_fails,disputed"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "o" / "audit.json").read_text()) == []
    result = CliRunner().invoke(app, [*command, "--fail-on", "typo_kind"])
    assert result.exit_code == 2 and "typo_kind" in result.output


def test_order_patterns_and_literal_comparisons() -> None:
    from queryeval.audit._static import comparisons, order_patterns

    assert order_patterns("SELECT a FROM t ORDER BY a", "sqlite") == []
    assert order_patterns("SELECT a, count(*) FROM t GROUP BY a", "sqlite") == []
    assert order_patterns("SELECT max(a) FROM t", "sqlite") == []
    assert order_patterns("SELECT b, min(a) FROM t", "sqlite") == ["bare column"]
    schema = {"t": ["a", "City"], "u": ["City"]}
    found = comparisons(
        "SELECT * FROM t JOIN u ON t.a = u.a WHERE u.city = 'X' AND "
        "t.a IN ('p', 'q') AND 'Y' = t.City AND t.a LIKE 'z%' AND a = 3",
        "sqlite",
        schema,
    )
    assert sorted((c.table, c.column, c.op, c.literal) for c in found) == sorted(
        [
            ("u", "City", "eq", "X"),
            ("t", "City", "eq", "Y"),
            ("t", "a", "like", "z%"),
            ("t", "a", "in", "p"),
            ("t", "a", "in", "q"),
        ]
    )
    # an unqualified column two tables hold cannot be resolved: no comparison
    assert comparisons("SELECT * FROM t, u WHERE City = 'X'", "sqlite", schema) == []


def test_gold_on_variants_adapter(tmp_path: Path) -> None:
    from audit_support import make_databases
    from queryeval.audit._variants import GoldOnVariants, same_everywhere
    from queryeval.engines import Limits
    from queryeval.verify import open_engine

    make_databases(tmp_path)
    engine = open_engine("sqlite", tmp_path / "shop.sqlite", Limits(timeout_s=5))
    variants = GoldOnVariants(engine, variants=6)
    try:
        counted = variants.results("SELECT count(*) FROM people")
        assert len(counted) >= 2
        assert not same_everywhere(counted, {}, "SELECT count(*) FROM people", "sqlite")
        constant = variants.results("SELECT count(*) >= 0 FROM people")
        assert same_everywhere(constant, {}, "SELECT count(*) >= 0 FROM people", "sqlite")
    finally:
        variants.close()
        engine.close()


@pytest.mark.parametrize(
    "name",
    ["queryeval.audit", "queryeval.audit._model", "queryeval.audit._static",
     "queryeval.audit._permute", "queryeval.audit._checks", "queryeval.audit._overlay",
     "queryeval.config._overlays", "queryeval.audit._from_review"],
)  # fmt: skip
def test_docstring_examples_run(name: str) -> None:
    import doctest
    import importlib

    failed, tried = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert failed == 0 and tried > 0


def test_a_database_that_cannot_be_used_is_exit_2_not_a_finding(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text(
        json.dumps(
            {
                "id": "x",
                "conversation": [
                    {"content": "q", "target": {"query": {"text": "SELECT 1", "database": "gone"}}}
                ],
            }
        )
        + "\n"
    )
    (tmp_path / "p.jsonl").write_text("")
    (tmp_path / "suite.yaml").write_text(
        "name: u\ncases: cases.jsonl\ndatabases:\n  gone: {engine: sqlite, path: nothere.sqlite}\n"
        "systems:\n  - {name: s, predictions: p.jsonl}\nscorers: [execution_match]\n"
    )
    result = CliRunner().invoke(app, ["audit", str(tmp_path / "suite.yaml"), "--out",
                                      str(tmp_path / "o")])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert json.loads((tmp_path / "o" / "audit.json").read_text()) == []
    summary = json.loads((tmp_path / "o" / "audit-summary.json").read_text())
    assert summary["unusable_databases"] == ["gone"] and summary["golds"] == 0
    assert "database 'gone' cannot be used" in result.output


def test_every_kql_finding_is_recheckable_with_the_kql_engine(audited, tmp_path: Path) -> None:
    """The KQL findings' evidence re-run by a KQL engine opened on the evidence's file (and
    on a reordered copy made as the evidence says), with the evidence's clock."""
    from queryeval.config import DatabaseConfig
    from queryeval.engines import build_engine

    folder, _ = audited
    engines: dict[Path, Any] = {}

    def kql_rows(path: Path, options: dict, query: str) -> list[list]:
        if path not in engines:
            config = DatabaseConfig(engine="kql", path=str(path), options=options)
            engines[path] = build_engine("recheck", config, path.parent, tmp_path / "cache")
        run = engines[path].execute(query)
        assert run.ok, run.outcome.message
        return [list(r) for r in run.result.rows]

    kinds = set()
    try:
        _recheck_kql(_findings(folder), kql_rows, tmp_path, kinds)
    finally:
        for engine in engines.values():
            engine.close()
    assert kinds == {"unknown_literal", "nondeterministic"}


def _recheck_kql(findings: list[dict], kql_rows: Any, tmp_path: Path, kinds: set) -> None:
    from queryeval.audit._permute import permuted_copy

    for f in findings:
        ev = f["evidence"]
        db = ev["database"]
        if db["language"] != "kql" or f["kind"] not in ("unknown_literal", "nondeterministic"):
            continue
        kinds.add(f["kind"])
        source, options = Path(db["file"]), db["options"]
        if f["kind"] == "unknown_literal":
            assert kql_rows(source, options, ev["check"]) == []
            near = ev["near_matches"][0]["value"]
            assert kql_rows(source, options, ev["check"].replace(ev["literal"], near))
        else:
            assert kql_rows(source, options, ev["query"]) == ev["result"]["rows"]
            copy = tmp_path / f"{f['case_id']}.duckdb"
            permuted_copy("duckdb", source, copy, ev["permuted"]["order"], ev["permuted"]["seed"])
            rows = kql_rows(copy, options, ev["query"])
            assert rows == ev["permuted"]["result"]["rows"] != ev["result"]["rows"]


def test_a_graph_copy_whose_rows_cannot_be_read_releases_its_verifier(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`Verifier.base` raising (the graph's rows unreadable) closes the verifier, which holds
    the shared scratch ArcadeDB, and notes why; the audit goes on without the check."""
    import queryeval.verify
    from queryeval.audit._checks import Auditor
    from queryeval.audit._model import AuditReport

    closed: list[bool] = []

    class Unreadable:
        def __init__(self, engine: Any, settings: Any) -> None:
            self.schema = type("S", (), {"tables": {"Person": None}})()

        def base(self, tables: list[str]) -> Any:
            raise RuntimeError("the server went away")

        def close(self) -> None:
            closed.append(True)

    monkeypatch.setattr(queryeval.verify, "Verifier", Unreadable)
    auditor = Auditor.__new__(Auditor)
    auditor._graphs, auditor.seed = {}, 0
    auditor.report = AuditReport("s", cases=1)
    assert auditor._graph_copy("movies", object()) is None  # type: ignore[arg-type]
    assert closed == [True]
    assert "the server went away" in auditor.report.notes[0]
    assert auditor._graph_copy("movies", object()) is None and closed == [True]  # type: ignore[arg-type]


def test_a_verifier_runs_a_query_on_reordered_rows_through_a_public_method(
    tmp_path: Path,
) -> None:
    """`Verifier.execute_on` (what the audit calls, not the private `_build`): the query's
    result on a variant holding the rows given, in their order."""
    from queryeval.config import DatabaseConfig
    from queryeval.engines import build_engine
    from queryeval.verify import Settings, Verifier

    con = sqlite3.connect(tmp_path / "d.sqlite")
    con.executescript("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1), (2), (3);")
    con.commit()
    con.close()
    engine = build_engine("d", DatabaseConfig(engine="sqlite", path=str(tmp_path / "d.sqlite")),
                          tmp_path, tmp_path)  # fmt: skip
    verifier = Verifier(engine, Settings())
    try:
        rows = verifier.base(["t"])["t"]
        assert rows == [(1,), (2,), (3,)]
        first = verifier.execute_on(["t"], {"t": rows}, "SELECT a FROM t LIMIT 1")
        last = verifier.execute_on(["t"], {"t": rows[::-1]}, "SELECT a FROM t LIMIT 1")
        assert first.result is not None and last.result is not None
        assert [tuple(r) for r in first.result.rows] == [(1,)]
        assert [tuple(r) for r in last.result.rows] == [(3,)]
    finally:
        verifier.close()
        engine.close()


@pytest.mark.parametrize("order", ["reversed", "shuffled"])
def test_a_permuted_duckdb_copy_holds_the_same_rows_in_reorders_order(
    tmp_path: Path, order: str
) -> None:
    """The copy (one INSERT ... SELECT a table) stores exactly `reorder`'s rows, with the
    declared types, in every schema; an empty table and a view are kept."""
    import duckdb

    from queryeval.audit._permute import permuted_copy, reorder

    con = duckdb.connect(str(tmp_path / "s.duckdb"))
    con.execute("CREATE SCHEMA x; CREATE TABLE t (a INTEGER, b DECIMAL(10, 2), c VARCHAR[]);"
                "CREATE TABLE x.u (k VARCHAR); CREATE TABLE e (z INTEGER);"
                "CREATE VIEW v AS SELECT a FROM t;"
                "INSERT INTO t SELECT i, i / 7, ['a' || i, NULL] FROM range(60) r(i);"
                "INSERT INTO x.u SELECT 'k' || i FROM range(9) r(i)")  # fmt: skip
    rows = {n: con.execute(f"SELECT * FROM {n}").fetchall() for n in ("t", "x.u")}
    types = con.execute("DESCRIBE t").fetchall()
    con.close()
    copy = permuted_copy("duckdb", tmp_path / "s.duckdb", tmp_path / "c.duckdb", order, seed=3)
    con = duckdb.connect(str(copy), read_only=True)
    try:
        assert con.execute("SELECT * FROM t").fetchall() == reorder(rows["t"], order, 3, "t")
        assert con.execute("SELECT * FROM x.u").fetchall() == reorder(rows["x.u"], order, 3, "u")
        assert con.execute("SELECT * FROM t").fetchall() != rows["t"]
        assert con.execute("DESCRIBE t").fetchall() == types
        assert con.execute("SELECT count(*) FROM e").fetchall() == [(0,)]
        assert len(con.execute("SELECT * FROM v").fetchall()) == 60
    finally:
        con.close()
