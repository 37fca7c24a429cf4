"""SQL engines on real databases: DuckDB and SQLite embedded, and a SQLAlchemy URL.

Each test builds (or reuses) the sales fixture from the CSV seeds in examples/sql/fixtures.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from queryeval.config import DatabaseConfig
from queryeval.engines import Engine, Limits, build_engine
from queryeval.engines._fixtures import build_duckdb, build_sqlite
from queryeval.engines._sqlalchemy import SQLAlchemyEngine

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "examples" / "sql" / "fixtures" / "sales"
LIMIT_S = 1.0
CARTESIAN = "SELECT count(*) FROM order_items a, order_items b, order_items c, order_items d"
RECURSIVE = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
WRITES = [
    "DROP TABLE orders",
    "DELETE FROM orders",
    "UPDATE products SET unit_price = 0",
    "INSERT INTO orders VALUES (999, 1, DATE '2024-01-01', 'x')",
    "SELECT 1; DELETE FROM orders",
    "CREATE TABLE evil AS SELECT * FROM orders",
]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module", params=["duckdb", "sqlite"])
def engine(request: pytest.FixtureRequest, cache: Path) -> Iterator[Engine]:
    config = DatabaseConfig(engine=request.param, fixture=str(SEED),
                            options={"timeout_s": LIMIT_S})  # fmt: skip
    built = build_engine("sales", config, ROOT, cache)
    yield built
    built.close()


def test_fixture_is_built_once_and_content_addressed(tmp_path: Path) -> None:
    first = build_duckdb(SEED, tmp_path)
    stamp = first.stat().st_mtime_ns
    assert build_duckdb(SEED, tmp_path) == first
    assert first.stat().st_mtime_ns == stamp  # reused, not rebuilt
    changed = tmp_path / "seed"
    changed.mkdir()
    for f in SEED.iterdir():
        (changed / f.name).write_bytes(f.read_bytes())
    (changed / "products.csv").write_text("product_id,name,category,unit_price\n1,x,y,2.00\n")
    assert build_duckdb(changed, tmp_path) != first  # other content, other file
    assert build_sqlite(SEED, tmp_path).suffix == ".sqlite"


def test_a_query_returns_typed_rows(engine: Engine) -> None:
    run = engine.execute("SELECT count(*) AS n FROM orders")
    assert run.outcome.kind == "ok"
    assert run.result is not None and run.result.columns == ("n",)
    assert run.result.rows == ((200,),)
    assert run.outcome.row_count == 1 and not run.outcome.truncated


@pytest.mark.parametrize("query", WRITES)
def test_writes_are_refused_and_the_file_is_unchanged(engine: Engine, query: str) -> None:
    path: Path = engine.path  # type: ignore[attr-defined]
    before = sha256(path)
    run = engine.execute(query)
    assert run.outcome.kind == "refused"
    assert run.result is None
    assert sha256(path) == before
    assert engine.execute("SELECT count(*) FROM orders").result.rows == ((200,),)  # type: ignore[union-attr]


@pytest.mark.parametrize("query", ["DROP TABLE orders", "DELETE FROM orders"])
def test_the_engine_itself_is_read_only(engine: Engine, query: str) -> None:
    """Defence in depth: even a write that slipped past the parser cannot change a byte."""
    path: Path = engine.path  # type: ignore[attr-defined]
    before = sha256(path)
    with pytest.raises(Exception) as info:
        engine._run(query)  # bypass the parsing half of the sandbox
    kind, _ = engine.classify(info.value)
    assert kind == "refused"
    assert sha256(path) == before


@pytest.mark.parametrize("query", [CARTESIAN, RECURSIVE])
def test_a_runaway_query_times_out_on_its_own_cpu_time(engine: Engine, query: str) -> None:
    start = time.perf_counter()
    run = engine.execute(query)
    elapsed = time.perf_counter() - start
    assert run.outcome.kind == "timeout"
    # stopped for its own CPU time (the wall clock, on a loaded machine, may run longer)
    if engine.cpu_in_process:
        assert run.outcome.cpu_s is not None and run.outcome.cpu_s >= LIMIT_S, run.outcome
        assert elapsed < engine.limits.wall_cap_s
    else:
        assert elapsed < 1.5 * LIMIT_S
    after = engine.execute("SELECT count(*) FROM customers")  # the engine still works
    assert after.outcome.kind == "ok" and after.result is not None
    assert after.result.rows == ((40,),)


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("SELEC count(*) FROM orders", "syntax"),
        ("SELECT nope FROM orders", "schema"),
        ("SELECT * FROM no_such_table", "schema"),
        ("SELECT no_such_function(1)", "schema"),
    ],
)
def test_failures_are_classified(engine: Engine, query: str, kind: str) -> None:
    run = engine.execute(query)
    assert run.outcome.kind == kind, run.outcome.message
    assert run.outcome.message


def test_duckdb_runtime_errors_are_runtime(cache: Path) -> None:
    config = DatabaseConfig(engine="duckdb", fixture=str(SEED))
    with build_engine("sales", config, ROOT, cache) as duck:
        assert duck.execute("SELECT CAST('abc' AS INTEGER)").outcome.kind == "runtime"
        assert duck.execute("SELECT country, count(*) FROM customers").outcome.kind == "syntax"
        # file access is switched off, so reading a file is refused, not a leak
        assert duck.execute("SELECT * FROM read_csv('/etc/passwd')").outcome.kind == "refused"


def test_row_and_size_caps_truncate(cache: Path) -> None:
    config = DatabaseConfig(engine="duckdb", fixture=str(SEED), options={"max_rows": 7})
    with build_engine("sales", config, ROOT, cache) as duck:
        run = duck.execute("SELECT * FROM orders ORDER BY order_id")
        assert run.outcome.truncated and run.outcome.row_count == 7
        assert run.result is not None and [r[0] for r in run.result.rows] == list(range(1, 8))
    config = DatabaseConfig(engine="duckdb", fixture=str(SEED), options={"max_bytes": 2000})
    with build_engine("sales", config, ROOT, cache) as duck:
        run = duck.execute("SELECT * FROM customers")
        assert run.outcome.truncated
        assert 0 < (run.outcome.row_count or 0) < 40


def test_schema_lists_tables_and_columns(engine: Engine) -> None:
    tables = engine.schema()["tables"]
    assert set(tables) == {"customers", "products", "orders", "order_items", "sensor_readings"}
    assert list(tables["orders"]) == ["order_id", "customer_id", "order_date", "status"]


def test_validate_checks_without_running(engine: Engine) -> None:
    assert engine.validate("SELECT * FROM orders").kind == "ok"
    assert engine.validate("SELECT nope FROM orders").kind == "schema"
    assert engine.validate("DROP TABLE orders").kind == "refused"


# --- a SQLAlchemy URL (SQLite through SQLAlchemy: the server code path) --------------------


@pytest.fixture(scope="module")
def alchemy(cache: Path) -> Iterator[SQLAlchemyEngine]:
    path = build_sqlite(SEED, cache)
    url = f"sqlite:///file:{path}?mode=ro&uri=true"
    engine = SQLAlchemyEngine("sales", url, Limits(timeout_s=LIMIT_S), "test")
    yield engine
    engine.close()


def test_sqlalchemy_runs_reads_and_refuses_writes(alchemy: SQLAlchemyEngine) -> None:
    path = Path(str(alchemy.url.database).removeprefix("file:"))
    before = sha256(path)
    assert alchemy.execute("SELECT count(*) FROM orders").result.rows == ((200,),)  # type: ignore[union-attr]
    for query in WRITES:
        assert alchemy.execute(query).outcome.kind == "refused"
    with pytest.raises(Exception) as info:
        alchemy._run("DELETE FROM orders")  # past the parser: the transaction is read-only
    assert alchemy.classify(info.value)[0] == "refused"
    assert sha256(path) == before


def test_sqlalchemy_classifies_and_times_out(alchemy: SQLAlchemyEngine) -> None:
    assert alchemy.execute("SELECT nope FROM orders").outcome.kind == "schema"
    assert alchemy.execute("SELEC 1 FROM orders").outcome.kind == "syntax"
    start = time.perf_counter()
    run = alchemy.execute(RECURSIVE)
    assert run.outcome.kind == "timeout"
    tries = 2 if "quiet slot" in run.outcome.message else 1  # once more on a loaded machine
    assert time.perf_counter() - start < 1.5 * LIMIT_S * tries
    assert alchemy.execute("SELECT count(*) FROM products").result.rows == ((20,),)  # type: ignore[union-attr]


def test_duckdb_batches_end_at_the_first_short_one() -> None:
    """DuckDB's `fetchmany(n)` gives fewer than n rows only at the end, so the engine stops
    at a short batch (one call for a small result): every row still comes, around the batch
    and DuckDB's chunk sizes."""
    import duckdb

    from queryeval.engines._base import fetch_batches
    from queryeval.engines._duckdb import _BATCH

    con = duckdb.connect()
    for n in [0, 1, _BATCH - 1, _BATCH, _BATCH + 1, 2047, 2048, 2049, 3 * _BATCH, 100_003]:
        query = f"SELECT range, range::VARCHAR FROM range({n})"
        cursor = con.cursor()
        cursor.execute(query)
        calls: list[int] = []

        def fetchmany(size: int, cursor: object = cursor, calls: list[int] = calls) -> list:
            calls.append(size)
            return cursor.fetchmany(size)  # type: ignore[attr-defined]

        batches = fetch_batches(fetchmany, _BATCH, short_is_last=True)
        rows = [row for batch in batches for row in batch]
        assert rows == con.execute(query).fetchall()
        assert len(calls) == n // _BATCH + 1  # no call after the short (or empty) batch
