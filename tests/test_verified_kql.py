"""verified_match on KQL (the embedded engine, its tables DuckDB tables): the gold against
itself and equivalent KQL rewrites get no counterexample; wrong KQL that execution match
accepts gets a minimal witness that the real KQL engine replays to the stored results."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from queryeval.cases import Score
from queryeval.engines import Limits
from queryeval.runner import load_suite
from queryeval.scorers import ScoringContext
from queryeval.verify import replay
from verified_support import assert_no_counterexample, score_query

ROWS = """
CREATE TABLE Emp (Id BIGINT, Name VARCHAR, Age BIGINT, Salary DOUBLE, Dept VARCHAR,
                  Hired TIMESTAMP);
INSERT INTO Emp VALUES (1, 'Ann', 25, 1000, 'sales', '2024-01-01'),
  (2, 'Bob', 35, 1500, 'sales', '2024-02-01'), (3, 'Cid', 45, 3000, 'ops', '2024-03-01'),
  (4, 'Dee', 41, 2500, 'research', '2024-04-01'), (5, 'Eve', 29, 1200, 'research', '2024-05-01');
"""

EQUIVALENT = [
    ("Emp | where Age > 30 and Dept == 'sales' | project Name",
     "Emp | where Age > 30 | where Dept == 'sales' | project Name"),
    ("Emp | where Dept in ('sales', 'ops') | project Name, Age",
     "Emp | where Dept == 'sales' or Dept == 'ops' | project Age, Name"),  # columns permuted
    ("Emp | summarize count()", "Emp | count"),
    ("Emp | sort by Age desc | take 2 | project Name", "Emp | top 2 by Age desc | project Name"),
]  # fmt: skip

# (gold, prediction EX accepts on the database, what the database lacks)
WRONG = [
    ("Emp | where Age >= 30 | project Name", "Emp | where Age > 30 | project Name",
     "nobody aged exactly 30"),
    ("Emp | where Dept has 'sales' | project Name", "Emp | where Dept == 'sales' | project Name",
     "no department naming sales among other words"),
    ("let m = toscalar(Emp | summarize max(Age)); Emp | where Age == m | project Name",
     "Emp | top 1 by Age desc | project Name", "no tie on the oldest age"),
    ("Emp | summarize dcount(Name)", "Emp | summarize count()", "no repeated or missing name"),
]  # fmt: skip


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScoringContext]:
    import duckdb

    folder = tmp_path_factory.mktemp("verified_kql")
    con = duckdb.connect(str(folder / "emp.duckdb"))
    con.execute(ROWS)
    con.close()
    (folder / "cases.yaml").write_text(
        "- id: c1\n  conversation: [{content: q, target: [{query: {text: Emp, database: emp}}]}]\n"
    )
    (folder / "p.jsonl").write_text('{"id": "c1", "query": "Emp"}\n')
    (folder / "suite.yaml").write_text(
        "name: verified_kql\ncases: cases.yaml\ndatabases:\n"
        "  emp: {engine: kql, path: emp.duckdb, options: {timeout_s: 5, "
        "now: '2024-06-01T00:00:00Z'}}\n"
        "systems:\n  - {name: s, predictions: p.jsonl}\nscorers:\n  - {name: verified_match}\n"
    )
    context = ScoringContext(load_suite(folder / "suite.yaml"), cache_dir=folder / "cache")
    yield context
    context.close()


def score(ctx: ScoringContext, gold: str, pred: str) -> Score:
    return score_query(ctx, {"text": gold, "database": "emp"}, pred, {"variants": 12})


@pytest.mark.parametrize(("gold", "pred"), [(g, g) for g, _, _ in WRONG[:2]] + EQUIVALENT)
def test_the_gold_and_equivalent_kql_rewrites_get_no_counterexample(
    ctx: ScoringContext, gold: str, pred: str
) -> None:
    assert_no_counterexample(score(ctx, gold, pred), checked=8)


@pytest.mark.parametrize(("gold", "pred", "lacks"), WRONG)
def test_wrong_kql_that_ex_accepts_gets_a_witness_the_kql_engine_replays(
    ctx: ScoringContext, gold: str, pred: str, lacks: str
) -> None:
    s = score(ctx, gold, pred)
    assert s.details["metrics"] == {"ex": 1.0, "verified": 0.0, "with_judge": 0.0}, lacks
    witness = s.details["counterexample"]
    assert witness["dialect"] == "kql" and witness["minimal"] and witness["replayed"]
    assert 1 <= witness["rows"] <= 3
    assert witness["script"].startswith('CREATE TABLE "Emp"')
    runs = replay(witness["script"], "kql", {"gold": gold, "pred": pred}, Limits(),
                  witness["now"])  # fmt: skip
    for name, stored in (("gold", witness["gold"]), ("pred", witness["prediction"])):
        result = runs[name].result
        assert result is not None
        assert [list(r) for r in result.rows] == stored["rows"]
    assert witness["gold"]["rows"] != witness["prediction"]["rows"]


def test_kql_verified_never_exceeds_ex(ctx: ScoringContext) -> None:
    """Garbage and wrong answers: EX = 0 stays 0 (tier ex), a failing query too."""
    for pred in ("Emp | project Dept", "Nope | take 1"):
        s = score(ctx, "Emp | project Name", pred)
        assert not s.value
        metrics = s.details.get("metrics", {"ex": 0.0, "verified": 0.0})
        assert metrics["verified"] <= metrics["ex"] == 0.0
        assert s.details.get("tier", "ex") == "ex" and "counterexample" not in s.details


def test_the_same_seed_gives_the_same_kql_witness(ctx: ScoringContext) -> None:
    gold, pred, _ = WRONG[0]
    first = score(ctx, gold, pred).details["counterexample"]
    again = score(ctx, gold, pred).details["counterexample"]
    assert first == again


def test_a_kql_query_is_translated_once_for_every_variant(ctx: ScoringContext) -> None:
    """The variants' catalogs share one DuckDB: a catalog's translation sees its own tables
    only (not the other variants'), so a query is translated once for all of them."""
    from queryeval.engines import KqlScratch

    scratch = KqlScratch(ctx.engine("emp"))
    try:
        catalogs = [scratch.create() for _ in range(3)]
        for i, catalog in enumerate(catalogs):
            catalog.write(f"CREATE TABLE Emp (Id BIGINT, Age BIGINT); "
                          f"INSERT INTO Emp VALUES ({i}, {30 + i})")  # fmt: skip
        runs = [c.execute("Emp | where Age > 30 | count") for c in catalogs]
        assert [r.result.rows[0][0] for r in runs if r.result is not None] == [0, 1, 1]
        assert len(scratch.translations) == 1
        seen = catalogs[2]._catalog_schema  # type: ignore[attr-defined]
        assert sorted(seen) == ["Emp", "variant_3.Emp"], seen
    finally:
        scratch.close()
