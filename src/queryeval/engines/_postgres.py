"""PostgreSQL through psycopg 3: a server queryeval starts (`_postgres_server`, a fixture a
database of it) or a user's server URL. Each query runs in its own `READ ONLY` transaction,
always rolled back, as a role that may only read (the started server's `queryeval_reader`;
on a user's server, the URL's role: give one without write privileges), under a
server-side `statement_timeout` and a client-side cancel at the deadline, with `work_mem`
bounded and rows fetched from a server-side cursor within `max_rows` / `max_bytes`."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from queryeval.cases import OutcomeKind
from queryeval.engines._base import (
    Deadline,
    Engine,
    Limits,
    RawResult,
    collect_rows,
    describe_refusal,
    fetch_batches,
)
from queryeval.engines._sqlalchemy import _SQLSTATE, _SQLSTATE_CLASSES
from queryeval.languages import sql

if TYPE_CHECKING:
    from queryeval.engines._postgres_server import PostgresServer

_BATCH = 1024


def classify_postgres(exc: BaseException) -> tuple[OutcomeKind, str] | None:
    """A psycopg error as an outcome kind by its SQLSTATE (None for anything else).

    >>> import psycopg
    >>> classify_postgres(psycopg.errors.UndefinedTable("relation t does not exist"))[0]
    'schema'
    """
    import psycopg

    if not isinstance(exc, psycopg.Error):
        return None
    message = str(exc).strip()
    state = exc.sqlstate
    if not state:
        return "engine_error", message  # no answer from the server: the connection broke
    kind = (
        _SQLSTATE.get(state)
        or next((k for p, k in _SQLSTATE_CLASSES.items() if state.startswith(p)), None)
        or ("schema" if state.startswith("42") else "runtime")
    )
    return kind, describe_refusal(message) if kind == "refused" else message  # type: ignore[return-value]


def strip_statement(query: str) -> str:
    """The query without trailing semicolons and blanks (a cursor declares one statement).

    >>> strip_statement("SELECT 1 ;\\n")
    'SELECT 1'
    """
    return query.rstrip().rstrip(";").rstrip()


class PostgresEngine(Engine):
    """SQL on a PostgreSQL database, read-only. `server` and `database`: a database of a
    server queryeval started (its template for disposable copies); else `conninfo` is the
    user's."""

    language = "sql"
    in_process = False

    def __init__(
        self,
        name: str,
        limits: Limits,
        identity: str,
        conninfo: str,
        *,
        server: PostgresServer | None = None,
        database: str | None = None,
    ) -> None:
        super().__init__(name, limits, identity)
        self.conninfo = conninfo
        self.server = server
        self.database = database
        self._con: Any = None
        self._lock = threading.Lock()  # one connection, one statement at a time

    @property
    def dialect(self) -> str:
        return "postgres"

    def refusal(self, query: str) -> str | None:
        reason = sql.read_only_refusal(query, "postgres")
        return describe_refusal(reason) if reason else None

    # -- the connection --------------------------------------------------------------------

    def _connection(self) -> Any:
        import psycopg

        if self._con is None or self._con.closed:
            self._con = psycopg.connect(self.conninfo, autocommit=True, connect_timeout=30)
        return self._con

    def release(self) -> None:
        """Close the connection (reopened on the next query): a database with a session
        open cannot be a template."""
        with self._lock:
            self._drop()

    def make_copy(self, name: str) -> str:
        """Create database `name` from this engine's database as its template (a server
        queryeval started) and a login role of the same name, allowed to read and write it
        and nothing else; its conninfo as that role. A role a copy: one task's statements
        cannot cancel or signal another task's session. The engine's own session is closed
        first (a template must be idle)."""
        import secrets
        import time

        import psycopg

        from queryeval.engines._postgres_fixtures import grant_task

        assert self.server is not None and self.database is not None
        password = secrets.token_hex(16)
        with self.server.admin() as conn:
            conn.execute(f'CREATE ROLE "{name}" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE '
                         f"NOREPLICATION NOBYPASSRLS PASSWORD '{password}'")  # fmt: skip
        try:
            for attempt in range(50):
                with self._lock, self.server.lock:
                    self._drop()
                    try:
                        with self.server.admin() as conn:
                            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self.database}"')
                        break
                    except psycopg.errors.ObjectInUse:  # another engine's session on it
                        if attempt == 49:
                            raise
                time.sleep(0.02)
            grant_task(self.server, name, name)
        except BaseException:
            self.drop_copy(name)  # neither the database nor the role is left behind
            raise
        return self.server.conninfo_for(name, name, password)

    def drop_copy(self, name: str) -> None:
        """Drop a database `make_copy` made (its sessions ended) and its role."""
        assert self.server is not None
        with self.server.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'DROP ROLE IF EXISTS "{name}"')

    def _drop(self) -> None:
        con, self._con = self._con, None
        if con is not None:
            con.close()

    def _begin(self, conn: Any) -> None:
        ms = max(1, int(self.limits.wall_cap_s * 1000))
        work_mem = max(64, self.limits.memory_limit // 4 // 1024)
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        conn.execute(f"SET LOCAL statement_timeout = {ms}")
        conn.execute(f"SET LOCAL work_mem = '{work_mem}kB'")

    def _in_transaction(self, work: Any) -> Any:
        """`work(conn)` inside a read-only transaction under the deadline, rolled back."""
        import psycopg

        with self._lock:
            conn = self._connection()
            deadline = Deadline(self.limits.timeout_s, conn.cancel, self.limits.wall_cap_s)
            try:
                self._begin(conn)
                with deadline:
                    try:
                        return work(conn)
                    except psycopg.errors.QueryCanceled:
                        if deadline.fired:
                            raise deadline.timeout() from None
                        raise
            except psycopg.OperationalError:
                self._drop()
                raise
            finally:
                if self._con is not None and not conn.closed:
                    try:
                        conn.execute("ROLLBACK")  # whatever happened, nothing is kept
                    except psycopg.Error:
                        self._drop()

    def _run(self, query: str) -> RawResult:
        text = strip_statement(query)

        def work(conn: Any) -> RawResult:
            with conn.cursor(name="queryeval") as cursor:
                cursor.execute(text)
                columns = [d.name for d in cursor.description or []]
                rows, truncated = collect_rows(fetch_batches(cursor.fetchmany, _BATCH),
                                               self.limits)  # fmt: skip
            return RawResult(columns, rows, truncated)

        return self._in_transaction(work)

    def classify(self, exc: BaseException) -> tuple[OutcomeKind, str]:
        return classify_postgres(exc) or ("engine_error", f"{type(exc).__name__}: {exc}")

    def explain(self, query: str) -> str:
        text = strip_statement(query)

        def work(conn: Any) -> str:
            rows = conn.execute(f"EXPLAIN {text}").fetchall()
            return "\n".join(str(r[0]) for r in rows)

        result: str = self._in_transaction(work)
        return result

    def schema(self) -> dict[str, Any]:
        def work(conn: Any) -> dict[str, Any]:
            rows = conn.execute(
                "SELECT table_schema, table_name, column_name, data_type "
                "FROM information_schema.columns WHERE table_schema NOT IN "
                "('pg_catalog', 'information_schema') AND table_schema NOT LIKE 'pg_toast%' "
                "ORDER BY table_schema, table_name, ordinal_position"
            ).fetchall()
            tables: dict[str, dict[str, str]] = {}
            for schema, table, column, kind in rows:
                key = table if schema == "public" else f"{schema}.{table}"
                tables.setdefault(key, {})[column] = kind
            return {"tables": tables}

        result: dict[str, Any] = self._in_transaction(work)
        return result

    def close(self) -> None:
        with self._lock:
            self._drop()
