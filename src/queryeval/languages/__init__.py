"""What queryeval knows about each query language, in one module per language.

`sql`, `kql` and `cypher` each hold the language's names (and SQL's dialects), its read-only
check (`read_only_refusal`: None, or why the query may not run) and its top-level ordering
(`top_level_order`); `kql` and `cypher` also their tokens. Engines and metrics both read them
from here. Importing this package imports no parser: sqlglot and duckdb-kql load on first use.

Sort keys are returned so ties can be told apart from order errors: an ``int`` is a result
column position (0-based), a ``str`` a column name, ``None`` a key that is not a plain
output column (an expression), which the comparator cannot use to find ties.
"""

# ruff: noqa: F401 - names imported here and left out of `__all__` are for queryeval's own
# packages (the private-modules contract has them import through here), not a public interface

from __future__ import annotations

from types import ModuleType

from queryeval._registry import Registry
from queryeval.languages import cypher, kql, sql
from queryeval.languages._order import OrderInfo, SortKey

# What users call; the package's other names are for queryeval's own packages.
__all__ = [
    "LANGUAGES",
    "OrderInfo",
    "cypher",
    "kql",
    "read_only_refusal",
    "sql",
    "top_level_order",
]

# The query languages: name -> the module that knows it. A language module has `NAMES` (the
# names that mean it), `read_only_refusal(query, dialect)` and `top_level_order(query,
# dialect)`; adding one is its module and one line here (or, outside queryeval, a module
# published under the `queryeval.languages` entry-point group).
LANGUAGES: Registry[ModuleType] = Registry(
    "query language",
    builtins={
        "sql": "queryeval.languages.sql",
        "kql": "queryeval.languages.kql",
        "cypher": "queryeval.languages.cypher",
    },
    group="queryeval.languages",
    key=str.lower,
)


def language_module(language: str, dialect: str | None = None) -> tuple[ModuleType, str | None]:
    """The module of a language (or dialect, or other name meaning it) and, for SQL, the
    sqlglot dialect (`dialect` overrides the one the name means; a name queryeval does not
    know, given with a dialect, is SQL). A ValueError names the known languages.

    >>> module, dialect = language_module("postgresql")
    >>> module.__name__, dialect
    ('queryeval.languages.sql', 'postgres')
    >>> language_module("kusto")[0].__name__
    'queryeval.languages.kql'
    """
    lang = language.strip().lower()
    for name in LANGUAGES.names():
        module = LANGUAGES.get(name)
        if lang == name or lang in getattr(module, "NAMES", ()):
            if module is sql:
                return module, dialect if dialect is not None else sql.sqlglot_dialect(lang)
            return module, None
    if dialect is not None:
        return sql, dialect
    known = ", ".join(LANGUAGES.names())
    raise ValueError(f"unknown query language {language!r}: expected {known} (or an SQL dialect)")


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
    module, read = language_module(language, dialect)
    result: OrderInfo = module.top_level_order(query, read)
    return result


def result_ordering(query: str, language: str = "sql") -> OrderInfo:
    """`top_level_order(query, language)` as the result comparator needs it: an SQL query
    whose text shows no ORDER BY (`sql.plainly_unordered`) is unordered without parsing,
    whether or not it parses (its rows are a multiset either way). Raises ``ValueError``
    as `top_level_order` does otherwise.

    >>> result_ordering("SELECT a FROM t", "duckdb"), result_ordering("T | sort by a", "kql")
    (OrderInfo(ordered=False, keys=()), OrderInfo(ordered=True, keys=('a',)))
    """
    if plainly_unordered(query, language):
        return OrderInfo(False)
    return top_level_order(query, language)


def plainly_unordered(query: str, language: str = "sql") -> bool:
    """True when ``query`` is SQL (``language`` names SQL or a dialect) whose text alone
    shows no top-level ordering (`sql.plainly_unordered`: no word ORDER), without parsing;
    False for an unknown language.

    >>> plainly_unordered("SELECT a FROM t"), plainly_unordered("T | take 3", "kql")
    (True, False)
    """
    if not sql.plainly_unordered(query):
        return False
    try:
        return language_module(language)[0] is sql
    except ValueError:  # an unknown language: `top_level_order` says so
        return False


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
    module, read = language_module(language, dialect)
    refusal: str | None = module.read_only_refusal(query, read)
    return refusal
