"""verified_match on real SQLite and DuckDB files: wrong predictions that execution match
accepts are caught on variants with a minimal witness that replays to the stored results;
determinism; verified <= EX; observed-only variants assume nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from queryeval.engines import Limits
from queryeval.scorers import ScoringContext
from queryeval.verify import replay
from verified_support import context, make_suite, score

DATABASES = ["shop_sqlite", "shop_duckdb"]

# (gold, prediction EX accepts on the database, what the database lacks)
WRONG = [
    ("SELECT name FROM emp WHERE age >= 30", "SELECT name FROM emp WHERE age > 30",
     "no employee aged exactly 30"),
    ("SELECT DISTINCT d.name FROM dept d JOIN emp e ON e.dept_id = d.id WHERE e.age > 40",
     "SELECT d.name FROM dept d JOIN emp e ON e.dept_id = d.id WHERE e.age > 40",
     "no department with two employees over 40"),
    ("SELECT name FROM emp WHERE age = (SELECT max(age) FROM emp)",
     "SELECT name FROM emp ORDER BY age DESC LIMIT 1", "no tie on the oldest age"),
    ("SELECT count(*) FROM emp", "SELECT count(salary) FROM emp", "no NULL salary"),
    ("SELECT name FROM emp WHERE salary < 2000 AND dept_id = 1",
     "SELECT name FROM emp WHERE dept_id = 1", "every sales salary under 2000"),
]  # fmt: skip


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScoringContext]:
    folder = tmp_path_factory.mktemp("verified")
    context_ = context(make_suite(folder), folder / "cache")
    yield context_
    context_.close()


@pytest.mark.parametrize("database", DATABASES)
@pytest.mark.parametrize(("gold", "pred", "lacks"), WRONG)
def test_ex_accepts_and_variants_catch_with_a_replayable_minimal_witness(
    ctx: ScoringContext, database: str, gold: str, pred: str, lacks: str
) -> None:
    s = score(ctx, database, gold, pred)
    assert s.details["metrics"] == {"ex": 1.0, "verified": 0.0, "with_judge": 0.0}, lacks
    assert s.value == 0.0 and s.passed is False
    assert s.details["tier"] == "variants"
    witness = s.details["counterexample"]
    assert witness["minimal"] and witness["replayed"]
    assert 1 <= witness["rows"] <= 4
    assert witness["script"].startswith("CREATE TABLE")
    # the stored script rebuilds a database on which both queries give the stored results
    runs = replay(witness["script"], witness["dialect"], {"gold": gold, "pred": pred}, Limits())
    for name, stored in (("gold", witness["gold"]), ("pred", witness["prediction"])):
        result = runs[name].result
        assert result is not None
        assert [list(r) for r in result.rows] == stored["rows"]


@pytest.mark.parametrize("database", DATABASES)
def test_the_same_seed_gives_the_same_witness_and_another_seed_still_finds_one(
    ctx: ScoringContext, database: str, tmp_path: Path
) -> None:
    gold, pred, _ = WRONG[0]
    first = score(ctx, database, gold, pred, seed=7).details["counterexample"]
    fresh = context(make_suite(tmp_path), tmp_path / "cache")  # a new run: nothing cached
    try:
        again = score(fresh, database, gold, pred, seed=7).details["counterexample"]
    finally:
        fresh.close()
    assert again["script"] == first["script"] and again["variant"] == first["variant"]
    other = score(ctx, database, gold, pred, seed=8)
    assert other.details["metrics"]["verified"] == 0.0


@pytest.mark.parametrize("database", DATABASES)
def test_observed_only_witnesses_assume_nothing(ctx: ScoringContext, database: str) -> None:
    gold, pred, _ = WRONG[1]  # duplicates need no new value but a key
    free = score(ctx, database, "SELECT count(*) FROM emp", "SELECT count(salary) FROM emp")
    kinds = {a["kind"] for a in free.details["counterexample"]["assumptions"]}
    assert kinds == {"null"}  # a NULL salary: the database has none
    kept = score(ctx, database, "SELECT count(*) FROM emp", "SELECT count(salary) FROM emp",
                 observed_only=True)  # fmt: skip
    assert kept.details["metrics"]["verified"] == 1.0  # no NULL may be assumed: not caught
    caught = score(ctx, database, gold, pred, observed_only=True)
    if "counterexample" in caught.details:
        assert caught.details["counterexample"]["assumptions"] == []


@pytest.mark.parametrize("database", DATABASES)
def test_ex_zero_ends_at_tier_ex_and_verified_never_exceeds_ex(
    ctx: ScoringContext, database: str
) -> None:
    preds = [
        "SELECT name FROM emp", "SELECT 1", "SELEC nonsense", "SELECT name FROM nowhere",
        "SELECT name FROM emp WHERE age >= 30", "SELECT name FROM emp WHERE age > 30",
    ]  # fmt: skip
    for pred in preds:
        s = score(ctx, database, "SELECT name FROM emp WHERE age >= 30", pred)
        metrics = s.details.get("metrics") or {"ex": 0.0, "verified": 0.0}
        assert metrics["verified"] <= metrics["ex"]
        if metrics["ex"] == 0.0:
            assert s.details.get("tier", "ex") == "ex" and "counterexample" not in s.details
