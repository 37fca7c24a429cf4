"""The on-disk gold cache: one SQLite file (WAL, so parallel runs read while one writes)
holding every successful gold result, keyed by what it depends on (database identity,
row and byte caps, query text) and read back with one indexed lookup or one query per
batch; values go through the engines' lossless JSON codec. Beside the results, each gold
query's top-level ordering (`queryeval.languages.top_level_order`), keyed by language,
parser version and query text, so a run with cached golds parses none of them."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from queryeval.cases import ExecutionOutcome
from queryeval.engines._base import Execution
from queryeval.engines._values import dumps, loads
from queryeval.languages import OrderInfo
from queryeval.metrics import ResultSet

GOLD_STORE_VERSION = "2"  # 1: one JSON file per gold (gold/<sha256>.json)
_BATCH = 500  # keys per bulk read (SQLite's limit on bound parameters is 32766)
_BUSY_S = 30.0  # how long a writer waits for another's transaction
_COMMIT_EVERY = 64  # puts written per transaction; the rest by `flush` or `close`
_PENDING_BYTES = 8 << 20  # or once the results put take this much (large results)

Key = tuple[str, int, int, str]
"""(database identity, max_rows, max_bytes, query)."""
OrderKey = tuple[str, str, str]
"""(language, parser version, query)."""


class GoldStore:
    """Gold results in `<cache_dir>/gold-v2.sqlite`; safe to share between threads, and
    between processes (a forked run's workers each open their own): what is put is kept
    here and written in one short transaction every `_COMMIT_EVERY` puts (or 8 MiB), so a
    writer holds SQLite's write lock only while it writes, never while it executes queries.
    A cache: a write that fails (a full disk, a lock held past `_BUSY_S`) drops what was
    pending, and those golds run again next time; a file that cannot be opened or read (a
    folder that is a file, a corrupt file) is a miss for every read from then on, and the
    golds run (never a scorer's error)."""

    def __init__(self, cache_dir: Path) -> None:
        self.path = cache_dir / f"gold-v{GOLD_STORE_VERSION}.sqlite"
        self._lock = threading.Lock()
        self._con: sqlite3.Connection | None = None
        self._golds: dict[Key, tuple[str, str, str | bytes]] = {}  # put, not yet written
        self._orders: dict[OrderKey, tuple[int, str]] = {}
        self._pending_bytes = 0
        self._unusable = False  # the file could not be opened or read: every read a miss

    def _read(self, select: str, params: Any) -> list[Any]:
        """The rows of one read, or none where the file cannot be opened or read."""
        if self._unusable:
            return []
        try:
            return self._connection().execute(select, params).fetchall()
        except (sqlite3.Error, OSError):
            self._unusable = True
            return []

    def _connection(self) -> sqlite3.Connection:
        if self._con is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(self.path, timeout=_BUSY_S, check_same_thread=False)
            _prepare(con)
            self._con = con
        return self._con

    def get(self, key: Key) -> Execution | None:
        """The stored execution under `key`, or None (absent or unreadable)."""
        row = self._lookup(
            self._golds,
            "SELECT outcome, columns, rows FROM gold WHERE identity = ? AND max_rows = ? "
            "AND max_bytes = ? AND query = ?",
            key,
        )
        return _decode(*row) if row is not None else None

    def _lookup(self, pending: dict[Any, Any], select: str, key: tuple[Any, ...]) -> Any:
        """The row under `key`: as put and not yet written, else as stored (or None)."""
        with self._lock:
            found = pending.get(key)
            if found is not None:
                return found
            rows = self._read(select, key)
            return rows[0] if rows else None

    def get_many(self, keys: Iterable[Key]) -> dict[Key, Execution]:
        """The stored executions of those `keys` that are stored, one query per batch."""
        groups: dict[tuple[str, int, int], list[str]] = {}
        for identity, max_rows, max_bytes, query in dict.fromkeys(keys):
            groups.setdefault((identity, max_rows, max_bytes), []).append(query)
        found: dict[Key, Execution] = {}
        with self._lock:
            for head, queries in groups.items():
                for start in range(0, len(queries), _BATCH):
                    batch = queries[start : start + _BATCH]
                    rows = self._read(
                        "SELECT query, outcome, columns, rows FROM gold WHERE identity = ? AND "
                        "max_rows = ? AND max_bytes = ? AND query IN "
                        f"({', '.join('?' * len(batch))})",
                        [*head, *batch],
                    )
                    for query, *payload in rows:
                        execution = _decode(*payload)
                        if execution is not None:
                            found[(*head, query)] = execution
            for key, pending in self._golds.items():  # put since: newer than the file's
                if key[3] in groups.get(key[:3], ()):
                    execution = _decode(*pending)
                    if execution is not None:
                        found[key] = execution
        return found

    def put(self, key: Key, execution: Execution) -> None:
        """Store a successful execution under `key` (replacing any)."""
        assert execution.result is not None
        outcome = dumps(execution.outcome.model_dump(mode="json"))
        columns = dumps(list(execution.result.columns))
        table = execution.result.arrow
        body: str | bytes
        if table is not None:  # a large result fetched as Arrow: kept as Arrow IPC bytes
            body = _arrow_bytes(table)
        else:
            body = dumps([list(r) for r in execution.result.rows])
        with self._lock:
            self._golds[key] = (outcome, columns, body)
            self._pending_bytes += len(body)
            self._write_when_due()

    def get_order(self, key: OrderKey) -> OrderInfo | None:
        """The stored ordering of a gold query, or None (absent or unreadable)."""
        row = self._lookup(
            self._orders,
            "SELECT ordered, keys FROM gold_order WHERE language = ? AND parser = ? AND query = ?",
            key,
        )
        if row is None:
            return None
        try:
            keys = loads(row[1])
            if not all(k is None or isinstance(k, int | str) for k in keys):
                return None
            return OrderInfo(bool(row[0]), tuple(keys))
        except (ValueError, TypeError):
            return None

    def put_order(self, key: OrderKey, order: OrderInfo) -> None:
        """Store a gold query's ordering (written with the results)."""
        with self._lock:
            self._orders[key] = (int(order.ordered), dumps(list(order.keys)))
            self._write_when_due()

    def flush(self) -> None:
        """Write what was put since the last write, in one transaction."""
        with self._lock:
            self._write()

    def _write_when_due(self) -> None:
        pending = len(self._golds) + len(self._orders)
        if pending >= _COMMIT_EVERY or self._pending_bytes >= _PENDING_BYTES:
            self._write()

    def _write(self) -> None:
        """One transaction of what is pending; dropped if it fails (see the class)."""
        if not (self._golds or self._orders):
            return
        golds, orders = self._golds, self._orders
        self._golds, self._orders, self._pending_bytes = {}, {}, 0
        if self._unusable:
            return
        with contextlib.suppress(sqlite3.Error, OSError):
            con = self._connection()
            with con:  # one transaction: the write lock is held only for these statements
                con.executemany(
                    "INSERT OR REPLACE INTO gold VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [(*key, *row) for key, row in golds.items()],
                )
                con.executemany(
                    "INSERT OR REPLACE INTO gold_order VALUES (?, ?, ?, ?, ?)",
                    [(*key, *row) for key, row in orders.items()],
                )

    def close(self) -> None:
        """Write what is pending and close the connection (opened again on next use)."""
        with self._lock:
            self._write()
            if self._con is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._con.close()
                self._con = None


def _prepare(con: sqlite3.Connection) -> None:
    """WAL mode and the tables. Processes opening a new store at once (a forked run's
    workers) may find it locked where SQLite's busy handler does not wait (changing the
    journal mode): then again, until `_BUSY_S`."""
    deadline = time.monotonic() + _BUSY_S
    while True:
        try:
            if con.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            with con:
                con.execute(
                    "CREATE TABLE IF NOT EXISTS gold (identity TEXT, max_rows INTEGER, "
                    "max_bytes INTEGER, query TEXT, outcome TEXT, columns TEXT, rows TEXT, "
                    "PRIMARY KEY (identity, max_rows, max_bytes, query)) WITHOUT ROWID"
                )
                con.execute(
                    "CREATE TABLE IF NOT EXISTS gold_order (language TEXT, parser TEXT, "
                    "query TEXT, ordered INTEGER, keys TEXT, "
                    "PRIMARY KEY (language, parser, query)) WITHOUT ROWID"
                )
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _arrow_bytes(table: Any) -> bytes:
    """An Arrow table as the bytes of an Arrow IPC stream (exact, and read back without
    making Python values)."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())


def _decode(outcome: str, columns: str, body: str | bytes) -> Execution | None:
    """A stored execution; the rows are the codec's JSON, or the bytes of an Arrow IPC
    stream for a result fetched as Arrow (which an older reader finds unreadable, and runs
    again)."""
    try:
        record: Any = ExecutionOutcome.model_validate(loads(outcome))
        if isinstance(body, bytes):
            import pyarrow as pa

            result = ResultSet.from_arrow(pa.ipc.open_stream(body).read_all())
        else:
            result = ResultSet(loads(columns), (tuple(r) for r in loads(body)))
    except (ValueError, KeyError, TypeError, OSError):  # pyarrow's errors are among these
        return None  # unreadable: execute again
    return Execution(record, result)
