"""Any SQLAlchemy URL (PostgreSQL, MySQL, SQLite, ...): each query in a transaction that is
read-only where the server can say so, always rolled back, with a server-side statement
timeout where the dialect has one and a driver-level cancel at the deadline."""

from __future__ import annotations

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
from queryeval.engines._sqlite import classify_sqlite
from queryeval.languages import sql

# SQLSTATE -> outcome kind (the ISO/PostgreSQL classes), MySQL error numbers likewise.
_SQLSTATE = {"42601": "syntax", "42P01": "schema", "42703": "schema", "42883": "schema",
             "42P02": "schema", "42704": "schema", "25006": "refused", "42501": "refused",
             "57014": "timeout", "0A000": "unsupported"}  # fmt: skip
# SQLSTATE classes: 53 insufficient resources, 54 program limit exceeded (the query's);
# 08 connection, 57P admin shutdown / crash, 58 system error, XX internal (the engine's)
_SQLSTATE_CLASSES = {"53": "resource_limit", "54": "resource_limit", "08": "engine_error",
                     "57P": "engine_error", "58": "engine_error", "XX": "engine_error"}  # fmt: skip
_MYSQL = {1064: "syntax", 1146: "schema", 1054: "schema", 1305: "schema", 1792: "refused",
          1142: "refused", 3024: "timeout", 1317: "timeout", 1038: "resource_limit",
          1041: "resource_limit", 1104: "resource_limit", 1114: "resource_limit",
          3170: "resource_limit", 2006: "engine_error", 2013: "engine_error",
          1053: "engine_error"}  # fmt: skip


def classify_dbapi(exc: BaseException) -> tuple[OutcomeKind, str] | None:
    """A SQLAlchemy DBAPIError by its driver error: sqlite3, SQLSTATE, or MySQL number."""
    from sqlalchemy import exc as sa_exc

    if not isinstance(exc, sa_exc.DBAPIError):
        return None
    orig = exc.orig
    message = str(orig) if orig is not None else str(exc)
    found = classify_sqlite(orig) if orig is not None else None
    if found is not None:
        return found
    state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if state:
        kind = (
            _SQLSTATE.get(state)
            or next((k for p, k in _SQLSTATE_CLASSES.items() if state.startswith(p)), None)
            or ("schema" if state.startswith("42") else "runtime")
        )
        return kind, describe_refusal(message) if kind == "refused" else message  # type: ignore[return-value]
    args = getattr(orig, "args", ())
    if args and isinstance(args[0], int) and args[0] in _MYSQL:
        kind = _MYSQL[args[0]]
        return kind, describe_refusal(message) if kind == "refused" else message  # type: ignore[return-value]
    return "runtime", message


class SQLAlchemyEngine(Engine):
    """SQL on a database reached by a SQLAlchemy URL."""

    language = "sql"

    def __init__(self, name: str, url: str, limits: Limits, identity: str) -> None:
        super().__init__(name, limits, identity)
        from sqlalchemy import create_engine, make_url

        self.url = make_url(url)
        self.backend = self.url.get_backend_name()
        self._engine = create_engine(self.url, pool_pre_ping=True)

    @property
    def dialect(self) -> str:
        return sql.sqlglot_dialect(self.backend) or self.backend

    def refusal(self, query: str) -> str | None:
        reason = sql.read_only_refusal(query, self.dialect)
        return describe_refusal(reason) if reason else None

    def _begin_read_only(self, conn: Any) -> None:
        ms = max(1, int(self.limits.timeout_s * 1000))
        if self.backend == "postgresql":
            conn.exec_driver_sql("SET TRANSACTION READ ONLY")
            conn.exec_driver_sql(f"SET LOCAL statement_timeout = {ms}")
        elif self.backend in {"mysql", "mariadb"}:
            conn.exec_driver_sql(f"SET SESSION MAX_EXECUTION_TIME = {ms}")
        elif self.backend == "sqlite":
            conn.exec_driver_sql("PRAGMA query_only = ON")

    @staticmethod
    def _cancel(dbapi_connection: Any) -> None:
        for name in ("cancel", "interrupt"):  # psycopg / sqlite3 spellings
            method = getattr(dbapi_connection, name, None)
            if callable(method):
                method()
                return

    def _run(self, query: str) -> RawResult:
        if self.backend in {"mysql", "mariadb"}:
            conn_opts: dict[str, Any] = {"isolation_level": "REPEATABLE READ"}
        else:
            conn_opts = {}
        with self._engine.connect().execution_options(**conn_opts) as conn:
            if self.backend in {"mysql", "mariadb"}:
                conn.exec_driver_sql("SET TRANSACTION READ ONLY")
            trans = conn.begin()
            try:
                self._begin_read_only(conn)
                dbapi = conn.connection.dbapi_connection
                deadline = Deadline(self.limits.timeout_s, lambda: self._cancel(dbapi))
                with deadline:
                    try:
                        result = conn.exec_driver_sql(query)
                        columns = list(result.keys()) if result.returns_rows else []
                        rows, truncated = (
                            collect_rows(fetch_batches(result.fetchmany, 1024), self.limits)
                            if result.returns_rows
                            else ([], False)
                        )
                    except Exception:
                        if deadline.fired:
                            raise QueryTimeout(
                                f"cancelled after the {self.limits.timeout_s:g}s time limit"
                            ) from None
                        raise
            finally:
                trans.rollback()  # whatever happened, nothing is kept
        return RawResult(columns, [tuple(r) for r in rows], truncated)

    def classify(self, exc: BaseException) -> tuple[OutcomeKind, str]:
        return classify_dbapi(exc) or ("runtime", f"{type(exc).__name__}: {exc}")

    def explain(self, query: str) -> str:
        prefix = "EXPLAIN QUERY PLAN" if self.backend == "sqlite" else "EXPLAIN"
        raw = self._run(f"{prefix} {query}")
        return "\n".join(" ".join(str(v) for v in row) for row in raw.rows)

    def schema(self) -> dict[str, Any]:
        from sqlalchemy import inspect

        inspector = inspect(self._engine)
        return {
            "tables": {
                table: {c["name"]: str(c["type"]) for c in inspector.get_columns(table)}
                for table in inspector.get_table_names()
            }
        }

    def close(self) -> None:
        self._engine.dispose()
