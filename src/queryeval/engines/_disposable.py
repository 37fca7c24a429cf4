"""Disposable copies of a database, where a task's statements may write (`task_tests`).

The user's database is never written: each task runs on its own copy, dropped afterwards.

- SQLite: a copy made with SQLite's backup API (consistent, WAL included) in a temporary
  folder; an authorizer refuses ATTACH / DETACH (and so `VACUUM INTO`) and any statement
  on another database, the system's statements may not run PRAGMAs, `max_page_count`
  bounds the copy's growth, a progress handler its time, SQLite's heap limit its memory.
- DuckDB: a file copy opened with external access off (no file read or written but the
  copy: no ATTACH, COPY TO, extension install), the configuration locked, DuckDB's
  memory limit and no spilling, interrupted at the deadline.
- PostgreSQL started by queryeval: `CREATE DATABASE ... TEMPLATE` the fixture's database,
  the statements run as `queryeval_task` (no superuser, no CREATEDB / CREATEROLE, no
  server files or programs, no extension), cancelled at the deadline, the copy dropped.
- PostgreSQL at a user's URL: one transaction, rolled back at the end; the system's
  statements may not end it (COMMIT, ROLLBACK, BEGIN, END, ABORT, START, PREPARE
  TRANSACTION are refused; a COMMIT inside DO or a procedure cannot run in a
  transaction block).

    >>> copy_support(object()) is not None
    True
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import tempfile
import threading
import time
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from queryeval.cases import OutcomeKind
from queryeval.engines._base import Deadline, Engine, Limits, collect_rows, fetch_batches
from queryeval.engines._cost import machine_loaded
from queryeval.engines._memory import memory_guard

GROWTH = 256 * 2**20  # how much a SQLite copy may grow (max_page_count)


@dataclass
class Step:
    """What running statements on a copy gave: `kind` ok or the failure's outcome kind,
    and the rows of the last statement when it returned some."""

    kind: OutcomeKind
    message: str = ""
    columns: list[str] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether the statements ran."""
        return self.kind == "ok"


class Workspace(ABC):
    """A disposable copy of one engine's database (a context manager: dropped at exit)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.limits: Limits = engine.limits

    @abstractmethod
    def _execute(
        self, text: str, *, system: bool, single: bool = False
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Run `text` (one or more statements); the last statement's columns and rows.
        `single`: as one `execute` of the engine's Python driver (SQLite's refuses a text
        holding two statements; the others run them all)."""

    @abstractmethod
    def _interrupt(self) -> None:
        """Stop the running statement (called from the deadline's thread)."""

    def refusal(self, text: str) -> str | None:
        """Why the system's statements may not run on this copy, or None."""
        return None

    def access(self) -> dict[str, Any]:
        """How a test function's subprocess reaches the copy: `{"kind": "sqlite" |
        "duckdb", "path": ...}` or `{"kind": "postgres", "conninfo": ...}`."""
        raise NotImplementedError

    def run(self, text: str, *, system: bool = False, single: bool = False) -> Step:
        """Run statements on the copy within the engine's limits, never raising for a bad
        statement. `system`: the system's own output (its refusals apply); `single`: run
        as one `execute` of the engine's Python driver (see `_execute`)."""
        if system:
            refused = self.refusal(text)
            if refused is not None:
                return Step("refused", f"refused on the disposable copy: {refused}")
        step = self._attempt(text, system, quiet=False, single=single)
        if step.kind == "timeout" and not self.engine.cpu_in_process and machine_loaded():
            # a server's wall clock on a loaded machine: once more on a quiet slot (the
            # timed-out statements were rolled back with their implicit transaction)
            step = self._attempt(text, system, quiet=True, single=single)
        return step

    def _attempt(self, text: str, system: bool, *, quiet: bool, single: bool = False) -> Step:
        """One run under the engine's query clock: an embedded engine's deadline reads the
        statements' own CPU time, so a loaded machine stops nothing that would finish."""
        start = time.perf_counter()
        guard = memory_guard(2 * self.limits.memory_limit) if self.engine.in_process else None
        with self.engine._clock(quiet):
            deadline = Deadline(self.limits.timeout_s, self._interrupt, self.limits.wall_cap_s)
            try:
                with deadline, guard or contextlib.nullcontext():
                    columns, rows = self._execute(text, system=system, single=single)
            except MemoryError:
                return Step("resource_limit", "the statements took more memory than their limit")
            except Exception as exc:
                elapsed = time.perf_counter() - start
                if deadline.fired:
                    return Step("timeout", str(deadline.timeout()), elapsed_s=elapsed)
                kind, message = self.engine.classify(exc)
                if kind == "refused":
                    message = message.replace("read-only sandbox", "disposable copy's sandbox")
                return Step(kind, message, elapsed_s=elapsed)
        return Step("ok", "", columns, rows, time.perf_counter() - start)

    def close(self) -> None:  # noqa: B027 - a copy holding nothing to drop
        """Drop the copy."""

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- SQLite --------------------------------------------------------------------------------

_ATTACH, _DETACH, _PRAGMA, _FUNCTION = 24, 25, 19, 31
_DENIED_FUNCTIONS = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"}


def _task_authorizer(system: bool) -> Any:
    def authorize(action: int, arg1: Any, arg2: Any, database: Any, _trigger: Any) -> int:
        if action in (_ATTACH, _DETACH):
            return sqlite3.SQLITE_DENY
        if system and action == _PRAGMA:
            return sqlite3.SQLITE_DENY
        if action == _FUNCTION and str(arg2).lower() in _DENIED_FUNCTIONS:
            return sqlite3.SQLITE_DENY
        if database not in (None, "main", "temp"):
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    return authorize


class _SQLiteCopy(Workspace):
    def __init__(self, engine: Any) -> None:
        super().__init__(engine)
        self.folder = Path(tempfile.mkdtemp(prefix="queryeval-task-"))
        self.path = self.folder / "copy.sqlite"
        source = sqlite3.connect(f"{Path(engine.path).resolve().as_uri()}?mode=ro", uri=True)
        self.con = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            source.backup(self.con)
        finally:
            source.close()
        (page_size,) = self.con.execute("PRAGMA page_size").fetchone()
        (pages,) = self.con.execute("PRAGMA page_count").fetchone()
        self.con.execute(f"PRAGMA max_page_count = {int(pages + GROWTH // page_size)}")
        self.con.execute("PRAGMA temp_store = MEMORY")
        length = min(self.con.getlimit(sqlite3.SQLITE_LIMIT_LENGTH), self.limits.memory_limit // 4)
        self.con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(1, length))
        (heap,) = self.con.execute("PRAGMA hard_heap_limit").fetchone()
        if heap == 0 or heap < self.limits.memory_limit:
            self.con.execute(f"PRAGMA hard_heap_limit = {int(self.limits.memory_limit)}")
        self._lock = threading.Lock()

    def _execute(
        self, text: str, *, system: bool, single: bool = False
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        with self._lock:
            self.con.set_authorizer(_task_authorizer(system))
            try:
                try:
                    cursor = self.con.execute(text)
                except (sqlite3.Warning, sqlite3.ProgrammingError) as exc:
                    if single or "one statement" not in str(exc):
                        raise
                    self.con.executescript(text)  # several: no rows to read
                    return [], []
                columns = [d[0] for d in cursor.description or []]
                rows, _ = collect_rows(fetch_batches(cursor.fetchmany, 1024), self.limits)
                return columns, rows
            finally:
                self.con.set_authorizer(None)
                if self.con.in_transaction:  # an open transaction of the statements: kept
                    self.con.execute("COMMIT")

    def _interrupt(self) -> None:
        self.con.interrupt()

    def access(self) -> dict[str, Any]:
        return {"kind": "sqlite", "path": str(self.path)}

    def close(self) -> None:
        self.con.close()
        shutil.rmtree(self.folder, ignore_errors=True)


# -- DuckDB --------------------------------------------------------------------------------


class _DuckDBCopy(Workspace):
    def __init__(self, engine: Any) -> None:
        super().__init__(engine)
        import duckdb

        from queryeval.engines._duckdb import duckdb_config

        self.folder = Path(tempfile.mkdtemp(prefix="queryeval-task-"))
        self.path = self.folder / "copy.duckdb"
        shutil.copyfile(engine.path, self.path)
        wal = Path(str(engine.path) + ".wal")
        if wal.exists():
            shutil.copyfile(wal, Path(str(self.path) + ".wal"))
        self.config = duckdb_config(limits=self.limits)
        self.config.pop("access_mode")
        self.con = duckdb.connect(str(self.path), config=self.config)
        self.cursor: Any = self.con
        self.closed = False

    def _execute(
        self, text: str, *, system: bool, single: bool = False
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        if self.closed:  # a test function's process had the file
            import duckdb

            self.con = duckdb.connect(str(self.path), config=self.config)
            self.closed = False
        cursor = self.cursor = self.con.cursor()  # a cursor is a connection of its own
        try:
            cursor.execute(text)
            if cursor.description is None:
                return [], []
            columns = [d[0] for d in cursor.description]
            rows, _ = collect_rows(fetch_batches(cursor.fetchmany, 1024), self.limits)
            return columns, rows
        finally:
            cursor.close()

    def _interrupt(self) -> None:
        self.cursor.interrupt()

    def access(self) -> dict[str, Any]:
        self.con.close()  # one process at a time may open a DuckDB file to write
        self.closed = True
        return {"kind": "duckdb", "path": str(self.path)}

    def close(self) -> None:
        if not self.closed:
            self.con.close()
        shutil.rmtree(self.folder, ignore_errors=True)


# -- PostgreSQL ----------------------------------------------------------------------------

_ENDS_TRANSACTION = {"BEGIN", "COMMIT", "END", "ROLLBACK", "ABORT", "START"}


def transaction_control(text: str) -> str | None:
    """The first statement of `text` that would begin or end a transaction (PostgreSQL),
    or why the text cannot be read; None when there is none.

    >>> transaction_control("UPDATE t SET a = 1; COMMIT; DELETE FROM t")
    'COMMIT'
    >>> transaction_control("DO $$ BEGIN PERFORM 1; END $$; ROLLBACK TO SAVEPOINT s") is None
    True
    """
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import SqlglotError

    try:
        tokens = Dialect.get_or_raise("postgres").tokenize(text)
    except SqlglotError as exc:
        return f"the statements cannot be read: {str(exc).splitlines()[0]}"
    starts = [0] + [i + 1 for i, t in enumerate(tokens) if t.token_type.name == "SEMICOLON"]
    for i in starts:
        if i >= len(tokens):
            continue
        word = tokens[i].text.upper()
        following = tokens[i + 1].text.upper() if i + 1 < len(tokens) else ""
        if word == "ROLLBACK" and following == "TO":
            continue  # to a savepoint: within the transaction
        if word == "PREPARE" and following.split()[:1] == ["TRANSACTION"]:
            return "PREPARE TRANSACTION"  # sqlglot reads the rest of a PREPARE as one string
        if word in _ENDS_TRANSACTION:
            return word
    return None


def split_statements(text: str, dialect: str = "postgres") -> list[str]:
    """The statements of `text`, split at the semicolons between them (not those inside
    strings, comments or dollar-quoted bodies), a piece holding only comments left out;
    the text whole when it cannot be read.

    >>> split_statements("UPDATE t SET a = ';'; DO $$ BEGIN NULL; END $$; -- done")
    ["UPDATE t SET a = ';'", 'DO $$ BEGIN NULL; END $$']
    """
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import SqlglotError

    try:
        tokens = Dialect.get_or_raise(dialect).tokenize(text)
    except SqlglotError:
        return [text.strip()] if text.strip() else []
    statements: list[str] = []
    begin, words = 0, 0
    for token in tokens:
        if token.token_type.name == "SEMICOLON":
            if words:
                statements.append(text[begin : token.start].strip())
            begin, words = token.end + 1, 0
        else:
            words += 1
    if words:
        statements.append(text[begin:].strip())
    return [s for s in statements if s]


class _PostgresCopy(Workspace):
    def __init__(self, engine: Any) -> None:
        super().__init__(engine)
        import psycopg

        self.copy: str | None = None
        if engine.server is not None:
            self.copy = f"task_{uuid.uuid4().hex[:20]}"
            self.conninfo = engine.make_copy(self.copy)
            try:
                self.con = psycopg.connect(self.conninfo, autocommit=True)
            except BaseException:
                engine.drop_copy(self.copy)
                raise
        else:  # a user's server: one transaction, rolled back
            self.conninfo = engine.conninfo
            self.con = psycopg.connect(self.conninfo, autocommit=True)
            self.con.execute("BEGIN")
        ms = max(1, int(self.limits.wall_cap_s * 1000))
        work_mem = max(64, self.limits.memory_limit // 4 // 1024)
        self.con.execute(f"SET statement_timeout = {ms}")
        self.con.execute(f"SET work_mem = '{work_mem}kB'")

    def refusal(self, text: str) -> str | None:
        if self.copy is not None:
            return None
        found = transaction_control(text)
        if found is None:
            return None
        return f"{found}: the statements may not end the transaction the task runs in"

    def _execute(
        self, text: str, *, system: bool, single: bool = False
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        import psycopg

        savepoint = self.copy is None
        if savepoint:
            self.con.execute("SAVEPOINT queryeval_step")
        try:
            cursor = self.con.execute(text)
            while cursor.nextset():  # the last statement's result
                pass
            columns: list[str] = []
            rows: list[tuple[Any, ...]] = []
            if cursor.description is not None:
                columns = [d.name for d in cursor.description]
                rows, _ = collect_rows(fetch_batches(cursor.fetchmany, 1024), self.limits)
        except psycopg.Error:
            if savepoint and not self.con.closed:
                self.con.execute("ROLLBACK TO SAVEPOINT queryeval_step")
            raise
        if savepoint:
            self.con.execute("RELEASE SAVEPOINT queryeval_step")
        return columns, rows

    def _interrupt(self) -> None:
        self.con.cancel()

    def access(self) -> dict[str, Any]:
        return {"kind": "postgres", "conninfo": self.conninfo}

    def close(self) -> None:
        try:
            if self.copy is None and not self.con.closed:
                self.con.execute("ROLLBACK")
        finally:
            self.con.close()
            if self.copy is not None:
                self.engine.drop_copy(self.copy)  # type: ignore[attr-defined]


def copy_support(engine: Any) -> str | None:
    """Why `engine`'s database cannot have a disposable copy (tasks), or None."""
    from queryeval.engines._duckdb import DuckDBEngine
    from queryeval.engines._postgres import PostgresEngine
    from queryeval.engines._sqlite import SQLiteEngine

    if isinstance(engine, SQLiteEngine | DuckDBEngine | PostgresEngine):
        return None
    kind = type(engine).__name__
    return f"tasks run on SQLite, DuckDB or PostgreSQL databases, not on {kind}"


def disposable_copy(engine: Engine) -> Workspace:
    """A disposable copy of `engine`'s database (ValueError where none can be made)."""
    from queryeval.engines._duckdb import DuckDBEngine
    from queryeval.engines._postgres import PostgresEngine
    from queryeval.engines._sqlite import SQLiteEngine

    if isinstance(engine, SQLiteEngine):
        return _SQLiteCopy(engine)
    if isinstance(engine, DuckDBEngine):
        return _DuckDBCopy(engine)
    if isinstance(engine, PostgresEngine):
        return _PostgresCopy(engine)
    raise ValueError(copy_support(engine))
