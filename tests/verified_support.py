"""A small suite for the verified_match tests: one schema (keys, a foreign key, NOT NULL,
UNIQUE, CHECK) as a SQLite file and a DuckDB file, and helpers to score a prediction."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from queryeval.cases import Attempt, Case, Output, Score
from queryeval.config import ScorerConfig
from queryeval.runner import load_suite
from queryeval.scorers import ScoringContext, build_scorer

SCHEMA = """
CREATE TABLE dept (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL UNIQUE, budget INTEGER);
CREATE TABLE emp (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, age INTEGER CHECK (age >= 0),
                  salary DOUBLE, dept_id INTEGER REFERENCES dept(id));
INSERT INTO dept VALUES (1, 'sales', 100), (2, 'ops', 250), (3, 'research', 400);
INSERT INTO emp VALUES (1, 'Ann', 25, 1000.0, 1), (2, 'Bob', 35, 1500.0, 1),
  (3, 'Cid', 45, 3000.0, 2), (4, 'Dee', 41, 2500.0, 3), (5, 'Eve', 29, 1200.0, 3);
"""


def make_suite(folder: Path) -> Path:
    """The suite file, with `shop_sqlite` and `shop_duckdb` holding the same rows."""
    import duckdb

    con = sqlite3.connect(folder / "shop.sqlite")
    con.executescript(SCHEMA)
    con.commit()
    con.close()
    duck = duckdb.connect(str(folder / "shop.duckdb"))
    duck.execute(SCHEMA)
    duck.close()
    (folder / "cases.yaml").write_text(
        "- id: c1\n  conversation: [{content: q, target: [{query: {text: 'SELECT 1', "
        "database: shop_sqlite}}]}]\n"
    )
    (folder / "p.jsonl").write_text('{"id": "c1", "query": "SELECT 1"}\n')
    suite = folder / "suite.yaml"
    suite.write_text(
        "name: verified\ncases: cases.yaml\n"
        "databases:\n"
        "  shop_sqlite: {engine: sqlite, path: shop.sqlite, options: {timeout_s: 5}}\n"
        "  shop_duckdb: {engine: duckdb, path: shop.duckdb, options: {timeout_s: 5}}\n"
        "systems:\n  - {name: s, predictions: p.jsonl}\n"
        "scorers:\n  - {name: verified_match}\n"
    )
    return suite


def context(suite: Path, cache: Path) -> ScoringContext:
    """A scoring context on the suite."""
    return ScoringContext(load_suite(suite), cache_dir=cache)


def score(ctx: ScoringContext, database: str, gold: str, pred: str, **options: Any) -> Score:
    """verified_match's score of `pred` against `gold` on `database`."""
    options = {"variants": 24, **options}  # the tests' budget; the default is 40
    return score_query(ctx, {"text": gold, "database": database}, pred, options)


def score_query(ctx: ScoringContext, query: dict[str, Any], pred: str,
                options: dict[str, Any]) -> Score:  # fmt: skip
    """verified_match's score (with `options`) of `pred` against the gold `query` (its
    text, database and language)."""
    target = {"query": query}
    case = Case.model_validate({"id": "c", "conversation": [{"content": "q", "target": [target]}]})
    scorer = build_scorer(ScorerConfig(name="verified_match", options=options))
    return scorer.finish(scorer.score(case, Output(attempts=[Attempt(query=pred)]), ctx))


def assert_no_counterexample(s: Score, checked: int) -> None:
    """A prediction verified equal to its gold: on the variants tier, every metric 1, no
    counterexample, at least `checked` variants run."""
    assert s.details["tier"] == "variants", s.details.get("unverified")
    assert s.details["metrics"] == {"ex": 1.0, "verified": 1.0, "with_judge": 1.0}
    assert "counterexample" not in s.details
    assert s.details["variants"]["checked"] >= checked  # the variants ran, not skipped
