"""Large results from DuckDB reach the comparator as Arrow tables (issue 16): a database that
raises `max_rows` past the comparator's fast path for Python rows gets its results fetched
as Arrow when every column is of a type whose size the cap counts exactly; the run's
records and summary are those of the Python rows."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import duckdb
import pytest

from queryeval.engines import _duckdb
from queryeval.engines._base import Limits, collect_rows, fetch_batches
from queryeval.metrics.results import FAST_MAX_ROWS
from queryeval.runner import load_suite, run_suite

ROWS = FAST_MAX_ROWS * 3


@pytest.fixture(scope="module")
def con() -> Any:
    con = duckdb.connect()
    con.execute(
        f"CREATE TABLE t AS SELECT range AS i, CASE WHEN range % 7 = 0 THEN NULL ELSE "
        f"repeat('é', (range % 13)::INT) || 'x' END AS s, (range * 1.5)::DOUBLE AS d, "
        f"range % 2 = 0 AS b, (range % 100)::TINYINT AS k FROM range({ROWS})"
    )
    yield con
    con.close()


@pytest.mark.parametrize("seed", range(30))
def test_arrow_fetch_cuts_where_python_rows_are_cut(con: Any, seed: int) -> None:
    """Row cap and byte cap (strings by characters, NULL and numbers 8 bytes) at random,
    across Arrow batches: the same rows, the same `truncated`."""
    rng = random.Random(seed)
    limits = Limits(
        max_rows=rng.choice([1, 9, 4096, 65_536, 65_537, ROWS - 1, ROWS, ROWS + 1]),
        max_bytes=rng.choice([7, 8, 40, 1000, 500_000, 1_500_000, 64 * 2**20]),
    )
    query = "SELECT * FROM t ORDER BY i"
    cursor = con.cursor()
    cursor.execute(query)
    rows, truncated = collect_rows(
        fetch_batches(cursor.fetchmany, _duckdb._BATCH, short_is_last=True), limits
    )
    cursor = con.cursor()
    raw = _duckdb.run_on_cursor(cursor, lambda: None, limits, query)
    assert raw.table is not None and raw.rows == []
    assert raw.truncated == truncated
    got = list(zip(*(c.to_pylist() for c in raw.table.columns), strict=True))
    assert got == rows


@pytest.mark.parametrize("limit", [0, 1, 57, FAST_MAX_ROWS])
def test_a_small_whole_result_comes_as_the_python_rows(con: Any, limit: int) -> None:
    """A result the comparator's fast path takes (at most FAST_MAX_ROWS rows, not cut) comes
    as Python rows equal, value for value and type for type, to DuckDB's own fetch."""
    query = f"SELECT i, s, d, b, k, d::FLOAT AS f FROM t ORDER BY i LIMIT {limit}"
    cursor = con.cursor()
    expected = cursor.execute(query).fetchall()
    limits = Limits(max_rows=ROWS * 2, max_bytes=64 * 2**20)
    raw = _duckdb.run_on_cursor(con.cursor(), lambda: None, limits, query)
    assert raw.table is None and not raw.truncated
    assert raw.rows == expected
    assert [[type(v) for v in row] for row in raw.rows] == [
        [type(v) for v in row] for row in expected
    ]


def test_other_types_keep_python_rows(con: Any) -> None:
    """A column whose Python size is its repr (dates, decimals, lists, ...) is not counted
    on Arrow: the query runs for rows, as before."""
    assert _duckdb.arrow_kinds(["BIGINT", "VARCHAR", "DOUBLE"]) == [False, True, False]
    for other in ["DATE", "DECIMAL(18,3)", "INTEGER[]", "HUGEINT", "TIMESTAMP", '"NULL"']:
        assert _duckdb.arrow_kinds(["INTEGER", other]) is None
    query = "SELECT i, DATE '2024-01-01' + (i % 9)::INT AS day FROM t"
    cursor = con.cursor()
    raw = _duckdb.run_on_cursor(cursor, lambda: cursor.execute(query), Limits(), query)
    assert raw.table is None and len(raw.rows) == min(ROWS, Limits().max_rows)


def _suite(folder: Path) -> Path:
    db = folder / "big.duckdb"
    big = duckdb.connect(str(db))
    big.execute(f"CREATE TABLE t AS SELECT range AS i, (range % 97)::VARCHAR AS s, "
                f"(range * 0.5)::DOUBLE AS d FROM range({ROWS})")  # fmt: skip
    big.close()
    golds = [
        "SELECT i, s FROM t",
        "SELECT s, count(*) AS n FROM t GROUP BY s",
        "SELECT i, d FROM t WHERE i % 2 = 0",
        "SELECT i, s, d FROM t ORDER BY i",
    ]
    preds = [
        "SELECT s, i FROM t",
        "SELECT s, count(*) AS n FROM t WHERE i > 5 GROUP BY s",
        "SELECT i, d + 1 FROM t WHERE i % 2 = 0",
        "SELECT i, s, d FROM t ORDER BY i DESC",
    ]
    target = [{"role": "user", "content": "?", "target": {"database": "big"}}]
    cases = [{"id": f"q{i}", "conversation": target} for i in range(len(golds))]
    for case, gold in zip(cases, golds, strict=True):
        case["conversation"] = [{**target[0], "target": {"query": gold, "database": "big"}}]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (folder / "preds.jsonl").write_text(
        "".join(json.dumps({"case_id": f"q{i}", "query": p}) + "\n" for i, p in enumerate(preds))
    )
    suite = folder / "suite.yaml"
    suite.write_text(
        "name: big\ncases: cases.jsonl\ndatabases:\n"
        f"  big: {{engine: duckdb, path: big.duckdb, options: {{max_rows: {ROWS * 2}}}}}\n"
        "systems:\n  - {name: sys, predictions: preds.jsonl}\n"
        "scorers: [execution_match, results_f1]\nreports: [json]\n"
    )
    return suite


def _records(run: Path) -> list[dict[str, Any]]:
    def timeless(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: timeless(v) for k, v in x.items() if k not in ("elapsed_s", "latency_s")}
        return [timeless(v) for v in x] if isinstance(x, list) else x

    return [timeless(json.loads(line)) for line in (run / "results.jsonl").read_text().splitlines()]


def test_a_run_compares_large_results_on_arrow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = load_suite(_suite(tmp_path))
    fetched: list[int] = []
    arrow_fetch = _duckdb.arrow_fetch

    def spy(*args: Any) -> Any:
        table, truncated = arrow_fetch(*args)
        fetched.append(table.num_rows)
        return table, truncated

    monkeypatch.setattr(_duckdb, "arrow_fetch", spy)
    monkeypatch.chdir(tmp_path)
    run_suite(suite, tmp_path / "arrow", progress=False, use_cache=False)
    assert len(fetched) == 8 and max(fetched) == ROWS  # golds and predictions, on Arrow
    # golds from the gold cache (kept as Arrow IPC) against predictions on Arrow
    run_suite(suite, tmp_path / "warm", progress=False, use_cache=False)
    assert len(fetched) == 12
    monkeypatch.setattr(_duckdb, "FAST_MAX_ROWS", ROWS * 10)  # the Python rows, as before
    (tmp_path / ".queryeval-cache").rename(tmp_path / "cache-arrow")
    run_suite(suite, tmp_path / "rows", progress=False, use_cache=False)
    assert len(fetched) == 12
    summary = (tmp_path / "rows" / "summary.json").read_bytes()
    for run in ("arrow", "warm"):
        assert _records(tmp_path / run) == _records(tmp_path / "rows")
        assert (tmp_path / run / "summary.json").read_bytes() == summary
    verdicts = [r["scores"]["execution_match"]["value"] for r in _records(tmp_path / "rows")]
    assert verdicts == [1.0, 0.0, 0.0, 0.0]
