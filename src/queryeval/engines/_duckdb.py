"""DuckDB, embedded: a read-only connection with file access disabled and the configuration
locked, a cursor per query, and `interrupt()` from a deadline thread."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

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
from queryeval.languages import sql
from queryeval.metrics.results import FAST_MAX_ROWS

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


def run_on_cursor(cursor: Any, start: Callable[[], object], limits: Limits,
                  arrow_query: str | None = None) -> RawResult:  # fmt: skip
    """Start a query on a DuckDB cursor under the time limit (interrupting it when the
    deadline fires) and collect its rows within the row and size caps. `arrow_query`: the
    query is first planned as a relation, and a result whose columns `arrow_fetch` can
    bound exactly is fetched as an Arrow table (else `start` runs it as usual)."""
    deadline = Deadline(limits.timeout_s, cursor.interrupt, limits.wall_cap_s)
    with deadline:
        try:
            if arrow_query is not None:
                fetched = _arrow_result(cursor, arrow_query, limits)
                if fetched is not None:
                    return fetched
            start()
            columns = [d[0] for d in cursor.description or []]
            # DuckDB's `fetchmany(n)` fetches row by row until n or the end: a short
            # batch is the last
            batches = fetch_batches(cursor.fetchmany, _BATCH, short_is_last=True)
            rows, truncated = collect_rows(batches, limits)
        except Exception:
            if deadline.fired:
                raise deadline.timeout() from None
            raise
    return RawResult(columns, rows, truncated)


# DuckDB types whose Python values `row_bytes` sizes by kind alone (8 bytes a number or
# boolean) or by length (a string: its characters + 1): their Arrow columns are sized the
# same way without making Python values
_FIXED_TYPES = frozenset({
    "BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT",
    "UINTEGER", "UBIGINT", "FLOAT", "DOUBLE",
})  # fmt: skip
# rows per Arrow batch: as many as a Python-row fetch holds at once, so that a result of
# huge values takes no more memory before the byte cap cuts it than it did as Python rows
_ARROW_BATCH = _BATCH


def _arrow_result(cursor: Any, query: str, limits: Limits) -> RawResult | None:
    """The query's result as an Arrow table when every column is of a type `arrow_fetch`
    bounds exactly (as Python rows when it is whole and has at most `FAST_MAX_ROWS` rows);
    None for the caller to run it for rows: other types (planned, not run),
    or a query DuckDB refuses while planning (the cursor's run reports it, with the
    context of its message)."""
    import duckdb

    try:
        relation = cursor.sql(query)  # a query is planned here, and runs when read
    except duckdb.InterruptException:
        raise  # the time limit: not to be run again
    except duckdb.Error:
        return None
    if relation is None:
        return None
    strings = arrow_kinds([str(t) for t in relation.types])
    if strings is None:
        # a statement whose columns DuckDB learns only by running it (PIVOT) has run
        # already: run again for rows (rare: such a statement, other types, a large cap)
        return None
    # `to_arrow_reader` since DuckDB 2.0; `fetch_arrow_reader` before
    read = getattr(relation, "to_arrow_reader", None) or relation.fetch_arrow_reader
    table, truncated = arrow_fetch(read(_ARROW_BATCH), strings, limits)
    if not truncated and table.num_rows <= FAST_MAX_ROWS:
        # small enough for the comparator's fast path on Python rows (a vectorised compare
        # costs ms even for one row); these types' Arrow values are DuckDB's Python values
        rows = list(zip(*(column.to_pylist() for column in table.columns), strict=True))
        return RawResult(list(relation.columns), rows, False)
    return RawResult(list(relation.columns), [], truncated, table=table)


def arrow_kinds(types: Sequence[str]) -> list[bool] | None:
    """Per column, whether it holds strings (else fixed-size values), when every type (a
    DuckDB type name) is one `arrow_fetch` sizes exactly; None otherwise.

    >>> arrow_kinds(["INTEGER", "VARCHAR"]), arrow_kinds(["DATE"])
    ([False, True], None)
    """
    kinds = []
    for name in types:
        if name == "VARCHAR":
            kinds.append(True)
        elif name in _FIXED_TYPES:
            kinds.append(False)
        else:
            return None
    return kinds if kinds else None


def arrow_fetch(reader: Any, strings: Sequence[bool], limits: Limits) -> tuple[Any, bool]:
    """The batches of an Arrow `reader` as a `pyarrow.Table`, cut where `collect_rows` cuts
    the same rows as Python values (the first `max_rows`, and no row past `max_bytes`
    counted as `row_bytes` counts: 8 a number, boolean or NULL, a string's characters +
    1); (table, truncated). `strings`: per column, whether it is VARCHAR (else
    fixed-size)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    kept: list[Any] = []
    rows = size = 0
    fixed = 8 * (len(strings) - sum(strings))

    def table() -> Any:  # one chunk a column: the comparator's kernels run on whole arrays
        return pa.Table.from_batches(kept, reader.schema).combine_chunks()

    for batch in reader:
        n = batch.num_rows
        if not n:
            continue
        if rows >= limits.max_rows:
            return table(), True
        sizes = np.full(n, fixed, dtype=np.int64)
        for column, is_string in zip(batch.columns, strings, strict=True):
            if is_string:
                lengths = pc.fill_null(pc.add(pc.utf8_length(column), 1), 8)
                sizes += lengths.to_numpy(zero_copy_only=False)
        total = size + np.cumsum(sizes)
        within = int(np.searchsorted(total, limits.max_bytes, side="right"))
        fits = min(n, limits.max_rows - rows, within)
        if fits < n:
            kept.append(batch.slice(0, fits))
            return table(), True
        kept.append(batch)
        rows += n
        size = int(total[-1])
    return table(), False


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
    cpu_in_process = True

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

    @property
    def single_threaded(self) -> bool:
        return self.limits.threads == 1

    def refusal(self, query: str) -> str | None:
        reason = sql.read_only_refusal(query, "duckdb")
        return describe_refusal(reason) if reason else None

    def _cursor(self) -> Any:
        with self._lock:  # creating cursors is not thread-safe; using them is
            return self._con.cursor()

    def _run(self, query: str) -> RawResult:
        cursor = self._cursor()
        try:
            # results past the comparator's fast path for Python rows: Arrow, when exact
            arrow = query if self.limits.max_rows > FAST_MAX_ROWS else None
            return run_on_cursor(cursor, lambda: cursor.execute(query), self.limits, arrow)
        finally:
            cursor.close()

    def classify(self, exc: BaseException) -> tuple[OutcomeKind, str]:
        return classify_duckdb(exc) or ("engine_error", f"{type(exc).__name__}: {exc}")

    def explain(self, query: str) -> str:
        cursor = self._cursor()
        try:
            with Deadline(self.limits.timeout_s, cursor.interrupt, self.limits.wall_cap_s):
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
