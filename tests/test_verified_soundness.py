"""Soundness of verified_match: the gold never gets a counterexample against itself, and
a corpus of semantically equivalent rewrites (join order, IN vs EXISTS, BETWEEN vs
comparisons, aliases, sqlglot-optimised forms) never gets one, on SQLite and DuckDB."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlglot
from sqlglot.optimizer import optimize

from queryeval.scorers import ScoringContext
from verified_support import context, make_suite, score

DATABASES = ["shop_sqlite", "shop_duckdb"]

# (gold, an equivalent rewrite)
EQUIVALENT = [
    ("SELECT e.name, d.name FROM emp e JOIN dept d ON e.dept_id = d.id",
     "SELECT e.name, d.name FROM dept d JOIN emp e ON d.id = e.dept_id"),
    ("SELECT name FROM emp WHERE dept_id IN (SELECT id FROM dept WHERE budget > 200)",
     "SELECT name FROM emp e WHERE EXISTS (SELECT 1 FROM dept d WHERE d.id = e.dept_id "
     "AND d.budget > 200)"),
    ("SELECT name FROM emp WHERE age BETWEEN 30 AND 45",
     "SELECT name FROM emp WHERE age >= 30 AND age <= 45"),
    ("SELECT name AS n FROM emp AS x WHERE x.salary > 1200",
     "SELECT emp.name FROM emp WHERE 1200 < emp.salary"),
    ("SELECT count(*) FROM emp WHERE age > 30", "SELECT count(id) FROM emp WHERE age > 30"),
    ("SELECT dept_id, count(*) FROM emp GROUP BY dept_id",
     "SELECT dept_id, sum(1) FROM emp GROUP BY dept_id"),
    ("SELECT DISTINCT dept_id FROM emp", "SELECT dept_id FROM emp GROUP BY dept_id"),
    ("SELECT name FROM emp WHERE age > 30 OR salary > 2000",
     "SELECT name FROM emp WHERE NOT (age <= 30 AND salary <= 2000) "
     "AND (age > 30 OR salary > 2000)"),
    ("SELECT d.name FROM dept d WHERE NOT EXISTS (SELECT 1 FROM emp e WHERE e.dept_id = d.id)",
     "SELECT d.name FROM dept d LEFT JOIN emp e ON e.dept_id = d.id WHERE e.id IS NULL"),
    ("SELECT name FROM emp ORDER BY salary DESC, id LIMIT 2",
     "SELECT name FROM (SELECT * FROM emp ORDER BY salary DESC, id) AS t LIMIT 2"),
    ("SELECT max(salary) FROM emp", "SELECT (SELECT salary FROM emp WHERE salary IS NOT NULL "
     "ORDER BY salary DESC LIMIT 1)"),
    ("SELECT name FROM dept WHERE name IN ('sales', 'ops')",
     "SELECT name FROM dept WHERE name = 'ops' OR name = 'sales'"),
]  # fmt: skip

GOLDS = [g for g, _ in EQUIVALENT[::3]] + [
    "SELECT name FROM emp ORDER BY age DESC LIMIT 1",
    "SELECT avg(salary), min(age) FROM emp WHERE dept_id = 3",
]

SCHEMA = {"dept": {"id": "INT", "name": "TEXT", "budget": "INT"},
          "emp": {"id": "INT", "name": "TEXT", "age": "INT", "salary": "DOUBLE",
                  "dept_id": "INT"}}  # fmt: skip


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScoringContext]:
    folder = tmp_path_factory.mktemp("soundness")
    context_ = context(make_suite(folder), folder / "cache")
    yield context_
    context_.close()


def _optimised(query: str, dialect: str) -> str:
    return optimize(sqlglot.parse_one(query, read=dialect), schema=SCHEMA,
                    dialect=dialect).sql(dialect=dialect)  # fmt: skip


@pytest.mark.parametrize("database", DATABASES)
def test_the_gold_never_gets_a_counterexample_against_itself(
    ctx: ScoringContext, database: str
) -> None:
    for gold in GOLDS:
        s = score(ctx, database, gold, gold)
        assert s.details["metrics"] == {"ex": 1.0, "verified": 1.0, "with_judge": 1.0}, gold
        assert s.details["tier"] == "variants" and s.details["variants"]["checked"] > 0


@pytest.mark.parametrize("database", DATABASES)
@pytest.mark.parametrize(("gold", "rewrite"), EQUIVALENT)
def test_equivalent_rewrites_never_get_a_counterexample(
    ctx: ScoringContext, database: str, gold: str, rewrite: str
) -> None:
    s = score(ctx, database, gold, rewrite)
    assert s.details["metrics"]["ex"] == 1.0, s.explanation
    assert "counterexample" not in s.details, s.details.get("counterexample")
    assert s.details["variants"]["checked"] >= 10


@pytest.mark.parametrize("database", DATABASES)
def test_sqlglot_optimised_golds_never_get_a_counterexample(
    ctx: ScoringContext, database: str
) -> None:
    dialect = database.removeprefix("shop_")
    for gold in GOLDS:
        s = score(ctx, database, gold, _optimised(gold, dialect))
        assert "counterexample" not in s.details, (gold, s.details.get("counterexample"))
