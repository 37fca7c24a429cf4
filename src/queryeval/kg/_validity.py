"""KG validity of a Cypher query (seed 003 after kg-axel): CyVer's syntax, schema and
properties validators, run over the neo4j driver of a Cypher engine.

CyVer was written for Neo4j and reads some problems from Neo4j's notifications. A server
without them (ArcadeDB over Bolt) still answers every query CyVer sends (EXPLAIN,
db.labels(), EXISTS subqueries), so its scores hold; what the notifications would have added
is completed here: a `$parameter` that is never provided fails the syntax check (Neo4j's
ParameterNotProvided) and unknown labels and relationship types are named from the schema
the engine reports (Neo4j's UnknownLabelWarning / UnknownRelationshipTypeWarning). Neo4j's
UnsatisfiableRelationshipTypeExpression has no stand-in and is not checked there.
"""

from __future__ import annotations

import concurrent.futures as cf
from dataclasses import dataclass, field
from typing import Any, Literal

from queryeval.cases import Finding
from queryeval.languages.cypher import referenced_names

CheckKind = Literal["syntax", "schema", "properties"]
NOT_CHECKED_WITHOUT_NOTIFICATIONS = ("Neo.ClientNotification.Statement."
                                     "UnsatisfiableRelationshipTypeExpression",)  # fmt: skip
_PARAMETER = "Neo.ClientNotification.Statement.ParameterNotProvided"
_UNKNOWN_LABEL = "Neo.ClientNotification.Statement.UnknownLabelWarning"
_UNKNOWN_TYPE = "Neo.ClientNotification.Statement.UnknownRelationshipTypeWarning"


@dataclass(frozen=True)
class Check:
    """One validator's verdict: a score in [0, 1] (None: not applicable, e.g. no property is
    read), the problems found, and what queryeval completed for a server without notifications."""

    kind: CheckKind
    score: float | None
    messages: tuple[dict[str, str], ...] = ()
    completed: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """Score 1, or not applicable."""
        return self.score is None or self.score >= 1.0

    def finding(self) -> Finding:
        """As an Attempt finding; a not-applicable check is recorded with score 1."""
        text = "; ".join(f"{m['code']}: {m['description']}" for m in self.messages)
        if self.score is None:
            return Finding(kind=self.kind, score=1.0, message="not applicable: no property is read")
        return Finding(kind=self.kind, score=float(self.score), message=text)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for score details."""
        return {
            "score": self.score,
            "passed": self.passed,
            "messages": [dict(m) for m in self.messages],
            "completed": list(self.completed),
        }


@dataclass(frozen=True)
class KGValidity:
    """The three checks of one query. KG valid = syntax and schema score 1, and properties
    score 1 or are not applicable (kg-axel's definition)."""

    syntax: Check
    schema: Check
    properties: Check
    server: str = ""
    not_checked: tuple[str, ...] = field(default=())

    @property
    def valid(self) -> bool:
        """KG validity."""
        return self.syntax.score == 1.0 and self.schema.score == 1.0 and self.properties.passed

    def findings(self) -> list[Finding]:
        """The three checks as Attempt findings."""
        return [self.syntax.finding(), self.schema.finding(), self.properties.finding()]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for score details."""
        return {
            "valid": self.valid,
            "syntax": self.syntax.to_dict(),
            "schema": self.schema.to_dict(),
            "properties": self.properties.to_dict(),
            "server": self.server,
            "not_checked": list(self.not_checked),
        }


class KGValidationError(Exception):
    """Validation could not give a verdict (the validators failed or timed out)."""


class KGValidator:
    """CyVer's three validators bound to one neo4j driver and database.

    `schema` is the engine's schema ({"labels": {...}, "relationship_types": {...}}), used
    to name unknown labels and types when the server sends no notifications.
    """

    def __init__(
        self,
        driver: Any,
        database: str | None = None,
        schema: dict[str, Any] | None = None,
        *,
        timeout_s: float = 30.0,
    ) -> None:
        from CyVer import PropertiesValidator, SchemaValidator, SyntaxValidator

        # CyVer reads summary.notifications, which neo4j 6 deprecates: a DeprecationWarning
        # from CyVer's code, which Python's default filters hide (no filter of ours: the
        # process's warnings are the application's; the tests ignore it in pyproject)
        self.driver = driver
        self.database = database
        self.timeout_s = timeout_s
        self.server = str(driver.get_server_info().agent)
        # Neo4j itself sends the notifications CyVer reads; "Neo4j/5 compatible (ArcadeDB)" not.
        self.notifications = self.server.startswith("Neo4j/") and "compatible" not in self.server
        self._labels = set((schema or {}).get("labels", {}))
        self._types = set((schema or {}).get("relationship_types", {}))
        self._syntax = SyntaxValidator(driver)
        self._schema = SchemaValidator(driver)
        self._properties = PropertiesValidator(driver)
        self._pool = cf.ThreadPoolExecutor(max_workers=2, thread_name_prefix="queryeval-kg")

    def validate(self, query: str) -> KGValidity:
        """The three checks of `query`; KGValidationError when they give no verdict in time."""
        future = self._pool.submit(self._validate, query)
        try:
            return future.result(timeout=self.timeout_s)
        except cf.TimeoutError:
            raise KGValidationError(
                f"KG validation gave no verdict within {self.timeout_s:g}s"
            ) from None

    def _validate(self, query: str) -> KGValidity:
        try:
            ok, syntax_meta = self._syntax.validate(query, database_name=self.database)
            schema_score, schema_meta = self._schema.validate(query, database_name=self.database)
            prop_score, prop_meta = self._properties.validate(query, database_name=self.database)
        except Exception as exc:  # CyVer's regexes or the server gave up on this query
            raise KGValidationError(f"CyVer failed: {type(exc).__name__}: {exc}") from exc
        syntax = Check("syntax", 1.0 if ok else 0.0, tuple(syntax_meta))
        schema = Check("schema", float(schema_score), tuple(schema_meta))
        properties = Check(
            "properties", None if prop_score is None else float(prop_score), tuple(prop_meta)
        )
        not_checked: tuple[str, ...] = ()
        if not self.notifications:
            syntax, schema = self._complete(query, syntax, schema)
            not_checked = NOT_CHECKED_WITHOUT_NOTIFICATIONS
        return KGValidity(syntax, schema, properties, self.server, not_checked)

    def _complete(self, query: str, syntax: Check, schema: Check) -> tuple[Check, Check]:
        """What Neo4j's notifications would have said, from the query and the schema."""
        names = referenced_names(query)
        params = sorted(names["parameters"])
        if params:
            message = {
                "code": _PARAMETER,
                "description": "The query refers to parameters that are not provided: "
                + ", ".join(f"${p}" for p in params),
            }
            syntax = Check("syntax", 0.0, (*syntax.messages, message), ("parameters",))
        else:
            syntax = Check("syntax", syntax.score, syntax.messages, ("parameters",))
        extra = []
        if self._labels or self._types:
            for label in sorted(names["labels"] - self._labels):
                text = f"The label is not in the database (the missing label name is: {label})"
                extra.append({"code": _UNKNOWN_LABEL, "description": text})
            for rel_type in sorted(names["types"] - self._types):
                text = f"The relationship type is not in the database (missing: {rel_type})"
                extra.append({"code": _UNKNOWN_TYPE, "description": text})
        known = {(m["code"], m["description"]) for m in schema.messages}
        new = [m for m in extra if (m["code"], m["description"]) not in known]
        messages = (*schema.messages, *new)
        return syntax, Check("schema", schema.score, messages, ("unknown label and type names",))

    def close(self) -> None:
        """Stop the worker threads (the driver belongs to the engine)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
