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


def _decode_before(value: object) -> object:
    """The codec's decoder as it was (a recursive walk after `json.loads`)."""
    import base64
    import datetime as dt
    import decimal
    import uuid

    if isinstance(value, list):
        return [_decode_before(v) for v in value]
    if not isinstance(value, dict):
        return value
    tag, v = value.get("$qe"), value.get("v")
    simple = {"float": float, "decimal": decimal.Decimal, "datetime": dt.datetime.fromisoformat,
              "date": dt.date.fromisoformat, "time": dt.time.fromisoformat,
              "bytes": base64.b64decode, "uuid": uuid.UUID}  # fmt: skip
    if tag in simple:
        return simple[tag](v)
    if tag == "timedelta":
        return dt.timedelta(days=v[0], seconds=v[1], microseconds=v[2])
    if tag == "set":
        return frozenset(_decode_before(x) for x in v)
    if tag == "map":
        return {_decode_before(k): _decode_before(x) for k, x in v}
    if tag == "repr":
        return v
    raise ValueError(f"unknown tag in gold cache: {tag!r}")


def test_the_codec_reads_back_what_the_recursive_decoder_read() -> None:
    import datetime as dt
    import decimal
    import json
    import math
    import random
    import uuid

    from queryeval.engines._values import dumps, loads

    rng = random.Random(4)
    leaves = [None, True, 0, -7, 2**70, 1.5, -0.0, math.inf, -math.inf, math.nan, "x", "",
              "ü$qe", decimal.Decimal("1.10"), dt.date(2024, 2, 29),
              dt.datetime(2024, 1, 1, 12, 30, tzinfo=dt.UTC), dt.time(1, 2, 3),
              dt.timedelta(days=-1, seconds=5), b"\x00\xff", uuid.UUID(int=5),
              object()]  # fmt: skip

    def value(depth: int) -> object:
        kind = rng.random()
        if depth > 2 or kind < 0.6:
            return rng.choice(leaves)
        if kind < 0.75:
            return [value(depth + 1) for _ in range(rng.randint(0, 3))]
        if kind < 0.9:
            return frozenset(v for v in (value(3) for _ in range(3)) if v == v and v is not None)
        return {str(rng.random()): value(depth + 1) for _ in range(rng.randint(0, 3))}

    for _ in range(3000):
        text = dumps([value(0) for _ in range(rng.randint(0, 4))])
        assert repr(loads(text)) == repr(_decode_before(json.loads(text)))
    for bad in ('[{"$qe": "nope", "v": 1}]', '[{"a": 1}]', '[{"$qe": "set", "v": [[1]]}]'):
        try:
            _decode_before(json.loads(bad))
        except (ValueError, TypeError) as before:
            try:
                loads(bad)
            except (ValueError, TypeError) as now:
                assert type(now) is type(before)
            else:
                raise AssertionError(f"{bad} decoded")


def _execution(rows: list[tuple], arrow: bool = False):  # type: ignore[no-untyped-def]
    from queryeval.cases import ExecutionOutcome
    from queryeval.engines import Execution
    from queryeval.metrics import ResultSet

    result = ResultSet(["a", "b"], rows)
    if arrow:
        import pyarrow as pa

        result = ResultSet.from_arrow(
            pa.table({"a": [r[0] for r in rows], "b": [r[1] for r in rows]})
        )
    return Execution(ExecutionOutcome(kind="ok", row_count=len(rows)), result)


def test_pending_golds_are_read_back_written_by_size_and_newer_than_the_file(
    tmp_path: Path,
) -> None:
    """What is put is read back before it is written (by `get` and `get_many`, over an
    older copy in the file); a large result is written at once (8 MiB pending), not after
    63 more; an Arrow-backed result comes back as Arrow."""
    from queryeval.engines._gold_store import GoldStore

    store, reader = GoldStore(tmp_path), GoldStore(tmp_path)
    key = ("db", 10, 100, "SELECT 1")
    store.put(key, _execution([(1, "old")]))
    store.flush()
    store.put(key, _execution([(2, "new")]))
    got = store.get(key)
    assert got is not None and got.result is not None and got.result.rows == ((2, "new"),)
    many = store.get_many([key])[key].result
    assert many is not None and many.rows == ((2, "new"),)  # not the file's older copy
    old = reader.get(key)
    assert old is not None and old.result is not None and old.result.rows == ((1, "old"),)

    big = ("db", 10, 100, "SELECT big")
    store.put(big, _execution([(i, "x" * 100) for i in range(100_000)], arrow=True))
    written = reader.get(big)  # another connection sees it: written without a flush
    assert written is not None and written.result is not None
    assert written.result.arrow is not None and written.result.num_rows == 100_000
    store.close()
    reader.close()


def test_a_gold_cache_that_cannot_be_written_drops_what_was_pending(
    tmp_path: Path, monkeypatch: object
) -> None:
    """A cache: a write that fails (here another process holds the write lock past the
    wait; a full disk alike) raises nothing; the golds put are gone (they run again next
    time), and later puts still work."""
    import sqlite3

    import pytest

    from queryeval.engines import _gold_store
    from queryeval.engines._gold_store import GoldStore

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.setattr(_gold_store, "_BUSY_S", 0.05)
    store = GoldStore(tmp_path)
    key = ("db", 10, 100, "SELECT 1")
    assert store.get(key) is None  # connected, tables made
    store.put(key, _execution([(1, "a")]))
    blocker = sqlite3.connect(store.path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    store.flush()  # locked past the wait: no exception
    blocker.execute("COMMIT")
    blocker.close()
    assert store.get(key) is None
    store.put(key, _execution([(2, "b")]))
    store.close()
    again = GoldStore(tmp_path).get(key)
    assert again is not None and again.result is not None and again.result.rows == ((2, "b"),)


def test_a_gold_cache_that_cannot_be_opened_or_read_is_a_miss(tmp_path: Path) -> None:
    """A folder that is a file, or a corrupt file: every read is a miss (the gold runs,
    never a scorer's error) and a put is dropped without an exception."""
    from queryeval.engines._gold_store import GoldStore

    (tmp_path / "file").write_text("not a folder")
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    for cache_dir in (tmp_path / "file" / "cache", corrupt):
        store = GoldStore(cache_dir)
        if cache_dir == corrupt:
            store.path.write_bytes(b"not a database" * 100)
        key = ("db", 10, 100, "SELECT 1")
        assert store.get(key) is None
        assert store.get_many([key]) == {}
        store.put(key, _execution([(1, "a")]))
        store.close()
        assert store.get_order(("sql", "1", "SELECT 1")) is None
