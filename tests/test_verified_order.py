"""`gold_order_problems` (what `selftest` reports): a gold whose result depends on ties
under ORDER BY ... LIMIT or on the order rows are stored in is found with a small witness
that replays; a gold that fixes its order, or has none to fix, is not."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from queryeval.engines import Limits
from queryeval.scorers import ScoringContext
from queryeval.verify import Settings, Verifier, gold_order_problems, replay
from verified_support import context, make_suite

SETTINGS = Settings(variants=12)

# gold: the problem's kind, or None
GOLDS = [
    ("SELECT name FROM emp ORDER BY age DESC LIMIT 1", "ties"),
    ("SELECT name FROM emp LIMIT 2", "row order"),
    ("SELECT name FROM emp ORDER BY age DESC, id LIMIT 1", None),  # id is a key: no tie
    ("SELECT d.name, count(*) FROM dept d JOIN emp e ON e.dept_id = d.id GROUP BY d.name", None),
    ("SELECT name FROM emp WHERE age > 30", None),
]  # fmt: skip


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScoringContext]:
    folder = tmp_path_factory.mktemp("verified_order")
    context_ = context(make_suite(folder), folder / "cache")
    yield context_
    context_.close()


def test_golds_that_depend_on_ties_or_row_order_are_found(ctx: ScoringContext) -> None:
    """DuckDB stores rows in insertion order, so the reversed build reverses them (SQLite
    stores a rowid table in key order: see docs/verified.md for that limit)."""
    engine = ctx.engine("shop_duckdb")
    verifier = Verifier(engine, SETTINGS)  # shared by the golds of one database
    try:
        for gold, kind in GOLDS:
            problems = gold_order_problems(engine, gold, verifier=verifier)
            assert [p["kind"] for p in problems] == ([kind] if kind else []), gold
            for p in problems:
                assert p["forward"]["rows"] != p["reversed"]["rows"] or kind == "row order"
                # ties: two tied employees and their departments; row order: three employees
                assert 1 <= p["rows"] <= 5, p["script"]
                # the witness replays: the gold gives the stored forward result on it
                run = replay(p["script"], engine.dialect, {"g": gold}, Limits())["g"]
                assert run.result is not None
                assert [list(r) for r in run.result.rows] == p["forward"]["rows"]
    finally:
        verifier.close()


def test_selftest_reports_an_order_dependent_gold(tmp_path) -> None:
    """`queryeval selftest` runs each gold with a LIMIT, top or grouping on its own variants:
    the gold tied under ORDER BY ... LIMIT is reported `order_dependent`, the gold that
    breaks the tie by a key is not."""
    from typer.testing import CliRunner

    from queryeval.cli import app

    suite = make_suite(tmp_path)
    (tmp_path / "cases.yaml").write_text(
        "- id: tied\n  conversation: [{content: q, target: [{query: {text: "
        "'SELECT name FROM emp ORDER BY age DESC LIMIT 1', database: shop_duckdb}}]}]\n"
        "- id: keyed\n  conversation: [{content: q, target: [{query: {text: "
        "'SELECT name FROM emp ORDER BY age DESC, id LIMIT 1', database: shop_duckdb}}]}]\n"
    )
    (tmp_path / "p.jsonl").write_text("")
    result = CliRunner().invoke(app, ["selftest", str(suite), "--cache-dir", str(tmp_path / "c")])
    out = result.output
    assert "1 order-dependent" in out, out
    flagged = [line for line in out.splitlines() if "order dependent" in line]
    assert flagged and "tied (gold 0)" in flagged[0] and "keyed" not in " ".join(flagged), out
    # `validate` warns of it too, from its bounded search (8 variants a gold)
    (tmp_path / "p.jsonl").write_text(
        '{"case_id": "tied", "query": "SELECT 1"}\n{"case_id": "keyed", "query": "SELECT 1"}\n'
    )
    checked = CliRunner().invoke(app, ["validate", str(suite)])
    warned = [line for line in checked.output.splitlines() if "depends on" in line]
    assert len(warned) == 1 and "tied (gold 0)" in warned[0], checked.output
