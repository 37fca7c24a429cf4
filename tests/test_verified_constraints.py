"""Every variant respects the declared schema: a query counting violations of a constraint
(CHECK, foreign key, NOT NULL, primary and unique keys) returns 0 on every variant, so it
never differs from `SELECT 0` there (its literals even ask for rows beside the CHECK's
bound). SQLite does not enforce its foreign keys by default; the variants keep them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from queryeval.scorers import ScoringContext
from verified_support import context, make_suite, score

VIOLATIONS = [
    "SELECT count(*) FROM emp WHERE age < 0",
    "SELECT count(*) FROM emp e LEFT JOIN dept d ON e.dept_id = d.id "
    "WHERE e.dept_id IS NOT NULL AND d.id IS NULL",
    "SELECT count(*) FROM emp WHERE name IS NULL",
    "SELECT count(*) - count(DISTINCT name) FROM dept",
    "SELECT count(*) - count(DISTINCT id) FROM emp",
]


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScoringContext]:
    folder = tmp_path_factory.mktemp("constraints")
    context_ = context(make_suite(folder), folder / "cache")
    yield context_
    context_.close()


@pytest.mark.parametrize("database", ["shop_sqlite", "shop_duckdb"])
def test_no_variant_breaks_a_declared_constraint(ctx: ScoringContext, database: str) -> None:
    for query in VIOLATIONS:
        s = score(ctx, database, query, "SELECT 0")
        assert s.details["metrics"] == {"ex": 1.0, "verified": 1.0, "with_judge": 1.0}, (
            s.details.get("counterexample")
        )
        assert s.details["variants"]["checked"] >= 15
    # the check can fail: a prediction that is 0 only on the database is caught
    caught = score(ctx, database, "SELECT count(*) FROM emp WHERE age < 30", "SELECT 2")
    assert caught.details["metrics"]["verified"] == 0.0
