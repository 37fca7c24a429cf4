"""Offline KQL validity with Microsoft's own parser and analyzer, Kusto.Language.

Kusto.Language is a .NET library; Microsoft publishes it translated to JavaScript as the npm
package `@kusto/language-service-next`. No Python package parses or analyzes KQL the way
Kusto does, so queryeval runs it under Node: one long-lived helper process per validator
(`kusto_language.js`, JSON lines over stdin/stdout), started on the first check, never one
process per query. Each request has a deadline; a helper that misses it is killed and the
next check starts a fresh one.

    >>> from queryeval.engines import KqlSchema, KqlValidator
    >>> schema = KqlSchema.from_tables({"Logs": {"Level": "string", "Ts": "datetime"}})
    >>> with KqlValidator() as validator:                     # doctest: +SKIP
    ...     v = validator.check("Logs | where Levl == 'x'", schema)
    >>> v.syntax_ok, v.semantic_ok, v.semantic[0].code        # doctest: +SKIP
    (True, False, 'KS142')

Verdicts follow NL2KQL's offline metrics: the syntax score is 1 when the parser reports
nothing, the semantic score is 1 when parsing and analysis against the database schema
report nothing (unknown tables, columns and functions, type errors, unreachable clusters).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import hashlib
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from queryeval.resources import RunResources

PACKAGE = "@kusto/language-service-next"
PACKAGE_VERSION = "12.4.1"  # the version `make install` puts under .venv/kusto-language
_HELPER = Path(__file__).with_name("kusto_language.js")
_MEMO_SIZE = 100_000  # verdicts kept (a run asks about each query from several scorers)
_BLOCKING = ("Error", "Warning")  # severities that make a query invalid (Kusto's own)
# KQL's scalar types, as Kusto.Language names them; anything else is a DuckDB type name.
_KQL_TYPES = {"bool", "boolean", "int", "long", "real", "double", "decimal", "string",
              "datetime", "date", "timespan", "time", "guid", "uniqueid", "dynamic"}  # fmt: skip
_DUCKDB_TO_KQL = {
    "BOOLEAN": "bool", "TINYINT": "int", "SMALLINT": "int", "INTEGER": "int",
    "UTINYINT": "int", "USMALLINT": "int", "UINTEGER": "long", "BIGINT": "long",
    "UBIGINT": "long", "HUGEINT": "long", "UHUGEINT": "long", "FLOAT": "real",
    "DOUBLE": "real", "VARCHAR": "string", "UUID": "guid", "DATE": "datetime",
    "TIMESTAMP": "datetime", "TIMESTAMP WITH TIME ZONE": "datetime", "TIMESTAMP_S": "datetime",
    "TIMESTAMP_MS": "datetime", "TIMESTAMP_NS": "datetime", "TIME": "timespan",
    "INTERVAL": "timespan", "JSON": "dynamic", "BLOB": "string",
}  # fmt: skip


class KqlValidatorError(Exception):
    """The validator gave no verdict (helper missing, crashed or past its deadline)."""


class KqlValidatorTimeout(KqlValidatorError):
    """The query kept Kusto.Language busy past the deadline (a limit the query broke)."""


class KustoLanguageMissing(KqlValidatorError):
    """Node.js or the npm package is not installed; the message says how to install them."""


def kql_type(type_name: str) -> str:
    """The KQL scalar type of a column type given in KQL or DuckDB terms (DuckDB's
    composite types and decimals are `dynamic` / `decimal`, unknown ones `string`).

    >>> kql_type("TIMESTAMP"), kql_type("long"), kql_type("VARCHAR[]"), kql_type("DECIMAL(9,2)")
    ('datetime', 'long', 'dynamic', 'decimal')
    """
    text = type_name.strip()
    if text.lower() in _KQL_TYPES:
        return text.lower()
    upper = text.upper()
    if upper in _DUCKDB_TO_KQL:
        return _DUCKDB_TO_KQL[upper]
    if upper.startswith("DECIMAL"):
        return "decimal"
    if upper.endswith("]") or upper.startswith(("STRUCT", "MAP", "LIST", "UNION")):
        return "dynamic"
    return "string"


@dataclass(frozen=True)
class KqlSchema:
    """A database for the analyzer: tables with their (column, KQL type) lists.

    >>> KqlSchema.from_tables({"T": {"a": "VARCHAR", "n": "BIGINT"}}).tables
    (('T', (('a', 'string'), ('n', 'long'))),)
    """

    tables: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    database: str = "db"
    key: str = field(default="", compare=False)

    @classmethod
    def from_tables(cls, tables: Mapping[str, Mapping[str, str]], database: str = "db"
                    ) -> KqlSchema:  # fmt: skip
        """From `{table: {column: type}}` as engines' `schema()["tables"]` give it."""
        items = tuple(
            (str(t), tuple((str(c), kql_type(str(ty))) for c, ty in cols.items()))
            for t, cols in tables.items()
        )
        digest = hashlib.sha256(json.dumps([database, items]).encode()).hexdigest()[:16]
        return cls(items, database, digest)

    def request(self) -> dict[str, Any]:
        return {
            "op": "schema",
            "name": self.key,
            "database": self.database,
            "tables": {t: [list(c) for c in cols] for t, cols in self.tables},
        }


@dataclass(frozen=True)
class KqlDiagnostic:
    """One problem Kusto.Language reported: code (KS...), severity, message, place."""

    code: str
    severity: str
    message: str
    start: int
    length: int

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> KqlDiagnostic:
        return cls(str(d.get("code") or ""), str(d.get("severity") or ""),
                   str(d.get("message") or ""), int(d.get("start") or 0),
                   int(d.get("length") or 0))  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity, "message": self.message,
                "start": self.start, "length": self.length}  # fmt: skip


@dataclass(frozen=True)
class KqlValidity:
    """Kusto.Language's verdict on one query.

    `syntax` holds the parser's diagnostics, `semantic` the analyzer's beyond them (checked
    against `schema_key`'s database, or against no database when None). A query is
    syntactically valid with no parser diagnostic and semantically valid with none at all
    of severity Error or Warning (NL2KQL counts every diagnostic Kusto.Language returns;
    it returns only those two).
    """

    syntax: tuple[KqlDiagnostic, ...]
    semantic: tuple[KqlDiagnostic, ...]
    schema_key: str | None = None
    version: str = ""

    @property
    def syntax_ok(self) -> bool:
        """The parser reported nothing."""
        return not self.syntax

    @property
    def semantic_ok(self) -> bool:
        """Valid against the schema: syntax ok and no analyzer error or warning."""
        return self.syntax_ok and not any(d.severity in _BLOCKING for d in self.semantic)

    def message(self) -> str:
        """The diagnostics on one line (empty when valid)."""
        return "; ".join(f"{d.code}: {d.message}" for d in (*self.syntax, *self.semantic))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for score details."""
        return {
            "syntax_ok": self.syntax_ok,
            "semantic_ok": self.semantic_ok,
            "syntax": [d.to_dict() for d in self.syntax],
            "semantic": [d.to_dict() for d in self.semantic],
            "schema": self.schema_key,
            "kusto_language": self.version,
        }


def find_package() -> Path | None:
    """The installed `@kusto/language-service-next` folder: `$QUERYEVAL_KUSTO_LANGUAGE`, else
    the one `make install` puts in the environment (`<sys.prefix>/kusto-language`)."""
    candidates = []
    env = os.environ.get("QUERYEVAL_KUSTO_LANGUAGE")
    if env:
        candidates.append(Path(env).expanduser())
    candidates.append(Path(sys.prefix) / "kusto-language")
    for base in candidates:
        for path in (base, base / "node_modules" / PACKAGE):
            if (path / "Kusto.Language.Bridge.min.js").is_file():
                return path
    return None


def install_hint() -> str:
    """How to install what the validator needs."""
    prefix = Path(sys.prefix) / "kusto-language"
    return (
        "KQL validity needs Node.js (18 or later) and Microsoft's Kusto.Language for "
        f"JavaScript: `npm install --prefix {prefix} {PACKAGE}@{PACKAGE_VERSION}` (`make "
        "install` does this when npm is present), or set QUERYEVAL_KUSTO_LANGUAGE to the "
        "package's folder and QUERYEVAL_NODE to the node executable"
    )


class KqlValidator:
    """Kusto.Language under one Node helper process, shared by threads (one request at a
    time), started on the first `check` and closed by `close`."""

    def __init__(self, *, node: str | None = None, package: Path | None = None,
                 timeout_s: float = 20.0, start_timeout_s: float = 60.0) -> None:  # fmt: skip
        self.node = node or os.environ.get("QUERYEVAL_NODE") or shutil.which("node")
        self.package = package or find_package()
        self.timeout_s = timeout_s
        self.start_timeout_s = start_timeout_s
        self.version = ""
        self._proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._schemas: set[str] = set()
        self._lock = threading.Lock()
        self._next_id = 0
        self._memo: dict[tuple[str | None, str], KqlValidity] = {}
        self._stderr: collections.deque[str] = collections.deque(maxlen=20)

    # -- the helper process ------------------------------------------------------------------

    def missing(self) -> str | None:
        """What is not installed, with how to install it; None when Node and the package
        were found (the helper may still fail to start)."""
        if not self.node or not (Path(self.node).is_file() or shutil.which(self.node)):
            return "Node.js not found. " + install_hint()
        if self.package is None:
            return f"{PACKAGE} not found. " + install_hint()
        return None

    def _start(self) -> None:
        missing = self.missing()
        if missing or self.node is None or self.package is None:
            raise KustoLanguageMissing(missing or "Kusto.Language is not installed")
        self._lines = queue.Queue()
        self._schemas = set()
        self._proc = subprocess.Popen(
            [self.node, str(_HELPER), str(self.package)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, encoding="utf-8", bufsize=1,
        )  # fmt: skip
        threading.Thread(
            target=self._read, args=(self._proc, self._lines), name="queryeval-kusto-language",
            daemon=True,
        ).start()  # fmt: skip
        self._stderr = collections.deque(maxlen=20)
        threading.Thread(
            target=self._read_errors, args=(self._proc, self._stderr),
            name="queryeval-kusto-language-stderr", daemon=True,
        ).start()  # fmt: skip
        reply = self._ask({"op": "hello"}, self.start_timeout_s)
        self.version = str(reply.get("version", ""))

    def _said(self) -> str:
        """What Node reported on stderr before it stopped (its error line first)."""
        lines = [x for x in self._stderr if x.strip()]
        errors = [x for x in lines if "Error" in x] or lines[-2:]
        return (": " + " | ".join(errors[:2])) if errors else ""

    @staticmethod
    def _read_errors(proc: subprocess.Popen[str], tail: collections.deque[str]) -> None:
        """Keep the last lines Node wrote to stderr (and never let the pipe fill up)."""
        assert proc.stderr is not None
        with contextlib.suppress(ValueError, OSError):  # closed by _stop
            for line in proc.stderr:
                tail.append(line.rstrip())

    @staticmethod
    def _read(proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
        assert proc.stdout is not None
        with contextlib.suppress(ValueError, OSError):  # closed by _stop
            for line in proc.stdout:
                lines.put(line)
        lines.put(None)

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(Exception):
            assert proc.stdin is not None
            proc.stdin.close()
        try:
            proc.wait(2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()

    def _ask(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        self._next_id += 1
        ident = self._next_id
        try:
            proc.stdin.write(json.dumps({**request, "id": ident}) + "\n")
            proc.stdin.flush()
        except OSError as exc:
            self._stop()
            raise KqlValidatorError(f"the Kusto.Language helper stopped: {exc}") from None
        while True:
            try:
                line = self._lines.get(timeout=timeout_s)
            except queue.Empty:
                self._stop()
                raise KqlValidatorTimeout(
                    f"Kusto.Language gave no verdict within {timeout_s:g}s"
                ) from None
            if line is None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(2)
                code = proc.poll()
                self._stop()
                raise KqlValidatorError(
                    f"the Kusto.Language helper exited (code {code}){self._said()}"
                )
            reply = json.loads(line)
            if reply.get("id") != ident:
                continue  # a late answer to a request that timed out
            if "error" in reply:
                raise KqlValidatorError(f"Kusto.Language failed: {reply['error']}")
            return dict(reply)

    # -- checks ------------------------------------------------------------------------------

    def check(self, query: str, schema: KqlSchema | None = None) -> KqlValidity:
        """Parse and analyze `query` (against `schema` when given). An empty query has a
        syntax error; KqlValidatorError when no verdict could be had."""
        if not query.strip():
            empty = KqlDiagnostic("empty", "Error", "the query is empty", 0, 0)
            return KqlValidity((empty,), (), schema.key if schema else None, self.version)
        key = (schema.key if schema is not None else None, query)
        with self._lock:
            known = self._memo.get(key)
            if known is not None:
                return known
            if self._proc is None or self._proc.poll() is not None:
                self._stop()
                self._start()
            if schema is not None and schema.key not in self._schemas:
                self._ask(schema.request(), self.start_timeout_s)
                self._schemas.add(schema.key)
            request: dict[str, Any] = {"op": "check", "query": query}
            if schema is not None:
                request["schema"] = schema.key
            reply = self._ask(request, self.timeout_s)
            syntax = tuple(KqlDiagnostic.from_json(d) for d in reply.get("syntax", []))
            seen = set(syntax)
            semantic = tuple(
                d for d in (KqlDiagnostic.from_json(x) for x in reply.get("all", []))
                if d not in seen
            )  # fmt: skip
            validity = KqlValidity(syntax, semantic, key[0], self.version)
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.pop(next(iter(self._memo)))
            self._memo[key] = validity
            return validity

    def close(self) -> None:
        """Stop the helper process (a later check starts a new one)."""
        with self._lock:
            self._stop()

    def __enter__(self) -> KqlValidator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- one validator per process, verdicts memoised ------------------------------------------------

_SHARED_LOCK = threading.Lock()
_SHARED: KqlValidator | None = None
MAX_QUERY_CHARS = 200_000  # longer generated "queries" are over a limit, never sent


def shared_validator() -> KqlValidator:
    """The process's validator: one Node helper, started by its first check, shared by the
    scorers, `validate` and the independent validity check, stopped at exit (or when its
    stdin closes with this process)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = KqlValidator()
            atexit.register(_SHARED.close)
        return _SHARED


def kql_validator_from_context(ctx: RunResources) -> KqlValidator:
    """The validator a run uses: the process's (`shared_validator`)."""
    del ctx  # one helper serves every run of the process
    return shared_validator()


def kql_schema_from_context(ctx: RunResources, database: str) -> KqlSchema:
    """The analyzer's view of a suite database: its engine's tables and column types."""
    from queryeval.engines._factory import engine_from_context

    def build() -> KqlSchema:
        engine = engine_from_context(ctx, database)
        return KqlSchema.from_tables(engine.schema().get("tables", {}), database)

    return ctx.resource(f"kql-validity:schema:{database}", build)


def over_limit(query: str) -> KqlValidity | None:
    """The verdict on a query too long to send (None when it is not)."""
    if len(query) <= MAX_QUERY_CHARS:
        return None
    limit = KqlDiagnostic("limit", "Error", f"the query is over {MAX_QUERY_CHARS:,} "
                          "characters and was not checked", 0, 0)  # fmt: skip
    return KqlValidity((limit,), ())


def kql_validity_in_context(ctx: RunResources, query: str, database: str | None) -> KqlValidity:
    """Kusto.Language's verdict on `query` against `database`'s schema (None: no database);
    KqlValidatorError when there is none to be had."""
    too_long = over_limit(query)
    if too_long is not None:
        return too_long
    schema = kql_schema_from_context(ctx, database) if database is not None else None
    return kql_validator_from_context(ctx).check(query, schema)


# -- the independent validity check ------------------------------------------------------------

_UNKNOWN_NAME = "does not refer to any known"
_UNREACHABLE = "does not refer to a reachable cluster"


def independent_verdict(
    query: str,
    tables: Mapping[str, Mapping[str, str]] | None,
    validator: KqlValidator | None = None,
) -> tuple[str, str | None, str]:
    """Whether `query` is valid KQL against `tables` ({table: {column: type}}), decided by
    Kusto.Language: ("valid", None, ""), ("invalid", "syntax" | "schema", why) or
    ("unknown", None, why) when it cannot tell (Node missing, the analyzer failed, a cluster
    it has no schema for).

    Unknown tables, columns and functions are `schema`; every other diagnostic (the parser's,
    type errors) is `syntax`. Without `tables` only the syntax is judged (a query naming
    anything is `unknown` then).
    """
    too_long = over_limit(query)
    if too_long is not None:
        return "invalid", "syntax", too_long.message()
    validator = validator or shared_validator()
    missing = validator.missing()
    if missing:
        return "unknown", None, missing
    schema = KqlSchema.from_tables(tables) if tables is not None else None
    try:
        validity = validator.check(query, schema)
    except KqlValidatorTimeout as exc:
        return "invalid", "syntax", str(exc)
    except KqlValidatorError as exc:
        return "unknown", None, str(exc)
    if validity.semantic_ok:
        return "valid", None, ""
    if not validity.syntax_ok:
        return "invalid", "syntax", validity.message()
    if schema is None:  # names cannot be checked without the database's schema
        return "unknown", None, f"no schema to check names against ({validity.message()})"
    blocking = [d for d in validity.semantic if d.severity in _BLOCKING]
    if all(_UNREACHABLE in d.message for d in blocking):
        return "unknown", None, validity.message()
    if any(_UNKNOWN_NAME in d.message for d in blocking):
        return "invalid", "schema", validity.message()
    return "invalid", "syntax", validity.message()


class KustoLanguageChecker:
    """The independent KQL validity checker (`queryeval.engines.ValidityChecker`): Kusto.Language
    against the engine's schema. Published under the entry-point group `queryeval.validity`
    as `kql` (`kql_validity_checker`), so it is loaded the first time KQL is checked."""

    name = "Kusto.Language"

    def __init__(self, validator: KqlValidator | None = None) -> None:
        self._validator = validator

    def check(
        self, query: str, *, schema: dict[str, Any] | None = None, dialect: str | None = None
    ) -> Any:
        """The verdict on `query` against `schema` (`{"tables": {table: {column: type}}}`)."""
        from queryeval.engines._validity import ValidityVerdict

        del dialect  # one KQL
        tables = schema.get("tables") if isinstance(schema, Mapping) else None
        validity, kind, message = independent_verdict(
            query, tables, self._validator or shared_validator()
        )
        return ValidityVerdict(validity, kind, message, self.name)  # type: ignore[arg-type]


def kql_validity_checker() -> KustoLanguageChecker:
    """The `queryeval.validity` entry point for KQL."""
    return KustoLanguageChecker()
