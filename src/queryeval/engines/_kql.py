"""KQL in process with duckdb-kql: KQL translated to DuckDB SQL and run on a read-only
DuckDB connection, with `now()` pinned so `ago()` answers the same all run long.

Before duckdb-kql sees a query, queryeval rewrites the real-world KQL it does not cover into
KQL it does, or refuses what it would answer wrongly (`_kql_rewrite`), and adds rows to its
function tables (`_kql_functions`). Dynamic (JSON) values come back decoded, as Kusto's own
client returns them: `make_list(pack(...))` is a list of dicts, not of JSON texts.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import threading
import time
from collections.abc import Callable
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
from queryeval.engines._kql_case import CaseIndex, Separated, decode_column, separate_case
from queryeval.engines._kql_externaldata import ExternalData
from queryeval.engines._kql_functions import REFUSED_MARKER
from queryeval.engines._kql_functions import install as install_kql_functions
from queryeval.engines._kql_rewrite import KqlRefused, Rewritten, rewrite_kql
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
    """duckdb-kql's error taxonomy as outcome kinds (None for other exceptions): its KQL
    parser's `syntax` (an emulator's: see `KqlEngine.emulated_kinds`), unknown names
    (`schema`), constructs it does not translate (`unsupported`); what queryeval refuses
    (`KqlRefused`, or at run time) is `unsupported` too."""
    from duckdb_kql import KqlError, KqlSchemaError, KqlSyntaxError, KqlUnsupportedError
    from duckdb_kql.errors import KqlScriptError

    if isinstance(exc, KqlRefused):
        return "unsupported", f"refused by queryeval: {exc}"
    if REFUSED_MARKER in str(exc):
        return "unsupported", str(exc)[str(exc).index(REFUSED_MARKER) :]
    if isinstance(exc, KqlScriptError) and exc.__cause__ is not None:
        return classify_kql(exc.__cause__)
    if isinstance(exc, ValueError) and _raised_in(exc, "stored_functions"):
        # duckdb-kql refuses a function definition it does not take (a scalar body with
        # its own `let` statements, ...): a construct it does not run
        return "unsupported", f"duckdb-kql's stored functions: {exc}"
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
    return "engine_error", message


def _raised_in(exc: BaseException, module: str) -> bool:
    """Whether `exc` was raised in duckdb_kql's `module`."""
    trace = exc.__traceback__
    while trace is not None and trace.tb_next is not None:
        trace = trace.tb_next
    return trace is not None and trace.tb_frame.f_globals.get("__name__") == f"duckdb_kql.{module}"


# names in DuckDB's errors about the SQL duckdb-kql wrote: "X" or `with name X does not exist`
_QUOTED_NAME = re.compile(r'"([^"\n]{1,200})"|\bwith name (\w+) does not exist')
_NAME_ERRORS = ("Referenced column", "Referenced table", "Column ", "Table with name", "column")


def translation_outcome(message: str, query: str, known: set[str]) -> tuple[OutcomeKind, str]:
    """A DuckDB parser/binder/catalog error on the SQL duckdb-kql translated `query` into:
    `schema` when it names a table or column that the KQL query uses, does not define
    (`name = ...`) and the database does not have (`known`); otherwise the translation
    failed, which is the engine's fault (`unsupported`).

    >>> translation_outcome('Binder Error: Column "Nope" referenced that exists in the '
    ...     'SELECT clause', "Logs | mv-expand Nope", {"Logs", "Level"})[0]
    'schema'
    >>> translation_outcome('Parser Error: syntax error at or near "AS"', "Logs | take 1",
    ...     {"Logs"})[0]
    'unsupported'
    """
    if any(m in message for m in _NAME_ERRORS) and "Function" not in message:
        for match in _QUOTED_NAME.finditer(message):
            name = match.group(1) or match.group(2)
            if name in known or not re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", query):
                continue
            if re.search(rf"(?<![\w.]){re.escape(name)}\s*=(?!=)", query):
                continue  # defined in the query (extend / project / summarize name = ...)
            return "schema", message
    return "unsupported", f"duckdb-kql's translation failed: {message}"


# plugins whose output columns come from the data (Kusto's docs: bag_unpack, pivot)
DATA_COLUMNS = "bag_unpack or pivot"
_PLUGIN = re.compile(r"\bevaluate\s+(bag_unpack|pivot)\s*\(", re.I)


def _column_from_the_data(message: str, query: str, tables: dict[str, list[str]]) -> str | None:
    """The column a failed translation names when it can only come from a `bag_unpack` /
    `pivot` of the query: DuckDB's binder did not find it, the query names it after the
    plugin and defines it nowhere (`name = ...`), and no table the query reads has it.

    >>> _column_from_the_data('Binder Error: Referenced column "Signer" not found in FROM '
    ...     'clause!', "T | evaluate bag_unpack(B) "
    ...     '| where Signer startswith "X"', {"T": ["B"], "U": ["Signer"]})
    'Signer'
    """
    plugin = _PLUGIN.search(query)
    if plugin is None:
        return None
    binder = re.search(r'Binder Error: (?:Referenced column|Column) "([^"\n]+)"', message)
    if binder is None:
        return None
    name = binder.group(1)
    after = query[plugin.end() :]
    if not re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", after):
        return None
    if re.search(rf"(?<![\w.]){re.escape(name)}\s*=(?!=)", query):
        return None  # defined in the query
    read = [t for t in tables if re.search(rf"(?<![\w.]){re.escape(t)}(?!\w)", query)]
    if not read or any(name in tables[t] for t in read):
        return None
    return name


_PREPARING = threading.local()  # since: this thread's CPU time when its query's rewrite began
_MEMO_SIZE = 4096  # rewrites and input columns kept per engine
_TIME_TYPES = ("TIMESTAMP", "TIMESTAMP WITH TIME ZONE", "TIMESTAMP_NS", "TIMESTAMP_MS",
               "TIMESTAMP_S", "DATE")  # fmt: skip


def latest_timestamp(con: Any) -> dt.datetime | None:
    """The latest timestamp (or date) in any column of the database on `con`, in UTC; None
    when it holds none. Fixtures pin KQL's `now()` to it when `options.now` is not given."""
    con.execute(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_catalog = current_database() AND data_type IN "
        f"({', '.join(repr(t) for t in _TIME_TYPES)}) ORDER BY table_name, column_name"
    )
    latest: dt.datetime | None = None
    for table, column in con.fetchall():
        quoted_table = '"' + table.replace('"', '""') + '"'
        quoted_column = '"' + column.replace('"', '""') + '"'
        (value,) = con.execute(f"SELECT max({quoted_column}) FROM {quoted_table}").fetchone()
        if value is None:
            continue
        if not isinstance(value, dt.datetime):  # a DATE: its midnight
            value = dt.datetime.combine(value, dt.time())
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        value = value.astimezone(dt.UTC)
        latest = value if latest is None or value > latest else latest
    return latest


class KqlEngine(Engine):
    """KQL on a DuckDB database file through duckdb-kql, read-only. duckdb-kql emulates
    Kusto: its parser's verdicts (`syntax`) are not the authority on KQL, and an error of
    DuckDB on the SQL it wrote is its translation's fault unless the query names a table or
    column the database lacks (`translation_outcome`)."""

    language = "kql"
    emulated_kinds = frozenset({"syntax"})
    cpu_in_process = True  # DuckDB's threads: the time limit is on the query's CPU time

    def __init__(self, name: str, path: Path, limits: Limits, identity: str,
                 now: dt.datetime | None = None,
                 externaldata: ExternalData | None = None) -> None:  # fmt: skip
        super().__init__(name, limits, identity)
        import duckdb

        self.path = path
        # `externaldata` URLs mapped to local files (none: every one refused, the evaluator's)
        self.externaldata = externaldata or ExternalData()
        # Not config-locked: duckdb-kql sets TimeZone=UTC on every query. KQL cannot
        # express a SET, ATTACH or COPY, so the lock would only stop the translator.
        config = duckdb_config(lock=False, limits=limits)
        self._con = duckdb.connect(str(path), config=config)
        self._con.execute("SET TimeZone = 'UTC'")
        self._lock = threading.Lock()
        if now is not None:
            self.now, self.now_source = now, "options.now"
        else:  # pinned to the data, so `ago()` windows hold rows whenever the run happens
            latest = latest_timestamp(self._con)
            if latest is not None:
                self.now, self.now_source = latest, "the latest timestamp in the data"
            else:
                self.now = dt.datetime.now(dt.UTC)
                self.now_source = "the moment the engine started (no timestamp in the data)"
        self.identity = f"{identity}:now={self.now.isoformat()}"
        install_kql_functions()
        # The database is read-only: its catalog, and the rewrites and input columns of the
        # queries (and of the prefixes a rewrite inspects, again and again in nested lets),
        # are the same every time (successes only: a refusal may be a time limit's)
        self._catalog: Any = None
        self._case_index: CaseIndex | None = None
        self._memo: dict[tuple[str, str, tuple[str, ...]], Any] = {}

    def refusal(self, query: str) -> str | None:
        reason = kql.read_only_refusal(query)
        return describe_refusal(reason) if reason else None

    def _cursor(self) -> Any:
        with self._lock:
            return self._con.cursor()

    def prepare(self, query: str, functions: tuple[str, ...] = ()) -> Rewritten:
        """`query` as duckdb-kql runs it (queryeval's rewrites applied) with the stored
        functions it needs; KqlRefused when queryeval will not run it."""
        outermost = getattr(_PREPARING, "since", None) is None  # else a prefix inspected
        if outermost:
            _PREPARING.since = time.thread_time()
        try:
            return self._memoised("prepare", query, functions, lambda: rewrite_kql(
                self.externaldata.substitute(query), self, functions))  # fmt: skip
        finally:
            if outermost:
                _PREPARING.since = None

    def _within_budget(self) -> None:
        """Rewriting is the evaluator's work, bounded: past the query's own time limit of
        this thread's CPU time (the rewrites run here), the query is refused (unsupported,
        judged by the independent validity check) rather than left to run unbounded."""
        since = getattr(_PREPARING, "since", None)
        if since is not None and time.thread_time() - since > self.limits.timeout_s:
            raise KqlRefused(
                f"preparing the query for the embedded engine took past its "
                f"{self.limits.timeout_s:g}s time limit of CPU time"
            )

    def columns(self, query: str, functions: tuple[str, ...]) -> list[tuple[str, str]]:
        """The output columns of a KQL query (name, DuckDB type), without running it."""
        around = "SELECT * FROM ({sql}) AS _qe LIMIT 0"
        return list(self._memoised("columns", query, functions,
                                   lambda: self._inspect(query, functions, around)[0]))  # fmt: skip

    def _memoised(self, kind: str, query: str, functions: tuple[str, ...],
                  compute: Callable[[], Any]) -> Any:  # fmt: skip
        key = (kind, query, functions)
        with self._lock:
            if key in self._memo:
                return self._memo[key]
        value = compute()
        with self._lock:
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.pop(next(iter(self._memo)))
            self._memo[key] = value
        return value

    def bag_slots(
        self, query: str, functions: tuple[str, ...], column: str
    ) -> list[tuple[str, list[str]]]:
        """The top-level keys of the bags in `column` of the query's rows, with the JSON types
        of their values (runs the query, within the limits)."""
        value = 'CAST(_qe."' + column.replace('"', '""') + '" AS JSON)'
        around = (
            f"SELECT j.key, list(DISTINCT j.type) FROM ({{sql}}) AS _qe, json_each({value}) AS j "
            f"WHERE json_type({value}) = 'OBJECT' GROUP BY j.key"
        )
        _, rows = self._inspect(query, functions, around)
        return [(str(key), [str(t) for t in types]) for key, types in rows]

    def _inspect(self, query: str, functions: tuple[str, ...],
                 around: str) -> tuple[list[tuple[str, str]], list[tuple[Any, ...]]]:  # fmt: skip
        """Run `around` (SQL with `{sql}` for the query's translation) under the limits:
        (columns with their types, at most max_rows rows)."""
        self._within_budget()
        prepared = self.prepare(query, functions)
        self._within_budget()
        cursor = self._cursor()
        try:
            sql = self._to_sql(cursor, prepared)
            limit, cap = self.limits.timeout_s, self.limits.wall_cap_s
            with Deadline(limit, cursor.interrupt, cap) as deadline:
                try:
                    cursor.execute(around.replace("{sql}", str(sql)), sql.parameters or None)
                    rows = cursor.fetchmany(self.limits.max_rows)
                except Exception:
                    if deadline.fired:
                        raise KqlRefused("inspecting the input ran past the time limit") from None
                    raise
            columns = [(str(d[0]), str(d[1])) for d in cursor.description or []]
            return columns, rows
        finally:
            cursor.close()

    def _to_sql(self, cursor: Any, prepared: Rewritten) -> Any:
        import duckdb_kql
        from duckdb_kql.engine import schema

        if self._catalog is None:  # read once: the database is read-only
            self._catalog = schema(cursor)
        named = "\n".join([prepared.text, *prepared.functions])
        sql = duckdb_kql.to_sql(
            prepared.text, schema=self.externaldata.catalog(self._catalog, named),
            allow_write=False, query_now=self.now, functions=list(prepared.functions),
        )  # fmt: skip
        for table in self.externaldata.named(str(sql)):  # this cursor's temporary tables
            table.create(cursor)
        return sql

    def _run(self, query: str) -> RawResult:
        # `union *` / `union Pattern*` / a source `search`: one leg per table of the catalog
        # (`wildcard_unions`), before the case scheme sees which tables the query reads
        query = self._memoised("wildcards", query, (), lambda: self._wildcards(query))
        separated = self._memoised("case", query, (), lambda: self._separated(query))
        raw = self._run_prepared(query if separated is None else separated.text)
        # a result's encoded columns (`_kql_case`: a table or an externaldata holding two
        # spellings stores the later ones encoded) named back
        columns = [decode_column(c) for c in raw.columns]
        return raw if columns == list(raw.columns) else dataclasses.replace(raw, columns=columns)

    def _wildcards(self, query: str) -> str:
        """`query` with its wildcard unions and source searches expanded from the catalog
        (a quick look at its words first)."""
        lowered = query.lower()
        if "union" not in lowered and "search" not in lowered:
            return query
        from queryeval.engines._kql_rewrite_kusto import wildcard_unions

        return wildcard_unions(query, self.cached_schema()["tables"])

    def _separated(self, query: str) -> Separated | None:
        """`query` with its columns that differ only in case kept apart (`_kql_case`), or
        None when it names none (a quick look at its words first)."""
        if self._case_index is None:
            self._case_index = CaseIndex(self._tables())
        if "search" in query.lower():  # a source search reads the tables through a union
            from queryeval.engines._kql_rewrite_kusto import searches_as_unions

            query = searches_as_unions(query)
        if not self._case_index.might_collide(query):
            return None
        return separate_case(query, self._tables())

    def _tables(self) -> dict[str, list[str]]:
        """The database's tables and their columns (duckdb-kql's catalog, read once)."""
        if self._catalog is None:
            from duckdb_kql.engine import schema

            cursor = self._cursor()
            try:
                self._catalog = schema(cursor)
            finally:
                cursor.close()
        return dict(self._catalog)

    def _run_prepared(self, query: str) -> RawResult:
        from duckdb_kql import KqlSchemaError

        prepared = self.prepare(query)
        cursor = self._cursor()
        try:

            def start() -> object:
                # duckdb_kql.execute's steps, with the catalog read once (it reads
                # information_schema on every call: most of a small query's cost on a
                # database of hundreds of tables); the database is read-only
                cursor.execute("SET TimeZone = 'UTC'")
                sql = self._to_sql(cursor, prepared)
                if sql.unbound:
                    raise KqlSchemaError(", ".join(sql.unbound), hint="declared query "
                                         "parameter with no value and no default")  # fmt: skip
                return cursor.execute(str(sql), sql.parameters or None)

            raw = run_on_cursor(cursor, start, self.limits)
            types = [str(d[1]) for d in cursor.description or []]
        finally:
            cursor.close()
        return decode_dynamic(raw, types)

    def classify(self, exc: BaseException) -> tuple[OutcomeKind, str]:
        return (
            classify_kql(exc)
            or classify_duckdb(exc)
            or ("engine_error", f"{type(exc).__name__}: {exc}")
        )

    def outcome_of(self, exc: BaseException, query: str) -> tuple[OutcomeKind, str]:
        kind, message = self.classify(exc)
        if classify_kql(exc) is None and kind in ("syntax", "schema", "unsupported"):
            # A column named after `bag_unpack` / `pivot` that this data does not give is the
            # query's `schema` error: those plugins' columns come from the data (Kusto's
            # docs), and the verdict is on this database, where Kusto would not find it
            # either (even when another table has a column of that name).
            name = _column_from_the_data(message, query, self._tables())
            if name is not None:
                return "schema", (f"column {name!r} is neither a column of the tables the "
                                  f"query reads nor one that {DATA_COLUMNS} give on these "
                                  f"rows ({message})")  # fmt: skip
            kind, message = translation_outcome(message, query, self._known_names())
        return kind, message

    def _known_names(self) -> set[str]:
        try:
            tables = self.cached_schema().get("tables", {})
        except Exception:  # the schema cannot be read: no name is known
            return set()
        return set(tables) | {column for columns in tables.values() for column in columns}

    def translate(self, query: str) -> str:
        """The DuckDB SQL duckdb-kql makes of `query` (with the clock pinned)."""
        prepared = self.prepare(query)
        cursor = self._cursor()
        try:
            return str(self._to_sql(cursor, prepared))
        finally:
            cursor.close()

    def explain(self, query: str) -> str:
        prepared = self.prepare(query)
        cursor = self._cursor()
        try:
            with Deadline(self.limits.timeout_s, cursor.interrupt, self.limits.wall_cap_s):
                sql = self._to_sql(cursor, prepared)
                cursor.execute(f"EXPLAIN {sql}", sql.parameters or None)
            return str(sql)
        finally:
            cursor.close()

    def schema(self) -> dict[str, Any]:
        cursor = self._cursor()
        try:
            return {
                "tables": duckdb_tables(cursor),
                "now": self.now.isoformat(),
                "now_source": self.now_source,
            }
        finally:
            cursor.close()

    def close(self) -> None:
        self._con.close()


def _decoder(type_name: str) -> Any:
    """How to decode a value of a DuckDB column type holding JSON (None: leave it)."""
    if type_name == "JSON":
        return lambda v: json.loads(v) if isinstance(v, str) else v
    if type_name.endswith("[]"):
        inner = _decoder(type_name[:-2])
        if inner is not None:
            return lambda v: [inner(x) for x in v] if isinstance(v, list) else v
    return None


def decode_dynamic(raw: RawResult, types: list[str]) -> RawResult:
    """Dynamic values as Kusto's client gives them: JSON text (DuckDB's JSON type, also
    inside lists) decoded to Python values."""
    decoders = [_decoder(t) for t in types]
    if not any(decoders) or len(decoders) != len(raw.columns):
        return raw
    rows = [
        tuple(d(v) if d is not None and v is not None else v
              for d, v in zip(decoders, row, strict=True))
        for row in raw.rows
    ]  # fmt: skip
    return RawResult(raw.columns, rows, raw.truncated, raw.notes)
