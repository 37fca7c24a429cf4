"""verified_match on a database reached by a SQLAlchemy URL: a sample of the tables both
queries read copied into a local SQLite (a SQLite URL) or DuckDB file (PostgreSQL, the
queries translated by sqlglot); the gold against itself and equivalent rewrites get no
counterexample, a wrong prediction EX accepts gets a minimal witness that replays and says
it is a local copy; a copy that cannot stand for the server leaves the case unverified."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from queryeval.cases import Attempt, Case, Output, Score
from queryeval.config import DatabaseConfig, ScorerConfig
from queryeval.engines import Limits, build_engine
from queryeval.runner import load_suite
from queryeval.scorers import ScoringContext, build_scorer
from queryeval.verify import replay
from task_support import club_engine, needs_postgres

SCHEMA = """
CREATE TABLE country (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE singer (id INTEGER PRIMARY KEY, name TEXT, age INTEGER,
                     country_id INTEGER REFERENCES country(id));
INSERT INTO country VALUES (1, 'France'), (2, 'Spain');
INSERT INTO singer VALUES (1, 'Ann', 25, 1), (2, 'Bob', 40, 2), (3, 'Cid', 35, 1),
  (4, 'Dee', 50, 2);
"""

EQUIVALENT = [
    ("SELECT s.name FROM singer s JOIN country c ON s.country_id = c.id WHERE c.name = 'Spain'",
     "SELECT name FROM singer WHERE country_id IN (SELECT id FROM country WHERE name = 'Spain')"),
    ("SELECT count(*) FROM singer WHERE age BETWEEN 30 AND 45",
     "SELECT count(*) FROM singer WHERE age >= 30 AND age <= 45"),
]  # fmt: skip

WRONG = [  # EX accepts both on the database
    ("SELECT count(*) FROM singer WHERE age > 30", "SELECT count(*) FROM singer WHERE age >= 30"),
    ("SELECT count(*) FROM singer", "SELECT count(name) FROM singer"),
]  # fmt: skip


def _context(url: str, folder: Path) -> ScoringContext:
    (folder / "cases.yaml").write_text(
        "- id: c1\n  conversation: [{content: q, target: [{query: {text: 'SELECT 1', "
        "database: db}}]}]\n"
    )
    (folder / "p.jsonl").write_text('{"id": "c1", "query": "SELECT 1"}\n')
    (folder / "suite.yaml").write_text(
        f"name: server\ncases: cases.yaml\ndatabases:\n  db: {{engine: sqlalchemy, "
        f"url: '{url}', options: {{timeout_s: 5}}}}\n"
        "systems:\n  - {name: s, predictions: p.jsonl}\nscorers:\n  - {name: verified_match}\n"
    )
    return ScoringContext(load_suite(folder / "suite.yaml"), cache_dir=folder / "cache")


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScoringContext]:
    folder = tmp_path_factory.mktemp("verified_server")
    con = sqlite3.connect(folder / "s.sqlite")
    con.executescript(SCHEMA)
    con.commit()
    con.close()
    context = _context(f"sqlite:///{folder / 's.sqlite'}", folder)
    yield context
    context.close()


def score(ctx: ScoringContext, gold: str, pred: str, **options: Any) -> Score:
    target = {"query": {"text": gold, "database": "db"}}
    case = Case.model_validate({"id": "c", "conversation": [{"content": "q", "target": [target]}]})
    options = {"variants": 16, **options}
    scorer = build_scorer(ScorerConfig(name="verified_match", options=options))
    return scorer.finish(scorer.score(case, Output(attempts=[Attempt(query=pred)]), ctx))


@pytest.mark.parametrize(("gold", "pred"), [(WRONG[0][0], WRONG[0][0]), *EQUIVALENT])
def test_the_gold_and_equivalent_rewrites_get_no_counterexample_on_the_copy(
    ctx: ScoringContext, gold: str, pred: str
) -> None:
    s = score(ctx, gold, pred)
    assert s.details["tier"] == "variants", s.details.get("unverified")
    assert s.details["metrics"]["verified"] == 1.0 and "counterexample" not in s.details
    assert s.details["variants"]["checked"] >= 10


@pytest.mark.parametrize(("gold", "pred"), WRONG)
def test_a_wrong_prediction_gets_a_witness_that_says_it_is_a_local_copy(
    ctx: ScoringContext, gold: str, pred: str
) -> None:
    s = score(ctx, gold, pred)
    assert s.details["metrics"] == {"ex": 1.0, "verified": 0.0, "with_judge": 0.0}
    witness = s.details["counterexample"]
    assert witness["dialect"] == "sqlite" and witness["minimal"] and witness["replayed"]
    assert len(witness["tables"]["singer"]["rows"]) == 1  # (its country row with it)
    first = witness["assumptions"][0]
    assert first["kind"] == "local_copy" and "not run on the server" in first["text"]
    assert "singer: 4" in first["text"] and witness["server"]["complete_copy"]
    runs = replay(witness["script"], "sqlite", witness["queries"], Limits())
    assert [list(r) for r in runs["gold"].result.rows] == witness["gold"]["rows"]
    assert [list(r) for r in runs["prediction"].result.rows] == witness["prediction"]["rows"]
    again = score(ctx, gold, pred).details["counterexample"]
    assert again == witness  # the same seed, the same witness


def test_a_bounded_sample_is_said_in_the_witness(ctx: ScoringContext) -> None:
    """One row a table: the copy is a sample (no check against the server's results is
    possible), and the witness says so."""
    s = score(ctx, *WRONG[0], rows_per_table=1)
    witness = s.details["counterexample"]
    assert witness["server"]["complete_copy"] is False
    assert "a bounded sample" in witness["assumptions"][0]["text"]
    assert "singer: 1+" in witness["assumptions"][0]["text"]


def test_garbage_and_wrong_answers_stay_at_ex(ctx: ScoringContext) -> None:
    for pred in ("SELECT age FROM singer", "SELEC name FRM singer"):
        s = score(ctx, "SELECT name FROM singer", pred)
        assert not s.value
        metrics = s.details.get("metrics", {"ex": 0.0, "verified": 0.0})
        assert metrics["verified"] <= metrics["ex"] == 0.0
        assert "counterexample" not in s.details


@needs_postgres
def test_postgres_over_sqlalchemy_translated_to_duckdb(tmp_path: Path) -> None:
    """A PostgreSQL server queryeval starts, reached by a psycopg URL: the witness is a DuckDB
    database, the queries sqlglot's translations, the server's queries kept beside them;
    it may hold only on the translation, so it is reported unverified, not counted."""
    server = club_engine("postgres", tmp_path)
    try:
        kv = dict(part.split("=", 1) for part in server.conninfo.split())
        url = (f"postgresql+psycopg://{kv['user']}:{kv['password']}@/{kv['dbname']}"
               f"?host={kv['host']}&port={kv['port']}")  # fmt: skip
        ctx = _context(url, tmp_path)
        try:
            right = score(ctx, "SELECT name FROM member WHERE score BETWEEN 50 AND 90",
                          "SELECT name FROM member WHERE score >= 50 AND score <= 90")  # fmt: skip
            assert right.details["tier"] == "variants", right.details.get("unverified")
            assert right.details["metrics"]["verified"] == 1.0
            gold, pred = ("SELECT count(*) FROM member WHERE score > 60",
                          "SELECT count(*) FROM member WHERE score >= 60")  # fmt: skip
            wrong = score(ctx, gold, pred)  # a witness of the translations: not counted
            assert wrong.details["metrics"]["verified"] == 1.0 and wrong.details["tier"] == "ex"
            assert "translated by sqlglot from postgres" in wrong.details["unverified"]
            witness = wrong.details["unverified_witness"]
            assert witness["dialect"] == "duckdb" and witness["replayed"]
            assert witness["server"]["queries"] == {"gold": gold, "prediction": pred}
            assert (
                "translated by sqlglot from postgres to duckdb"
                in (witness["assumptions"][0]["text"])
            )
            runs = replay(witness["script"], "duckdb", witness["queries"], Limits())
            assert [list(r) for r in runs["gold"].result.rows] == witness["gold"]["rows"]
        finally:
            ctx.close()
    finally:
        server.close()


def test_an_unfaithful_copy_is_unverified_not_a_counterexample(tmp_path: Path) -> None:
    """When the local copy's result of a query differs from the server's, the case stays
    at EX with the reason (the evaluator's limit, never the prediction's fault)."""
    from queryeval.verify import Settings, Verifier

    con = sqlite3.connect(tmp_path / "s.sqlite")
    con.executescript(SCHEMA)
    con.close()
    engine = build_engine("db", DatabaseConfig(engine="sqlalchemy",
                                               url=f"sqlite:///{tmp_path / 's.sqlite'}"),
                          tmp_path, tmp_path)  # fmt: skip
    verifier = Verifier(engine, Settings(variants=4))
    try:
        calls = []

        def differs(p: Any, g: Any) -> str | None:  # a copy that never matches the server
            calls.append(1)
            return "differs" if len(calls) == 1 else None

        with pytest.raises(RuntimeError, match="does not reproduce the server"):
            verifier.check("SELECT name FROM singer", "SELECT name FROM singer", differs)
    finally:
        verifier.close()
        engine.close()


def test_a_witness_on_a_column_copied_as_text_is_unverified_not_a_failure(
    tmp_path: Path,
) -> None:
    """A column whose type the copy cannot keep is copied as text: `x > 30` and `x >= 31`
    differ on the text '300', not on the server's number 300; a bounded sample (2 of 3
    rows) leaves no check against the server's results. The witness is the
    evaluator's limit: EX's verdict stands, the witness is kept under `unverified_witness`
    with the reason."""
    con = sqlite3.connect(tmp_path / "s.sqlite")
    con.executescript("CREATE TABLE t (id INTEGER PRIMARY KEY, x);"
                      "INSERT INTO t VALUES (1, 300), (2, 25), (3, 40);")  # fmt: skip
    con.commit()
    con.close()
    ctx = _context(f"sqlite:///{tmp_path / 's.sqlite'}", tmp_path)
    try:
        s = score(ctx, "SELECT count(*) FROM t WHERE x > 30",
                  "SELECT count(*) FROM t WHERE x >= 31", rows_per_table=2)  # fmt: skip
    finally:
        ctx.close()
    assert s.details["metrics"] == {"ex": 1.0, "verified": 1.0, "with_judge": 1.0}
    assert s.value == 1.0 and "counterexample" not in s.details and s.details["tier"] == "ex"
    assert s.details["unverified"].startswith("witness on a copy not proven faithful")
    assert "copied as text: t.x" in s.details["unverified"]
    witness = s.details["unverified_witness"]
    assert witness["server"]["queries"]["gold"] == "SELECT count(*) FROM t WHERE x > 30"
    assert any(isinstance(v, str) for row in witness["tables"]["t"]["rows"] for v in row[1:])
