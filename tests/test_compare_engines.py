"""Results as real engines return them: DuckDB (Arrow) and SQLite (Python rows)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import duckdb
import pytest

from queryeval.metrics import ResultSet, compare_results

ROWS = [
    ("north", "10.50", 1, "2024-01-01", "2024-01-01 10:00:00+00"),
    ("south", "2.25", 3, "2024-01-02", None),
    ("north", "1.00", 2, None, "2024-01-03 00:00:00+01"),
    ("east", "0.10", 5, "2024-01-02", "2024-01-02 12:00:00+00"),
    ("east", "0.20", 1, "2024-01-02", "2024-01-02 12:00:00+00"),
]


@pytest.fixture(scope="module")
def duck() -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE sales(region VARCHAR, amount DECIMAL(10,2), qty INTEGER, day DATE, "
        "ts TIMESTAMPTZ)"
    )
    con.executemany("INSERT INTO sales VALUES (?, ?, ?, ?, ?)", ROWS)
    yield con
    con.close()


def run(con: duckdb.DuckDBPyConnection, query: str) -> ResultSet:
    return ResultSet.from_arrow(con.sql(query).to_arrow_table())


GOLD = "SELECT region, SUM(amount) AS total, SUM(qty) AS n FROM sales GROUP BY region"


def test_reordered_columns_and_decimal_vs_double(duck: duckdb.DuckDBPyConnection) -> None:
    gold = run(duck, GOLD)
    pred = run(
        duck,
        "SELECT CAST(SUM(qty) AS BIGINT) AS N, region, CAST(SUM(amount) AS DOUBLE) AS TOTAL "
        "FROM sales GROUP BY ALL",
    )
    assert gold.arrow.schema.field("total").type != pred.arrow.schema.field("TOTAL").type
    assert compare_results(pred, gold).exact


def test_float_rounding_is_forgiven_by_default(duck: duckdb.DuckDBPyConnection) -> None:
    gold = run(duck, "SELECT region, SUM(amount) AS total FROM sales GROUP BY region")
    pred = run(
        duck, "SELECT region, SUM(CAST(amount AS DOUBLE)) AS total FROM sales GROUP BY region"
    )
    # east: 0.1 + 0.2 in doubles is not 0.3; the default rel_tol=1e-9 forgives it
    assert compare_results(pred, gold).exact
    assert not compare_results(pred, gold, rel_tol=0).exact
    assert compare_results(pred, gold, rel_tol=0, abs_tol=1e-9).exact


def test_wrong_filter_and_missing_group_by(duck: duckdb.DuckDBPyConnection) -> None:
    gold = run(duck, GOLD)
    wrong_filter = run(duck, GOLD.replace("GROUP BY", "WHERE qty > 1 GROUP BY"))
    result = compare_results(wrong_filter, gold)
    assert not result.exact
    assert 0 < result.f1 < 1
    no_group = run(duck, "SELECT SUM(amount) AS total, SUM(qty) AS n FROM sales")
    assert compare_results(no_group, gold).missing_columns == ("region",)


def test_order_by_with_ties_from_the_gold_query(duck: duckdb.DuckDBPyConnection) -> None:
    query = "SELECT region, day FROM sales WHERE day IS NOT NULL ORDER BY day"
    gold = run(duck, query)
    pred = run(duck, "SELECT region, day FROM sales WHERE day IS NOT NULL ORDER BY day, region")
    backwards = run(duck, "SELECT region, day FROM sales WHERE day IS NOT NULL ORDER BY day DESC")
    assert compare_results(pred, gold, gold_query=query, language="duckdb").exact
    assert not compare_results(backwards, gold, gold_query=query, language="duckdb").exact


def test_dates_timestamps_and_nulls(duck: duckdb.DuckDBPyConnection) -> None:
    gold = run(duck, "SELECT day, ts FROM sales")
    pred = run(duck, "SELECT CAST(day AS TIMESTAMP) AS day, ts AT TIME ZONE 'UTC' AS ts FROM sales")
    assert compare_results(pred, gold).exact


def test_sqlite_rows_against_duckdb_arrow(duck: duckdb.DuckDBPyConnection) -> None:
    lite = sqlite3.connect(":memory:")
    lite.execute("CREATE TABLE sales(region TEXT, amount REAL, qty INTEGER)")
    lite.executemany(
        "INSERT INTO sales VALUES (?, ?, ?)", [(r[0], float(r[1]), r[2]) for r in ROWS]
    )
    cursor = lite.execute("SELECT region, SUM(qty) AS n FROM sales GROUP BY region")
    pred = ResultSet([d[0] for d in cursor.description], cursor.fetchall())
    gold = run(duck, "SELECT region, SUM(qty) AS n FROM sales GROUP BY region")
    assert compare_results(pred, gold).exact
    lite.close()
