"""SQLite (stdlib), embedded: a `mode=ro` URI, `PRAGMA query_only`, an authorizer that
allows reads only, and a progress handler that stops the query at its deadline (once the
query's own CPU time, SQLite running in the calling thread, is past the limit: see
`queryeval.engines._cost`)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from queryeval.cases import OutcomeKind
from queryeval.engines._base import (
    Engine,
    Limits,
    QueryTimeout,
    RawResult,
    collect_rows,
    describe_refusal,
    fetch_batches,
)
from queryeval.engines._cost import Verdict, current_clock
from queryeval.languages import sql

_READ_ACTIONS = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    getattr(sqlite3, "SQLITE_RECURSIVE", 33),
}
_PROGRESS_STEPS = 2000  # VM instructions between deadline checks


def _read_only_authorizer(action: int, *_args: Any) -> int:
    return sqlite3.SQLITE_OK if action in _READ_ACTIONS else sqlite3.SQLITE_DENY


# SQLite's compile-time and run-time limits (SQLITE_LIMIT_*, the parser's stack), by message
_LIMIT_MESSAGES = (
    "parser stack overflow",
    "expression tree is too large",
    "too many terms in compound select",
    "too many columns",
    "too many arguments on function",
    "too many sql variables",
    "pattern too complex",
    "string or blob too big",
    "too many levels of trigger recursion",
    "out of memory",
)
_ENGINE_ERRORS = {"SQLITE_CORRUPT", "SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_NOTADB",
                  "SQLITE_INTERNAL", "SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_MISUSE"}  # fmt: skip


def classify_sqlite(exc: BaseException) -> tuple[OutcomeKind, str] | None:
    """sqlite3 errors as outcome kinds, by SQLite's error name, then by message."""
    if not isinstance(exc, sqlite3.Error):
        return None
    message = str(exc)
    name = getattr(exc, "sqlite_errorname", "") or ""
    lowered = message.lower()
    if name == "SQLITE_INTERRUPT" or lowered == "interrupted":
        return "timeout", message
    if name in {"SQLITE_NOMEM", "SQLITE_TOOBIG", "SQLITE_FULL"} or any(
        m in lowered for m in _LIMIT_MESSAGES
    ):
        return "resource_limit", message
    if "_".join(name.split("_")[:2]) in _ENGINE_ERRORS:  # SQLITE_IOERR_READ -> SQLITE_IOERR
        return "engine_error", message
    if name in {"SQLITE_READONLY", "SQLITE_AUTH"} or "not authorized" in lowered:
        return "refused", describe_refusal(message)
    if any(s in lowered for s in ("syntax error", "incomplete input", "unrecognized token")):
        return "syntax", message
    if lowered.startswith(("no such table", "no such column", "ambiguous column")):
        return "schema", message
    if lowered.startswith("no such function") or "wrong number of arguments" in lowered:
        return "schema", message
    return "runtime", message


class _Stop:
    """SQLite's progress handler: stop (1) once past the wall-clock `deadline`, within an
    execution only when its clock says so (the query's CPU time, or the wall-clock cap)."""

    def __init__(self, deadline: float, limits: Limits) -> None:
        self.deadline = deadline
        self.limits = limits
        self.clock = current_clock()
        self.verdict: Verdict | None = None
        self.stopped = False

    def __call__(self) -> int:
        if self.stopped:
            return 1
        if time.monotonic() <= self.deadline:
            return 0
        if self.clock is not None:
            self.verdict = self.clock.verdict(self.limits.timeout_s, self.limits.wall_cap_s)
            if self.verdict is None:
                return 0
        self.stopped = True
        return 1


class SQLiteEngine(Engine):
    """SQL on a SQLite database file, opened read-only."""

    language = "sql"
    cpu_in_process = True

    def __init__(
        self, name: str, path: Path, limits: Limits, identity: str, *, text_errors: str = "strict"
    ) -> None:
        super().__init__(name, limits, identity)
        self.path = path
        uri = f"{path.resolve().as_uri()}?mode=ro"
        self._con = sqlite3.connect(uri, uri=True, check_same_thread=False)
        if text_errors != "strict":  # text that is not UTF-8: Spider's evaluation drops it
            self._con.text_factory = lambda b: b.decode(errors=text_errors)
        self._con.execute("PRAGMA query_only = ON")
        self._bound_memory(limits.memory_limit)
        self._lock = threading.Lock()  # one connection, one statement at a time

    def _bound_memory(self, memory_limit: int) -> None:
        """SQLite's memory within `memory_limit`: its heap (a process-wide limit: the largest
        asked for wins), a string or blob at most a quarter of it, and sorts and temporary
        tables in memory rather than in files that could fill the disk."""
        (current,) = self._con.execute("PRAGMA hard_heap_limit").fetchone()
        if current == 0 or current < memory_limit:
            self._con.execute(f"PRAGMA hard_heap_limit = {int(memory_limit)}")
        length = min(self._con.getlimit(sqlite3.SQLITE_LIMIT_LENGTH), memory_limit // 4)
        self._con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(1, length))
        self._con.execute("PRAGMA temp_store = MEMORY")

    @property
    def dialect(self) -> str:
        return "sqlite"

    @property
    def single_threaded(self) -> bool:
        return True

    def refusal(self, query: str) -> str | None:
        reason = sql.read_only_refusal(query, "sqlite")
        return describe_refusal(reason) if reason else None

    def _guarded(self, deadline: float) -> _Stop:
        stop = _Stop(deadline, self.limits)
        self._con.set_authorizer(_read_only_authorizer)
        self._con.set_progress_handler(stop, _PROGRESS_STEPS)
        return stop

    def _unguarded(self) -> None:
        self._con.set_progress_handler(None, 0)
        self._con.set_authorizer(None)

    def _run(self, query: str) -> RawResult:
        with self._lock:
            stop = self._guarded(time.monotonic() + self.limits.timeout_s)
            cursor = self._con.cursor()
            try:
                cursor.execute(query)
                columns = [d[0] for d in cursor.description or []]
                rows, truncated = collect_rows(fetch_batches(cursor.fetchmany, 1024), self.limits)
            except sqlite3.OperationalError as exc:
                if stop.stopped and "interrupt" in str(exc).lower():
                    raise QueryTimeout.stopped(
                        stop.clock, stop.verdict, self.limits.timeout_s
                    ) from None
                raise
            finally:
                cursor.close()
                self._unguarded()
                self._con.rollback()
        return RawResult(columns, rows, truncated)

    def classify(self, exc: BaseException) -> tuple[OutcomeKind, str]:
        return classify_sqlite(exc) or ("engine_error", f"{type(exc).__name__}: {exc}")

    def explain(self, query: str) -> str:
        with self._lock:
            self._guarded(time.monotonic() + self.limits.timeout_s)
            try:
                rows = self._con.execute(f"EXPLAIN QUERY PLAN {query}").fetchall()
            finally:
                self._unguarded()
        return "\n".join(str(r[-1]) for r in rows)

    def schema(self) -> dict[str, Any]:
        with self._lock:
            names = [
                r[0]
                for r in self._con.execute(
                    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                    "AND name NOT LIKE 'sqlite_%' ORDER BY name"
                )
            ]
            tables = {
                name: {
                    col[1]: col[2]
                    for col in self._con.execute("SELECT * FROM pragma_table_info(?)", (name,))
                }
                for name in names
            }
        return {"tables": tables}

    def close(self) -> None:
        self._con.close()
