"""The gold cache: one SQLite store (WAL) read by key or in bulk."""

from __future__ import annotations

from pathlib import Path


def test_the_gold_store_reads_one_key_or_many_and_skips_unreadable_rows(tmp_path: Path) -> None:
    import datetime as dt
    from decimal import Decimal

    from queryeval.cases import ExecutionOutcome
    from queryeval.engines import Execution
    from queryeval.engines._gold_store import GoldStore
    from queryeval.metrics import ResultSet

    rows = [(1, Decimal("1.50"), dt.date(2024, 1, 1)), (None, float("nan"), None)]
    execution = Execution(
        ExecutionOutcome(kind="ok", row_count=2), ResultSet(["a", "b", "c"], rows)
    )
    store = GoldStore(tmp_path)
    keys = [("db:1", 10, 100, f"SELECT {i}") for i in range(3)]
    for key in keys[:2]:
        store.put(key, execution)
    store.close()  # commits
    again = GoldStore(tmp_path)
    got = again.get(keys[0])
    assert got is not None and got.outcome == execution.outcome
    assert got.result is not None and repr(got.result.rows) == repr(execution.result.rows)
    assert again.get(keys[2]) is None
    assert set(again.get_many(keys)) == set(keys[:2])
    assert again.get(("db:1", 11, 100, "SELECT 0")) is None  # the caps are part of the key
    con = again._connection()
    con.execute("UPDATE gold SET rows = 'not json' WHERE query = 'SELECT 1'")
    assert again.get(keys[1]) is None  # unreadable: executed again
    again.close()


def test_the_gold_store_keeps_orderings_by_language_parser_and_query(tmp_path: Path) -> None:
    from queryeval.engines._gold_store import GoldStore
    from queryeval.languages import OrderInfo

    store = GoldStore(tmp_path)
    key = ("duckdb", "1/sqlglot 1.0", "SELECT a, b FROM t ORDER BY b, x")
    store.put_order(key, OrderInfo(True, (1, "x", None)))
    store.close()
    again = GoldStore(tmp_path)
    assert again.get_order(key) == OrderInfo(True, (1, "x", None))
    assert again.get_order(("duckdb", "1/sqlglot 2.0", key[2])) is None  # another parser
    again._connection().execute("UPDATE gold_order SET keys = '[[1]]'")
    assert again.get_order(key) is None  # unreadable: parsed again
    again.close()
