"""Offline KQL validity with Microsoft's own parser and analyzer, Kusto.Language.

Kusto.Language is a .NET library; Microsoft publishes it translated to JavaScript as the npm
package `@kusto/language-service-next`. No Python package parses or analyzes KQL the way
Kusto does, so queryeval runs it under Node: one long-lived helper process per validator
(`kusto_language.js`, JSON lines over stdin/stdout), started on the first check, never one
process per query. A run that uses it starts the helper in the background (`warm`) before
the first check; the start (loading a 31 MB bundle) and each schema have a generous deadline
of their own, never counted against a query. A check is limited by the helper's own CPU
time for it (`/proc/<pid>/stat`), not the wall clock: on a loaded machine a check waits
(up to a wall-clock cap) rather than being blamed for the evaluator's slowness. Only a query
that kept Kusto.Language busy past its CPU limit is blamed (`KqlValidatorTimeout`; the
helper, busy with it, is replaced); past the wall-clock cap with less CPU spent there is no
verdict (`KqlValidatorError`, unscored) and the helper is kept, its late answer dropped.

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
import time
import weakref
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
    """The validator gave no verdict (helper missing, crashed, slow to start or past the
    wall-clock cap on a slow machine): the evaluator's trouble, never the query's."""


class KqlValidatorTimeout(KqlValidatorError):
    """The query kept Kusto.Language busy past the limit on its own CPU time (a limit the
    query broke); never raised for a slow start or a loaded machine."""


WALL_FACTOR = 10.0  # a request waits up to this many times its CPU limit of wall clock
_MAX_OWED = 3  # requests given up on and still owed: past this the helper is replaced
_POLL_S = 0.05  # how often a request past its limit looks at the helper's CPU time


def process_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system, all threads) process `pid` has used, from
    `/proc/<pid>/stat`; None where that cannot be read (no /proc, the process is gone).

    >>> process_cpu_s(os.getpid()) is None or process_cpu_s(os.getpid()) >= 0
    True
    """
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
        fields = data[data.rindex(b")") + 2 :].split()  # after "pid (comm) "
        ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
        return ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class _Request:
    """A request the helper was sent: its CPU limit and its clock (started when the helper
    can begin it: after every earlier request it still owes an answer)."""

    ident: int
    op: str
    limit_s: float
    sent: float = field(default_factory=time.monotonic)
    wall_start: float = 0.0
    cpu_start: float | None = None
    begun: bool = False


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
    time), started by `warm` (in the background) or the first `check`, closed by `close`.

    `timeout_s`: the CPU seconds of the helper a check may take; `start_timeout_s`: those
    of its start and of loading a schema (never counted against a query). A check waits at
    most `max_wall_s` of wall clock, a start or schema `start_wall_s` (defaults:
    `WALL_FACTOR` x their CPU limits)."""

    def __init__(self, *, node: str | None = None, package: Path | None = None,
                 timeout_s: float = 20.0, start_timeout_s: float = 60.0,
                 max_wall_s: float | None = None, start_wall_s: float | None = None
                 ) -> None:  # fmt: skip
        self.node = node or os.environ.get("QUERYEVAL_NODE") or shutil.which("node")
        self.package = package or find_package()
        self.timeout_s = timeout_s
        self.start_timeout_s = start_timeout_s
        self.max_wall_s = max_wall_s
        self.start_wall_s = start_wall_s
        self.version = ""
        self.starts = 0  # helper processes started (a restart loop shows here)
        self._proc: subprocess.Popen[str] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._schemas: set[str] = set()
        self._lock = threading.Lock()
        self._next_id = 0
        self._owed: dict[int, _Request] = {}  # requests given up on, still to be answered
        self._memo: dict[tuple[str | None, str], KqlValidity] = {}
        self._stderr: collections.deque[str] = collections.deque(maxlen=20)
        self._warming: threading.Thread | None = None
        self._closes = 0  # a start asked for before the last `close` is not made

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
        self._owed = {}
        self.version = ""
        self.starts += 1
        self._proc = subprocess.Popen(
            [self.node, str(_HELPER), str(self.package)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, encoding="utf-8", bufsize=1,
        )  # fmt: skip
        # the helper ended when this validator is dropped, or at exit (detached by _stop)
        self._finalizer = weakref.finalize(self, _end_helper, self._proc)
        threading.Thread(
            target=self._read, args=(self._proc, self._lines), name="queryeval-kusto-language",
            daemon=True,
        ).start()  # fmt: skip
        self._stderr = collections.deque(maxlen=20)
        threading.Thread(
            target=self._read_errors, args=(self._proc, self._stderr),
            name="queryeval-kusto-language-stderr", daemon=True,
        ).start()  # fmt: skip
        reply = self._ask({"op": "hello"}, self.start_timeout_s, self.start_wall_s, blame=False)
        self.version = str(reply.get("version", ""))

    def _running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def warm(self) -> None:
        """Start the helper in a background thread now, so that its start (seconds of CPU,
        much more wall clock on a loaded machine) is over before the first check; a no-op
        when it runs, is starting, or cannot be started (the first check then says why)."""
        if self.missing() is not None or self._running():
            return
        warming = self._warming
        if warming is not None and warming.is_alive():
            return
        self._warming = threading.Thread(
            target=self._warm, args=(self._closes,), name="queryeval-kusto-language-start",
            daemon=True,
        )  # fmt: skip
        self._warming.start()

    def _warm(self, closes: int) -> None:
        with self._lock:
            if self._running() or closes != self._closes:  # running, or closed since
                return
            self._stop()
            with contextlib.suppress(KqlValidatorError):  # the first check tries again
                self._start()

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
        self._owed = {}
        if proc is None:
            return
        if self._finalizer is not None:
            self._finalizer.detach()
        _end_helper(proc)

    def _cpu(self) -> float | None:
        return process_cpu_s(self._proc.pid) if self._proc is not None else None

    def _clock(self, pending: _Request) -> None:
        """Start `pending`'s clock: now, the helper being free to begin it."""
        pending.wall_start = time.monotonic()
        pending.cpu_start = self._cpu()
        pending.begun = True

    def _ask(self, request: dict[str, Any], limit_s: float, wall_s: float | None, *,
             blame: bool = True) -> dict[str, Any]:  # fmt: skip
        """Send `request` and wait for its answer. `limit_s` bounds the helper's own CPU
        time for it: past it the helper is busy with this request and is stopped
        (`KqlValidatorTimeout` when `blame`, the query's fault; else KqlValidatorError).
        Past `wall_s` of wall clock (None: `WALL_FACTOR` x `limit_s`) with less CPU spent,
        no verdict (KqlValidatorError) and the helper is kept; its late answer is dropped
        when it comes."""
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        self._next_id += 1
        pending = _Request(self._next_id, str(request.get("op")), limit_s)
        try:
            proc.stdin.write(json.dumps({**request, "id": pending.ident}) + "\n")
            proc.stdin.flush()
        except OSError as exc:
            self._stop()
            raise KqlValidatorError(f"the Kusto.Language helper stopped: {exc}") from None
        if not self._owed:
            self._clock(pending)
        cap = wall_s if wall_s is not None else WALL_FACTOR * limit_s
        while True:
            waited = time.monotonic() - pending.wall_start if not self._owed else 0.0
            try:
                line = self._lines.get(timeout=max(_POLL_S, min(limit_s, cap) - waited))
            except queue.Empty:
                self._past_limit(pending, cap, blame)
                continue
            if line is None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(2)
                code = proc.poll()
                self._stop()
                raise KqlValidatorError(
                    f"the Kusto.Language helper exited (code {code}){self._said()}"
                )
            reply = json.loads(line)
            ident = reply.get("id")
            if ident != pending.ident:
                late = self._owed.pop(ident, None)  # a request given up on: dropped
                if late is None:
                    continue
                if late.op == "hello" and "version" in reply:
                    self.version = str(reply["version"])
                following = min(self._owed.values(), key=lambda r: r.ident, default=pending)
                if not following.begun:
                    self._clock(following)  # the helper begins the next request now
                continue
            if "error" in reply:
                raise KqlValidatorError(f"Kusto.Language failed: {reply['error']}")
            return dict(reply)

    def _past_limit(self, pending: _Request, cap: float, blame: bool) -> None:
        """The wait for `pending` went on past its CPU limit in wall-clock time: raise when
        the helper's own CPU for it is past the limit, or the wall-clock cap has come;
        return to wait on (a loaded machine, or earlier requests still being answered)."""
        what = "the query" if blame else f"its {pending.op}"
        if self._owed:  # still busy with requests given up on: this one has not begun
            self._owed_past_limit()
            if time.monotonic() - pending.sent < cap:
                return
            self._give_up(pending)
            raise KqlValidatorError(
                f"Kusto.Language gave no verdict on {what}: its helper was still answering "
                "earlier requests (a slow machine; not the query's fault)"
            )
        waited = time.monotonic() - pending.wall_start
        used = self._used(pending)
        if used is not None and used >= pending.limit_s:
            self._stop()  # busy with this request: only stopping the helper ends it
            self.warm()  # a fresh one starts now, its start counted against no query
            message = (f"Kusto.Language spent {used:.2f}s of its own CPU time on {what}, "
                       f"past the {pending.limit_s:g}s limit")  # fmt: skip
            if blame:
                raise KqlValidatorTimeout(message)
            raise KqlValidatorError(message)
        if waited < cap:
            return
        self._give_up(pending)
        spent = "an unknown amount" if used is None else f"only {used:.2f}s"
        raise KqlValidatorError(
            f"Kusto.Language gave no verdict on {what} within {waited:.0f}s of wall clock, "
            f"having spent {spent} of CPU time on it (limit {pending.limit_s:g}s): the "
            "machine is too slow, not the query's fault"
        )

    def _used(self, pending: _Request) -> float | None:
        """The helper's CPU seconds since `pending` began (None: not known)."""
        now = self._cpu()
        if now is None or pending.cpu_start is None:
            return None
        return now - pending.cpu_start

    def _owed_past_limit(self) -> None:
        """Replace the helper when the request it is busy with (given up on earlier) has
        taken more than its own CPU limit: it would hold every later request."""
        current = min(self._owed.values(), key=lambda r: r.ident)
        used = self._used(current)
        if current.begun and used is not None and used >= current.limit_s:
            self._stop()
            self.warm()
            raise KqlValidatorError(
                "Kusto.Language gave no verdict: its helper was busy past the limit with an "
                "earlier request and was replaced (not this query's fault)"
            )

    def _give_up(self, pending: _Request) -> None:
        """No verdict on `pending`: its answer is dropped when it comes. The helper is kept
        (a slow machine is no reason to pay a cold start again), unless it owes too many."""
        self._owed[pending.ident] = pending
        if len(self._owed) > _MAX_OWED:
            self._stop()
            self.warm()

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
            if not self._running():
                self._stop()
                self._start()
            if schema is not None and schema.key not in self._schemas:
                self._ask(schema.request(), self.start_timeout_s, self.start_wall_s, blame=False)
                self._schemas.add(schema.key)
            request: dict[str, Any] = {"op": "check", "query": query}
            if schema is not None:
                request["schema"] = schema.key
            reply = self._ask(request, self.timeout_s, self.max_wall_s)
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
            self._closes += 1
            self._stop()

    def __enter__(self) -> KqlValidator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _end_helper(proc: subprocess.Popen[str]) -> None:
    """End a helper process: its stdin closed (it exits), else killed; its pipes closed."""
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


# -- one validator per process, verdicts memoised ------------------------------------------------

_SHARED_LOCK = threading.Lock()
_SHARED: KqlValidator | None = None
MAX_QUERY_CHARS = 200_000  # longer generated "queries" are over a limit, never sent


def shared_validator() -> KqlValidator:
    """The process's validator: one Node helper, started by its first check, shared by the
    scorers, `validate` and the independent validity check, stopped at exit by its
    finalizer (or when its stdin closes with this process)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = KqlValidator()  # its helper is ended at exit by its finalizer
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
    anything is `unknown` then). No verdict (a slow start, a loaded machine) is `unknown`;
    only a query that kept Kusto.Language busy past its CPU limit is `invalid` for it.
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
    except KqlValidatorTimeout as exc:  # the query's own CPU cost, never the machine's
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
