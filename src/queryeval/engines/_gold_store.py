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
_COMMIT_EVERY = 64  # puts per transaction; the rest are committed by `close`

Key = tuple[str, int, int, str]
"""(database identity, max_rows, max_bytes, query)."""
OrderKey = tuple[str, str, str]
"""(language, parser version, query)."""


class GoldStore:
    """Gold results in `<cache_dir>/gold-v2.sqlite`; safe to share between threads."""

    def __init__(self, cache_dir: Path) -> None:
        self.path = cache_dir / f"gold-v{GOLD_STORE_VERSION}.sqlite"
        self._lock = threading.Lock()
        self._con: sqlite3.Connection | None = None
        self._pending = 0

    def _connection(self) -> sqlite3.Connection:
        if self._con is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute(
                "CREATE TABLE IF NOT EXISTS gold (identity TEXT, max_rows INTEGER, "
                "max_bytes INTEGER, query TEXT, outcome TEXT, columns TEXT, rows TEXT, "
                "PRIMARY KEY (identity, max_rows, max_bytes, query)) WITHOUT ROWID"
            )
            con.execute(
                "CREATE TABLE IF NOT EXISTS gold_order (language TEXT, parser TEXT, query TEXT, "
                "ordered INTEGER, keys TEXT, PRIMARY KEY (language, parser, query)) WITHOUT ROWID"
            )
            con.commit()
            self._con = con
        return self._con

    def get(self, key: Key) -> Execution | None:
        """The stored execution under `key`, or None (absent or unreadable)."""
        with self._lock:
            row = (
                self._connection()
                .execute(
                    "SELECT outcome, columns, rows FROM gold WHERE identity = ? AND max_rows = ? "
                    "AND max_bytes = ? AND query = ?",
                    key,
                )
                .fetchone()
            )
        return _decode(*row) if row is not None else None

    def get_many(self, keys: Iterable[Key]) -> dict[Key, Execution]:
        """The stored executions of those `keys` that are stored, one query per batch."""
        groups: dict[tuple[str, int, int], list[str]] = {}
        for identity, max_rows, max_bytes, query in dict.fromkeys(keys):
            groups.setdefault((identity, max_rows, max_bytes), []).append(query)
        found: dict[Key, Execution] = {}
        with self._lock:
            con = self._connection()
            for head, queries in groups.items():
                for start in range(0, len(queries), _BATCH):
                    batch = queries[start : start + _BATCH]
                    rows = con.execute(
                        "SELECT query, outcome, columns, rows FROM gold WHERE identity = ? AND "
                        "max_rows = ? AND max_bytes = ? AND query IN "
                        f"({', '.join('?' * len(batch))})",
                        [*head, *batch],
                    ).fetchall()
                    for query, *payload in rows:
                        execution = _decode(*payload)
                        if execution is not None:
                            found[(*head, query)] = execution
        return found

    def put(self, key: Key, execution: Execution) -> None:
        """Store a successful execution under `key` (replacing any)."""
        assert execution.result is not None
        outcome = dumps(execution.outcome.model_dump(mode="json"))
        columns = dumps(list(execution.result.columns))
        body = dumps([list(r) for r in execution.result.rows])
        with self._lock:
            con = self._connection()
            con.execute(
                "INSERT OR REPLACE INTO gold VALUES (?, ?, ?, ?, ?, ?, ?)",
                (*key, outcome, columns, body),
            )
            self._pending += 1
            if self._pending >= _COMMIT_EVERY:
                self._commit()

    def get_order(self, key: OrderKey) -> OrderInfo | None:
        """The stored ordering of a gold query, or None (absent or unreadable)."""
        with self._lock:
            row = (
                self._connection()
                .execute(
                    "SELECT ordered, keys FROM gold_order WHERE language = ? AND parser = ? "
                    "AND query = ?",
                    key,
                )
                .fetchone()
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
        """Store a gold query's ordering (committed with the results)."""
        with self._lock:
            self._connection().execute(
                "INSERT OR REPLACE INTO gold_order VALUES (?, ?, ?, ?, ?)",
                (*key, int(order.ordered), dumps(list(order.keys))),
            )
            self._pending += 1
            if self._pending >= _COMMIT_EVERY:
                self._commit()

    def flush(self) -> None:
        """Commit the results stored since the last commit."""
        with self._lock:
            self._commit()

    def _commit(self) -> None:
        if self._con is not None and self._pending:
            self._con.commit()
        self._pending = 0

    def close(self) -> None:
        """Commit and close the connection (it is opened again on next use)."""
        with self._lock:
            if self._con is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._commit()
                    self._con.close()
                self._con = None


def _decode(outcome: str, columns: str, body: str) -> Execution | None:
    try:
        record: Any = ExecutionOutcome.model_validate(loads(outcome))
        result = ResultSet(loads(columns), (tuple(r) for r in loads(body)))
    except (ValueError, KeyError, TypeError):
        return None  # unreadable: execute again
    return Execution(record, result)
