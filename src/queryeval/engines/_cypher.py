"""Cypher over Bolt with the official neo4j driver: an embedded ArcadeDB server or any
Neo4j (`bolt://`/`neo4j://` URL). Each query runs in a READ-mode transaction that is always
rolled back, with a server-side timeout; a worker thread bounds the wait, and past 1.4 x the
limit the connection (or the embedded server) is replaced so a hung query cannot block.

A query naming a label, relationship type or property key the graph does not have is the
query's `schema` failure before it runs, as an unknown table is in SQL: Cypher itself answers
such a query with no rows (Neo4j 5 only warns), so garbage such as `MATCH (n:NoSuchLabel)
RETURN n` would otherwise "execute". The names come from the graph's schema as the engine
reports it (`schema()`), the query's from `queryeval.languages.cypher.referenced_names`."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import threading
import time
from typing import TYPE_CHECKING, Any

from queryeval.cases import OutcomeKind
from queryeval.engines._base import (
    Engine,
    Limits,
    QueryTimeout,
    RawResult,
    collect_rows,
    describe_refusal,
)
from queryeval.engines._values import plain_value
from queryeval.languages import cypher
from queryeval.languages.cypher import referenced_names, referenced_properties

if TYPE_CHECKING:
    from queryeval.engines._arcadedb import ArcadeDBServer

BACKSTOP = 1.4  # x timeout: when the server-side timeout did not answer, cut the connection

_SYNTAX_CODES = ("Statement.SyntaxError", "Statement.SemanticError")
_SCHEMA_CODES = ("Procedure.ProcedureNotFound", "Schema.", "Statement.UnknownLabel")
_REFUSED_CODES = ("Security.Forbidden", "Statement.AccessMode", "Security.Unauthorized")
_TIMEOUT_CODES = ("TransactionTimedOut", "Transaction.LockClientStopped")
# the query's memory: Neo4j's memory pools, ArcadeDB's per-query heap budget, the JVM's heap
_LIMIT_CODES = (
    "MemoryPoolOutOfMemoryError",
    "OutOfMemoryError",
    "Statement.ExecutionFailed.Memory",
)
_LIMIT_MESSAGES = ("heap budget exceeded", "java heap space", "outofmemoryerror",
                   "memory pool", "gc overhead limit exceeded",
                   # ArcadeDB's caps on one query: a range's size, the rows a sort, a
                   # collect() or a cartesian product may hold in the heap
                   "querymaxrangesize", "querymaxheapelementsallowedperop",
                   "querymaxheapram")  # fmt: skip
# ArcadeDB refusing a query because the queries running beside it hold its heap budget, or
# its admission queue is full: a transient state of the server, retried once
_CONTENTION = ("queries running now already hold", "queryadmission")


class UnknownNames(Exception):
    """A query names a label, relationship type or property key the graph does not have."""


_KINDS = (("labels", "labels", "label"), ("types", "relationship_types", "relationship type"),
          ("properties", "property_keys", "property key"))  # fmt: skip


_NAME_KEYS = ("labels", "relationship_types", "property_keys")


def _known(schema: dict[str, Any], key: str) -> set[str]:
    if key == "property_keys" and key not in schema:  # a schema without the flat list
        owners = [
            *schema.get("labels", {}).values(),
            *schema.get("relationship_types", {}).values(),
        ]
        return {k for keys in owners for k in keys}
    return set(schema.get(key) or ())


def unknown_names(query: str, schema: dict[str, Any]) -> str | None:
    """What `query` names that the graph (its `schema()`) does not have, or None. Names are
    case-sensitive, as in Neo4j; a property key is unknown when no node or relationship
    of the graph has it (one that another label has is not flagged: reading it gives null).

    >>> schema = {"labels": {"Person": ["name"]}, "relationship_types": {"KNOWS": []}}
    >>> unknown_names("MATCH (p:Person)-[:KNOWS]->(q) RETURN q.name", schema) is None
    True
    >>> print(unknown_names("MATCH (p:person) RETURN p.age", schema))
    the graph has no label `person` (did you mean `Person`?) and no property key `age`
    """
    names = {**referenced_names(query), "properties": referenced_properties(query)}
    problems: list[str] = []
    for found, key, what in _KINDS:
        known = _known(schema, key)
        for name in sorted(names[found] - known):
            text = f"{what} `{name}`"
            close = [k for k in sorted(known) if k.lower() == name.lower()]
            if close:
                text += f" (did you mean `{close[0]}`?)"
            problems.append(text)
    if not problems:
        return None
    shown = problems[:5] + ([f"{len(problems) - 5} more"] if len(problems) > 5 else [])
    return "the graph has no " + " and no ".join(shown)


def classify_neo4j(exc: BaseException) -> tuple[OutcomeKind, str] | None:
    """neo4j driver errors as outcome kinds, by their status code."""
    import neo4j.exceptions as ne

    if not isinstance(exc, ne.Neo4jError | ne.DriverError):
        return None
    code = getattr(exc, "code", None) or ""
    message = getattr(exc, "message", None) or str(exc)
    if any(c in code for c in _TIMEOUT_CODES) or "command.timeout" in message:
        return "timeout", message
    lowered = message.lower()
    if any(m in lowered for m in _CONTENTION):  # other queries hold the budget: not this one's
        return "engine_error", message
    if any(c in code for c in _LIMIT_CODES) or any(m in lowered for m in _LIMIT_MESSAGES):
        return "resource_limit", message
    if isinstance(exc, ne.ServiceUnavailable | ne.SessionExpired | ne.IncompleteCommit):
        return "engine_error", message
    if any(c in code for c in _SYNTAX_CODES):
        return "syntax", message
    if any(c in code for c in _REFUSED_CODES):
        return "refused", describe_refusal(message)
    if any(c in code for c in _SCHEMA_CODES):
        return "schema", message
    if "read only" in message.lower() or "read-only" in message.lower():
        return "refused", describe_refusal(message)
    return "runtime", f"{code}: {message}" if code else message


def _contended(exc: BaseException) -> bool:
    return any(m in str(exc).lower() for m in _CONTENTION)


class CypherEngine(Engine):
    """Cypher on a graph reached over Bolt (embedded ArcadeDB or a Neo4j server)."""

    language = "cypher"
    in_process = False  # the server holds the query's memory

    def __init__(self, name: str, limits: Limits, identity: str, *, url: str | None = None,
                 auth: tuple[str, str] | None = None, database: str | None = None,
                 server: ArcadeDBServer | None = None) -> None:  # fmt: skip
        # `;names`: results kept by an older queryeval that ran unknown names are not reused
        super().__init__(name, limits, f"{identity};names")
        self.server = server
        self._url, self._auth = url, auth
        self.database = database
        self._lock = threading.Lock()
        self._pool = cf.ThreadPoolExecutor(max_workers=8, thread_name_prefix="queryeval-cypher")
        self._driver: Any = None
        self._connect()
        self._names: dict[str, Any] | None = None
        self._names_lock = threading.Lock()
        self.graph_names()  # outside any query's limit

    def _connect(self) -> None:
        import neo4j

        if self.server is not None:
            self.server.start()
            self._url = self.server.url
            self._auth = (self.server.user, self.server.password)
            self.database = self.server.database
        assert self._url is not None
        self._driver = neo4j.GraphDatabase.driver(
            self._url, auth=self._auth, connection_timeout=10.0
        )
        # The first queries of a cold JVM compile the parser and planner: do that now,
        # outside any query's time limit.
        with self._driver.session(database=self.database) as session:
            session.run("MATCH (n) RETURN count(n) AS warm").consume()
            session.run("MATCH (a)-[r]->(b) RETURN a, r, b LIMIT 1").consume()

    def _reconnect(self) -> None:
        """Drop every connection; restart the embedded server (a query would not stop)."""
        with self._lock:
            old = self._driver
            if self.server is not None:
                self.server.restart()
            with contextlib.suppress(Exception):  # the old sockets may already be dead
                old.close()
            self._connect()

    def refusal(self, query: str) -> str | None:
        reason = cypher.read_only_refusal(query)
        return describe_refusal(reason) if reason else None

    def _read_transaction(self, query: str, timeout_s: float) -> RawResult:
        import neo4j

        driver = self._driver
        with driver.session(database=self.database, default_access_mode=neo4j.READ_ACCESS) as s:
            tx = s.begin_transaction(timeout=timeout_s)
            try:
                result = tx.run(query)
                columns = list(result.keys())
                rows, truncated = collect_rows(
                    ([record.values()] for record in result), self.limits, plain_value
                )
            finally:
                tx.rollback()  # nothing a read query did is ever kept
        return RawResult(columns, rows, truncated)

    def _bounded(self, query: str) -> RawResult:
        if self.server is not None and not self.server.alive:
            self._reconnect()  # the server died (e.g. out of memory): bring it back
        future = self._pool.submit(self._read_transaction, query, self.limits.timeout_s)
        try:
            return future.result(timeout=self.limits.timeout_s * BACKSTOP)
        except cf.TimeoutError:
            self._reconnect()
            raise QueryTimeout(
                f"no answer within {BACKSTOP:g} x the {self.limits.timeout_s:g}s limit; "
                "connection reset"
            ) from None

    def _check_names(self, query: str) -> None:
        """Raise UnknownNames when `query` names what the graph does not have (unchecked
        while the graph's schema cannot be read: the query then runs as it is); a query the
        server cannot even plan (EXPLAIN) fails with its syntax error instead."""
        names = self.graph_names()
        if names is None:
            return
        problem = unknown_names(query, names)
        if problem is None:
            return
        try:  # a query that is no Cypher at all (prose with a colon) is a syntax error first
            self._bounded(f"EXPLAIN {query}")
        except Exception as exc:
            found = classify_neo4j(exc)
            if found is not None and found[0] == "syntax":
                raise
        raise UnknownNames(problem)

    def _run(self, query: str) -> RawResult:
        self._check_names(query)
        try:
            return self._bounded(query)
        except Exception as exc:
            if not _contended(exc):
                raise
        time.sleep(0.2)  # the heap other queries held is given back as they finish
        return self._bounded(query)

    def classify(self, exc: BaseException) -> tuple[OutcomeKind, str]:
        if isinstance(exc, UnknownNames):
            return "schema", str(exc)
        return classify_neo4j(exc) or ("engine_error", f"{type(exc).__name__}: {exc}")

    def explain(self, query: str) -> str:
        self._check_names(query)
        raw = self._bounded(f"EXPLAIN {query}")
        return "\n".join(str(r) for r in raw.rows)

    def schema(self) -> dict[str, Any]:
        """Labels with their property keys, relationship types with theirs, patterns, and
        every property key; the names the server lists (`db.labels()`,
        `db.relationshipTypes()`, `db.propertyKeys()`: Neo4j's token store) join those the
        data has, so a label without properties or nodes is still the graph's."""
        nodes = self._bounded(
            "MATCH (n) UNWIND labels(n) AS label UNWIND keys(n) AS key "
            "RETURN DISTINCT label, key ORDER BY label, key"
        )
        rels = self._bounded(
            "MATCH ()-[r]->() UNWIND keys(r) AS key "
            "RETURN DISTINCT type(r) AS type, key ORDER BY type, key"
        )
        patterns = self._bounded(
            "MATCH (a)-[r]->(b) RETURN DISTINCT labels(a)[0] AS start, type(r) AS type, "
            "labels(b)[0] AS end ORDER BY start, type, end"
        )
        bare = self._bounded("MATCH (n) UNWIND labels(n) AS label RETURN DISTINCT label")
        labels: dict[str, list[str]] = {}
        for label, key in nodes.rows:
            labels.setdefault(label, []).append(key)
        types: dict[str, list[str]] = {}
        for rel_type, key in rels.rows:
            types.setdefault(rel_type, []).append(key)
        for _, rel_type, _ in patterns.rows:
            types.setdefault(rel_type, [])
        listed = {name: self._listed(name) for name in ("labels", "relationshipTypes")}
        for label in sorted({row[0] for row in bare.rows} | listed["labels"]):
            labels.setdefault(label, [])
        for rel_type in sorted(listed["relationshipTypes"]):
            types.setdefault(rel_type, [])
        keys = {k for owned in (*labels.values(), *types.values()) for k in owned}
        return {
            "labels": dict(sorted(labels.items())),
            "relationship_types": dict(sorted(types.items())),
            "patterns": [list(p) for p in patterns.rows],
            "property_keys": sorted(keys | self._listed("propertyKeys")),
        }

    def graph_names(self) -> dict[str, Any] | None:
        """The graph's labels, relationship types and property keys, asked once: what the
        server lists (`db.labels()`, ...: cheap, Neo4j's token store), with `schema()` (a scan
        of the data) only where a list is missing, as ArcadeDB's `db.propertyKeys()` is; None
        while neither can be read (asked again at the next query)."""
        with self._names_lock:
            if self._names is not None:
                return self._names
            listed = [self._listed(p) for p in ("labels", "relationshipTypes", "propertyKeys")]
            names: dict[str, Any] = dict(zip(_NAME_KEYS, listed, strict=True))
            if not all(listed):
                try:
                    schema = self.cached_schema()
                except Exception:  # no names to check a query against
                    return None
                for key in _NAME_KEYS:
                    names[key] = set(names[key]) | _known(schema, key)
            self._names = names
            return names

    def _listed(self, procedure: str) -> set[str]:
        """The names `db.<procedure>()` lists (none where the server lacks it)."""
        try:
            raw = self._bounded(f"CALL db.{procedure}()")
        except Exception:  # not every Bolt server has the procedure
            return set()
        return {str(row[0]) for row in raw.rows if row and row[0] is not None}

    def close(self) -> None:
        try:
            if self._driver is not None:
                self._driver.close()
        finally:
            self._pool.shutdown(wait=False, cancel_futures=True)
            if self.server is not None:
                self.server.stop()
