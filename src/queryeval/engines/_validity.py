"""Independent validity: is a query valid in its language, whatever the embedded engine can
run? Consulted when an engine answers `unsupported` or breaks (`engine_error`), and for the
kinds an emulating engine is not the authority on (duckdb-kql's `syntax`).

A checker is registered per language. It answers `valid` (the query is valid: the engine's
gap is the evaluator's trouble and the case is unscored), `invalid` (the system's fault, with
the kind: `syntax` or `schema`), or `unknown` (it cannot tell; the case then fails and is
reported apart as "engine could not run"). Without a checker the answer is `unknown`.

    from queryeval.engines import ValidityVerdict, register_validity_checker

    class KustoLanguage:
        name = "Kusto.Language"
        def check(self, query, *, schema=None, dialect=None):
            ...  # parse and bind against `schema` ({"tables": {table: {column: type}}})
            return ValidityVerdict("invalid", kind="schema", message="unknown function 'f'")

    register_validity_checker("kql", KustoLanguage())

Checkers may also be published by a package under the entry-point group
`queryeval.validity` (name = the language, value = a factory returning the checker); they
are loaded the first time that language is checked. KQL's (Kusto.Language) is built in.

SQL has no checker on purpose: sqlglot parses leniently (it accepts queries no engine
would run and its dialects lag behind the engines), so neither a successful nor a failed
parse establishes validity; for SQL the database engine is the authority, and a construct it
cannot run (`NotImplementedException`) is a failure reported apart. Cypher likewise: no
maintained Cypher parser is on PyPI.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from queryeval._registry import Registry

Validity = Literal["valid", "invalid", "unknown"]
ENTRY_POINT_GROUP = "queryeval.validity"


@dataclass(frozen=True)
class ValidityVerdict:
    """A checker's answer; `kind` (`syntax` / `schema`) says what is wrong with an invalid
    query."""

    validity: Validity
    kind: Literal["syntax", "schema"] | None = None
    message: str = ""
    checker: str = ""


class ValidityChecker(Protocol):
    """Checks queries of one language without running them."""

    name: str

    def check(
        self, query: str, *, schema: dict[str, Any] | None = None, dialect: str | None = None
    ) -> ValidityVerdict:
        """Whether `query` is valid (against `schema`, the engine's, when given)."""
        ...


def _checker(language: str, loaded: Any) -> ValidityChecker:
    """What a target or entry point loads: the checker, or a factory returning it."""
    return loaded() if callable(loaded) and not hasattr(loaded, "check") else loaded


# Built-in checkers: language -> "module:factory", imported the first time it is checked.
_BUILTIN = {"kql": "queryeval.engines._kusto_language:kql_validity_checker"}
CHECKERS: Registry[ValidityChecker] = Registry(
    "validity checker", builtins=_BUILTIN, group=ENTRY_POINT_GROUP, adapt=_checker, key=str.lower
)


def register_validity_checker(language: str, checker: ValidityChecker | None) -> None:
    """Use `checker` for `language` from now on; None removes the registration (the
    built-in and the entry-point group are looked at again on the next check)."""
    if checker is None:
        CHECKERS.unregister(language)
    else:
        CHECKERS.register(language, checker)


def validity_checker(language: str) -> ValidityChecker | None:
    """The checker of `language`: registered, else built in, else published under the
    entry-point group `queryeval.validity`, else None.

    >>> validity_checker("kql").name, validity_checker("sql")
    ('Kusto.Language', None)
    """
    try:
        return CHECKERS.get(language)
    except KeyError:
        return None


def check_validity(
    language: str,
    query: str,
    *,
    schema: dict[str, Any] | None = None,
    dialect: str | None = None,
) -> ValidityVerdict:
    """The independent verdict on `query`; `unknown` without a checker or when the checker
    itself fails (its failure is not the system's fault, nor evidence of validity).

    >>> check_validity("sql", "SELECT 1").validity
    'unknown'
    """
    checker = validity_checker(language)
    if checker is None:
        return ValidityVerdict("unknown", message=f"no independent {language} validity checker")
    try:
        verdict = checker.check(query, schema=schema, dialect=dialect)
    except Exception as exc:  # a checker's bug must not decide a score
        return ValidityVerdict(
            "unknown", message=f"{checker.name} failed: {type(exc).__name__}: {exc}"
        )
    if verdict.validity == "invalid" and verdict.kind is None:
        verdict = ValidityVerdict("invalid", "syntax", verdict.message, verdict.checker)
    return verdict
