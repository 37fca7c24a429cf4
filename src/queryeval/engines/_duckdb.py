"""DuckDB, embedded: a read-only connection with file access disabled and the configuration
locked, a cursor per query, and `interrupt()` from a deadline thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from queryeval.cases import OutcomeKind
from queryeval.engines._base import (
    Deadline,
    Engine,
    Limits,
    QueryTimeout,
    RawResult,
    collect_rows,
    describe_refusal,
    fetch_batches,
)
from queryeval.languages import sql

_BATCH = 1024


def duckdb_config(*, lock: bool = True, extra: dict[str, Any] | None = None,
                  limits: Limits | None = None) -> dict[str, Any]:  # fmt: skip
    """The sandbox configuration: read-only, no file system or network, nothing autoloaded;
    with `limits`, DuckDB's `memory_limit` and `threads`, and no spilling to disk (a sort or
    join past the memory limit is out of memory, not a temporary file filling the disk).
    `extra` (the database's `settings`) overrides any of it but the read-only sandbox."""
    config: dict[str, Any] = {
        "access_mode": "READ_ONLY",
        "enable_external_access": False,
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
    }
    if limits is not None:
        config["memory_limit"] = f"{limits.memory_limit}B"
        config["temp_directory"] = ""
        if limits.threads is not None:
            config["threads"] = limits.threads
    config.update(extra or {})
    if lock:
        config["lock_configuration"] = True
    return config


# DuckDB's own limits, whatever the exception class that reports them
_LIMITS = ("Max expression depth limit", "Out of Memory Error", "could not allocate")


def classify_duckdb(exc: BaseException) -> tuple[OutcomeKind, str] | None:
    """DuckDB's exception types as outcome kinds (None for a non-DuckDB exception)."""
    import duckdb

    message = str(exc)
    if not isinstance(exc, duckdb.Error):
        return None
    if isinstance(exc, duckdb.OutOfMemoryException) or any(m in message for m in _LIMITS):
        return "resource_limit", message
    if isinstance(exc, duckdb.InternalException | duckdb.FatalException):
        return "engine_error", message
    if isinstance(exc, duckdb.IOException | duckdb.ConnectionException):
        return "engine_error", message
    if isinstance(exc, duckdb.ParserException):
        return "syntax", message
    if isinstance(exc, duckdb.CatalogException):
        return "schema", message
    if isinstance(exc, duckdb.BinderException):
        # unknown names are schema errors; the rest (GROUP BY, aggregates) a bad query
        unknown = ("not found", "does not exist", "Referenced column", "Referenced table")
        return ("schema" if any(u in message for u in unknown) else "syntax"), message
    if isinstance(exc, duckdb.InterruptException):
        return "timeout", message
    if isinstance(exc, duckdb.PermissionException):
        return "refused", describe_refusal(message)
    if isinstance(exc, duckdb.InvalidInputException) and (
        "read-only" in message or "configuration has been locked" in message
    ):
        return "refused", describe_refusal(message)
    if isinstance(exc, duckdb.NotImplementedException):
        return "unsupported", message
    return "runtime", message


def run_on_cursor(cursor: Any, start: Callable[[], object], limits: Limits) -> RawResult:
    """Start a query on a DuckDB cursor under the time limit (interrupting it when the
    deadline fires) and collect its rows within the row and size caps."""
    deadline = Deadline(limits.timeout_s, cursor.interrupt)
    with deadline:
        try:
            start()
            columns = [d[0] for d in cursor.description or []]
            rows, truncated = collect_rows(fetch_batches(cursor.fetchmany, _BATCH), limits)
        except Exception:
            if deadline.fired:
                raise QueryTimeout(
                    f"interrupted after the {limits.timeout_s:g}s time limit"
                ) from None
            raise
    return RawResult(columns, rows, truncated)


def duckdb_tables(cursor: Any) -> dict[str, dict[str, str]]:
    """{table: {column: type}} of the database a DuckDB cursor is on (also serves KQL)."""
    cursor.execute(
        "SELECT table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_catalog = current_database() ORDER BY table_name, ordinal_position"
    )
    tables: dict[str, dict[str, str]] = {}
    for table, column, kind in cursor.fetchall():
        tables.setdefault(table, {})[column] = kind
    return tables


class DuckDBEngine(Engine):
    """SQL on a DuckDB database file, opened read-only."""

    language = "sql"

    def __init__(self, name: str, path: Path, limits: Limits, identity: str,
                 settings: dict[str, Any] | None = None) -> None:  # fmt: skip
        super().__init__(name, limits, identity)
        import duckdb

        self.path = path
        config = duckdb_config(extra=settings, limits=limits)
        self._con = duckdb.connect(str(path), config=config)
        self._lock = threading.Lock()

    @property
    def dialect(self) -> str:
        return "duckdb"

    def refusal(self, query: str) -> str | None:
        reason = sql.read_only_refusal(query, "duckdb")
        return describe_refusal(reason) if reason else None

    def _cursor(self) -> Any:
        with self._lock:  # creating cursors is not thread-safe; using them is
            return self._con.cursor()

    def _run(self, query: str) -> RawResult:
        cursor = self._cursor()
        try:
            return run_on_cursor(cursor, lambda: cursor.execute(query), self.limits)
        finally:
            cursor.close()

    def classify(self, exc: BaseException) -> tuple[OutcomeKind, str]:
        return classify_duckdb(exc) or ("engine_error", f"{type(exc).__name__}: {exc}")

    def explain(self, query: str) -> str:
        cursor = self._cursor()
        try:
            with Deadline(self.limits.timeout_s, cursor.interrupt):
                cursor.execute(f"EXPLAIN {query}")
                return "\n".join(str(r[-1]) for r in cursor.fetchall())
        finally:
            cursor.close()

    def schema(self) -> dict[str, Any]:
        cursor = self._cursor()
        try:
            return {"tables": duckdb_tables(cursor)}
        finally:
            cursor.close()

    def close(self) -> None:
        self._con.close()
