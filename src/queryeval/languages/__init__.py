"""What queryeval knows about each query language, in one module per language.

`sql`, `kql` and `cypher` each hold the language's names (and SQL's dialects), its read-only
check (`read_only_refusal`: None, or why the query may not run) and its top-level ordering
(`top_level_order`); `kql` and `cypher` also their tokens. Engines and metrics both read them
from here. Importing this package imports no parser: sqlglot and duckdb-kql load on first use.

Sort keys are returned so ties can be told apart from order errors: an ``int`` is a result
column position (0-based), a ``str`` a column name, ``None`` a key that is not a plain
output column (an expression), which the comparator cannot use to find ties.
"""

from __future__ import annotations

from queryeval.languages import cypher, kql, sql
from queryeval.languages._order import OrderInfo, SortKey

__all__ = [
    "OrderInfo",
    "SortKey",
    "cypher",
    "kql",
    "read_only_refusal",
    "sql",
    "top_level_order",
]


_HAND_LEXED = {"kql": kql, "cypher": cypher}  # the languages without a dialect


def _resolve(language: str, dialect: str | None) -> tuple[str, str | None]:
    """("sql" | "kql" | "cypher", the sqlglot dialect for SQL) for a language or dialect
    name; a ValueError for a name queryeval does not know."""
    lang = language.strip().lower()
    if lang in kql.NAMES:
        return "kql", None
    if lang in cypher.NAMES:
        return "cypher", None
    if lang in sql.DIALECTS or dialect is not None:
        return "sql", dialect if dialect is not None else sql.sqlglot_dialect(lang)
    raise ValueError(
        f"unknown query language {language!r}: expected sql (or a dialect), kql or cypher"
    )


def top_level_order(query: str, language: str = "sql", *, dialect: str | None = None) -> OrderInfo:
    """Whether ``query``'s result comes back in a defined order, and by which keys: SQL in any
    sqlglot dialect (``dialect`` overrides the one ``language`` names), KQL or Cypher.

    Raises ``ValueError`` when the query cannot be parsed or the language is unknown.

    >>> top_level_order("SELECT name, age FROM people ORDER BY age DESC")
    OrderInfo(ordered=True, keys=(1,))
    >>> top_level_order("T | sort by a | summarize count() by b", "kql")
    OrderInfo(ordered=False, keys=())
    >>> top_level_order("MATCH (m) WITH m ORDER BY m.year RETURN m.title", "cypher").ordered
    False
    """
    family, read = _resolve(language, dialect)
    if family == "sql":
        return sql.top_level_order(query, read)
    return _HAND_LEXED[family].top_level_order(query)


def read_only_refusal(
    query: str, language: str = "sql", *, dialect: str | None = None
) -> str | None:
    """Why ``query`` may not run in the sandbox (anything but one read-only query), or None:
    the parsing half of the sandbox, without a database. ``language`` as for
    `top_level_order`.

    >>> read_only_refusal("SELECT * FROM t", "duckdb") is None
    True
    >>> read_only_refusal("MATCH (n) DETACH DELETE n", "cypher")
    'DETACH clause: writes are refused'
    """
    family, read = _resolve(language, dialect)
    if family == "sql":
        return sql.read_only_refusal(query, read)
    return _HAND_LEXED[family].read_only_refusal(query)
