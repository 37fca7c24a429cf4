"""Is a gold query's result ordered? Found by parsing the query, never by substring.

Only ordering at the top level counts: an ORDER BY inside a subquery, a CTE or a window
does not order the result. SQL is parsed with sqlglot; KQL with duckdb-kql's parser when it
is installed and can read the query, else with a small tokenizer that splits the pipeline
at top-level pipes; Cypher with a small tokenizer (no maintained Cypher parser exists on
PyPI) that finds ORDER BY after the final top-level RETURN.

Sort keys are returned so ties can be told apart from order errors: an ``int`` is a result
column position (0-based), a ``str`` a column name, ``None`` a key that is not a plain
output column (an expression), which the comparator cannot use to find ties.
"""

from __future__ import annotations

from typing import Any

from queryeval.languages._order import OrderInfo, SortKey
from queryeval.languages.cypher import cypher_order
from queryeval.languages.kql import kql_order

__all__ = ["OrderInfo", "SortKey", "cypher_order", "gold_is_ordered", "kql_order", "sql_order"]

_SQL_LANGUAGES = {
    "sql",
    "sqlite",
    "duckdb",
    "postgres",
    "postgresql",
    "mysql",
    "tsql",
    "bigquery",
    "snowflake",
    "spark",
    "trino",
    "presto",
    "oracle",
    "redshift",
    "clickhouse",
    "databricks",
    "hive",
    "athena",
    "mssql",
}
_DIALECT_ALIASES = {"sql": None, "postgresql": "postgres", "mssql": "tsql"}


def gold_is_ordered(query: str, language: str = "sql", *, dialect: str | None = None) -> OrderInfo:
    """Parse ``query`` (SQL in any sqlglot dialect, KQL or Cypher) for a top-level ordering.

    Raises ``ValueError`` when the query cannot be parsed or the language is unknown.
    """
    lang = language.strip().lower()
    if lang in {"kql", "kusto"}:
        return kql_order(query)
    if lang in {"cypher", "opencypher", "gql"}:
        return cypher_order(query)
    if lang in _SQL_LANGUAGES or dialect is not None:
        read = dialect if dialect is not None else _DIALECT_ALIASES.get(lang, lang)
        return sql_order(query, read)
    raise ValueError(
        f"unknown query language {language!r}: expected sql (or a dialect), kql or cypher"
    )


# -- SQL ------------------------------------------------------------------------------------


def sql_order(query: str, dialect: str | None = None) -> OrderInfo:
    """Top-level ORDER BY of the last statement (a UNION's ORDER BY orders the union)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        statements = [s for s in sqlglot.parse(query, read=dialect) if s is not None]
    except SqlglotError as error:
        raise ValueError(f"cannot parse SQL: {error}") from error
    if not statements:
        raise ValueError("no SQL statement")
    tree: Any = statements[-1]
    while tree.args.get("order") is None and isinstance(tree, exp.Subquery | exp.Paren):
        tree = tree.this
    order = tree.args.get("order")
    if order is None:
        return OrderInfo(False)
    selects = list(tree.selects) if isinstance(tree, exp.Query) else []
    starred = any(
        isinstance(s, exp.Star) or (isinstance(s, exp.Column) and s.is_star) for s in selects
    )
    return OrderInfo(True, tuple(_sql_key(o.this, selects, starred) for o in order.expressions))


def _sql_key(key: Any, selects: list[Any], starred: bool) -> SortKey:
    from sqlglot import exp

    if isinstance(key, exp.Literal) and not key.is_string and key.name.isdigit():
        position = int(key.name) - 1
        return position if not starred and 0 <= position < len(selects) else None
    if isinstance(key, exp.Column) and not key.table:
        for i, projection in enumerate(selects):
            if projection.alias_or_name.lower() == key.name.lower() and isinstance(
                projection, exp.Alias
            ):
                return key.name if starred else i
    for i, projection in enumerate(selects):
        if projection.unalias() == key:
            return projection.alias_or_name if starred else i
    if isinstance(key, exp.Column):
        return key.name
    return None
