"""KQL in process with duckdb-kql: KQL translated to DuckDB SQL and run on a read-only
DuckDB connection, with `now()` pinned so `ago()` answers the same all run long."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path
from typing import Any

from queryeval.cases import OutcomeKind
from queryeval.engines._base import (
    Deadline,
    Engine,
    Limits,
    RawResult,
    describe_refusal,
)
from queryeval.engines._duckdb import (
    classify_duckdb,
    duckdb_config,
    duckdb_tables,
    run_on_cursor,
)
from queryeval.languages import kql


def parse_now(value: Any) -> dt.datetime:
    """A pinned clock from config (ISO text or datetime), in UTC."""
    if isinstance(value, dt.datetime):
        moment = value
    else:
        moment = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC)


def classify_kql(exc: BaseException) -> tuple[OutcomeKind, str] | None:
    """duckdb-kql's error taxonomy as outcome kinds (None for other exceptions)."""
    from duckdb_kql import KqlError, KqlSchemaError, KqlSyntaxError, KqlUnsupportedError

    if not isinstance(exc, KqlError):
        return None
    message = str(exc)
    if isinstance(exc, KqlSyntaxError):
        return "syntax", message
    if isinstance(exc, KqlSchemaError):
        return "schema", message
    if isinstance(exc, KqlUnsupportedError):
        if "writes are disabled" in message:
            return "refused", describe_refusal(message)
        return "unsupported", message
    return "runtime", message


class KqlEngine(Engine):
    """KQL on a DuckDB database file through duckdb-kql, read-only."""

    language = "kql"

    def __init__(self, name: str, path: Path, limits: Limits, identity: str,
                 now: dt.datetime) -> None:  # fmt: skip
        super().__init__(name, limits, identity)
        import duckdb

        self.path = path
        self.now = now
        # Not config-locked: duckdb-kql sets TimeZone=UTC on every query. KQL cannot
        # express a SET, ATTACH or COPY, so the lock would only stop the translator.
        config = duckdb_config(lock=False)
        self._con = duckdb.connect(str(path), config=config)
        self._con.execute("SET TimeZone = 'UTC'")
        self._lock = threading.Lock()

    def refusal(self, query: str) -> str | None:
        reason = kql.read_only_refusal(query)
        return describe_refusal(reason) if reason else None

    def _cursor(self) -> Any:
        with self._lock:
            return self._con.cursor()

    def _run(self, query: str) -> RawResult:
        import duckdb_kql

        cursor = self._cursor()
        try:
            return run_on_cursor(
                cursor,
                lambda: duckdb_kql.execute(cursor, query, allow_write=False, query_now=self.now),
                self.limits,
            )
        finally:
            cursor.close()

    def classify(self, exc: BaseException) -> tuple[OutcomeKind, str]:
        return (
            classify_kql(exc) or classify_duckdb(exc) or ("runtime", f"{type(exc).__name__}: {exc}")
        )

    def translate(self, query: str) -> str:
        """The DuckDB SQL duckdb-kql makes of `query` (with the clock pinned)."""
        import duckdb_kql
        from duckdb_kql.engine import schema

        cursor = self._cursor()
        try:
            sql = duckdb_kql.to_sql(
                query, schema=schema(cursor), allow_write=False, query_now=self.now
            )
            return str(sql)
        finally:
            cursor.close()

    def explain(self, query: str) -> str:
        import duckdb_kql
        from duckdb_kql.engine import schema

        cursor = self._cursor()
        try:
            with Deadline(self.limits.timeout_s, cursor.interrupt):
                sql = duckdb_kql.to_sql(
                    query, schema=schema(cursor), allow_write=False, query_now=self.now
                )
                cursor.execute(f"EXPLAIN {sql}", sql.parameters or None)
            return str(sql)
        finally:
            cursor.close()

    def schema(self) -> dict[str, Any]:
        cursor = self._cursor()
        try:
            return {"tables": duckdb_tables(cursor), "now": self.now.isoformat()}
        finally:
            cursor.close()

    def close(self) -> None:
        self._con.close()
