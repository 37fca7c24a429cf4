"""SQL: the names and dialects queryeval knows, the read-only check, and the top-level
ordering of a query, all through sqlglot (imported on first use). Each distinct query is
parsed once (`parsed`, a bounded LRU); the read-only check first tries the tokens alone.

Only ordering at the top level counts: an ORDER BY inside a subquery, a CTE or a window
does not order the result; a UNION's trailing ORDER BY orders the union.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import threading
from collections.abc import Iterator
from typing import Any

from queryeval.languages._order import OrderInfo, SortKey

__all__ = [
    "DIALECTS",
    "NAMES",
    "PARSE_CACHE_SIZE",
    "parsed",
    "plainly_unordered",
    "read_only_refusal",
    "sqlglot_dialect",
    "top_level_order",
]

DIALECTS: dict[str, str | None] = {
    "sql": None,  # sqlglot's generic dialect
    "sqlite": "sqlite",
    "duckdb": "duckdb",
    "postgres": "postgres",
    "postgresql": "postgres",
    "mysql": "mysql",
    "mariadb": "mysql",
    "tsql": "tsql",
    "mssql": "tsql",
    "bigquery": "bigquery",
    "snowflake": "snowflake",
    "spark": "spark",
    "trino": "trino",
    "presto": "presto",
    "oracle": "oracle",
    "redshift": "redshift",
    "clickhouse": "clickhouse",
    "databricks": "databricks",
    "hive": "hive",
    "athena": "athena",
}
"""The names that mean SQL (languages, dialects, SQLAlchemy backends) -> sqlglot dialect."""


NAMES = frozenset(DIALECTS)
"""The language names that mean SQL (its dialects; any other name given with a dialect too)."""


def sqlglot_dialect(name: str) -> str | None:
    """The sqlglot dialect a language, dialect or SQLAlchemy backend name means (a name
    queryeval does not know is passed on as it is).

    >>> sqlglot_dialect("postgresql"), sqlglot_dialect("sql"), sqlglot_dialect("exasol")
    ('postgres', None, 'exasol')
    """
    return DIALECTS.get(name, name)


# --- parsing, once per distinct (query, dialect) --------------------------------------------

PARSE_CACHE_SIZE = 256
"""How many parsed queries are kept: a case's gold is read by the sandbox and by every
comparing scorer in turn, so a small LRU is enough to parse each query once."""


class _BelowError(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR


_BELOW_ERROR = _BelowError()
_quiet_lock = threading.Lock()
_quiet_depth = 0


@contextlib.contextmanager
def _no_sqlglot_warnings() -> Iterator[None]:
    """sqlglot's parser warns on the "sqlglot" logger ("contains unsupported syntax") for
    what queryeval judges itself (a Command is no read-only query); those warnings are
    dropped while queryeval parses, by a filter on that logger held only while some thread
    parses (counted), so the logger's level and filters are the application's after."""
    global _quiet_depth
    log = logging.getLogger("sqlglot")
    with _quiet_lock:
        _quiet_depth += 1
        if _quiet_depth == 1:
            log.addFilter(_BELOW_ERROR)
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet_depth -= 1
            if _quiet_depth == 0:
                log.removeFilter(_BELOW_ERROR)


@functools.lru_cache(maxsize=PARSE_CACHE_SIZE)
def parsed(query: str, dialect: str | None) -> tuple[Any, ...] | str:
    """The statements sqlglot reads in `query` (None statements dropped), or the message
    of the SqlglotError it raised; kept in a bounded LRU. The trees are shared: do not
    modify them.

    >>> parsed("SELECT 1; SELECT 2", "duckdb")[1].sql()
    'SELECT 2'
    >>> [s.sql() for s in parsed("SELECT 1; -- the end", "sqlite")]
    ['SELECT 1']
    """
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        # a comment after the last semicolon is no statement (sqlglot makes it a Semicolon
        # one; SQLite and DuckDB run the query)
        with _no_sqlglot_warnings():
            statements = sqlglot.parse(query, read=dialect)
        return tuple(s for s in statements if s is not None and not isinstance(s, exp.Semicolon))
    except SqlglotError as error:
        return str(error)  # not the exception: its traceback would keep the frames alive


# --- the read-only check ------------------------------------------------------------------------

_WRITE_TOKENS = {
    "INSERT", "UPDATE", "DELETE", "MERGE", "CREATE", "DROP", "ALTER", "TRUNCATE", "COPY",
    "ATTACH", "DETACH", "REPLACE", "GRANT", "REVOKE", "VACUUM", "INSTALL", "LOAD", "SET",
    "PRAGMA", "CALL", "EXECUTE", "EXPORT", "IMPORT", "CHECKPOINT", "COMMIT", "BEGIN", "USE",
}  # fmt: skip
_PLAIN_REFUSED = _WRITE_TOKENS | {"INTO"}


def read_only_refusal(query: str, dialect: str | None) -> str | None:
    """Refuse anything but one read-only query (SELECT/UNION/... with no write inside);
    None when the query may run.

    >>> read_only_refusal("SELECT * FROM t", "duckdb") is None
    True
    >>> read_only_refusal("SELECT 1; DROP TABLE t", "duckdb")
    '2 statements: only one read-only query may run at a time'
    """
    if _plainly_read_only(query, dialect):
        return None
    from sqlglot import exp

    statements = parsed(query, dialect)
    if isinstance(statements, str):
        # sqlglot cannot read every dialect's every corner; then look at the tokens, and
        # let the read-only engine (the other half of the sandbox) judge the rest.
        return _token_refusal(query, dialect)
    if not statements:
        return "empty query"
    if len(statements) > 1:
        return f"{len(statements)} statements: only one read-only query may run at a time"
    root = statements[0]
    if not isinstance(root, exp.Query):
        keyword = _statement_keyword(query, dialect) or root.key.upper()
        if keyword not in _WRITE_TOKENS and isinstance(root, (exp.Condition, exp.Alias)):
            shown = " ".join(query.split())
            shown = shown if len(shown) <= 40 else shown[:39] + "…"
            return f"not a query: {shown!r} is an expression, not a SQL statement"
        return f"not a read-only query but {_article(keyword)} {keyword} statement"
    writes = (
        exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter,
        exp.Copy, exp.Command, exp.TruncateTable, exp.Attach, exp.Detach, exp.Into,
    )  # fmt: skip
    for node in root.walk():
        if isinstance(node, writes):
            return f"{node.key.upper()} inside the query: writes are refused"
    return None


def _statement_keyword(query: str, dialect: str | None) -> str | None:
    """The keyword the statement starts with, as the user wrote it (upper case): after a
    WITH clause, the first statement keyword outside its parentheses; None when the
    query cannot be tokenized.

    >>> _statement_keyword("/* x */ checkpoint", "duckdb")
    'CHECKPOINT'
    >>> _statement_keyword("WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a", "duckdb")
    'INSERT'
    """
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import SqlglotError

    try:
        tokens = Dialect.get_or_raise(dialect).tokenize(query)
    except SqlglotError:
        return None
    words = [t for t in tokens if t.token_type.name not in {"L_PAREN", "R_PAREN"}]
    if not words:
        return None
    first = words[0].text.upper()
    if first != "WITH":
        return first
    depth = 0
    for token in tokens:
        kind = token.token_type.name
        depth += (kind == "L_PAREN") - (kind == "R_PAREN")
        if depth == 0 and token.text.upper() in _WRITE_TOKENS | {"SELECT"}:
            return token.text.upper()
    return first


def _article(word: str) -> str:
    """`a` or `an` before a keyword read as a word (an INSERT, an UPDATE, a USE).

    >>> [f"{_article(w)} {w}" for w in ("INSERT", "UPDATE", "USE", "CHECKPOINT")]
    ['an INSERT', 'an UPDATE', 'a USE', 'a CHECKPOINT']
    """
    upper = word.upper()
    if upper.startswith(("USE", "UNI", "USI")):  # a "you" sound
        return "a"
    return "an" if upper[:1] in set("AEIOU") else "a"


_PLAIN_MAX_DEPTH = 32  # deeper nesting is left to the parse (it may exceed its stack)
_PLAIN_START = {"SELECT", "WITH"}
_REFUSED = "|".join(sorted(_PLAIN_REFUSED))
# a refused word as a whole word, or inside a word that starts with a digit (a number's
# scan may end inside it); quoted names, strings and comments included
_REFUSED_TEXT = re.compile(
    rf"(?<![A-Za-z0-9_])(?:(?:{_REFUSED})(?![A-Za-z0-9_])|[0-9][A-Za-z0-9_]*?(?:{_REFUSED}))",
    re.IGNORECASE,
)
_PLAIN_HEAD = re.compile(r"[ \t\r\n]*(?:SELECT|WITH)[ \t\r\n(*]", re.IGNORECASE)


def _plainly_read_only(query: str, dialect: str | None) -> bool:
    """True when the text or else the tokens alone show what the parse would find (see
    `_plain_text`, `_plain_tokens`); anything else is parsed."""
    return _plain_text(query) or _plain_tokens(query, dialect)


def _plain_text(query: str) -> bool:
    """True when the text alone shows what `_plain_tokens` finds, without tokenizing (a
    regular expression: a few microseconds, where the tokens take tens): ASCII without a
    backslash (no escape can spell a word), starting with SELECT or WITH, at most one `;`
    with only blanks after it, at most `_PLAIN_MAX_DEPTH` `(`, and no write keyword (nor
    INTO) anywhere, not even in a string or a comment. Stricter than the tokens: it never
    clears what they would not (tests/test_engines_shared_work.py checks it in every
    dialect).

    >>> _plain_text("SELECT a FROM t WHERE b = 'x' ORDER BY 1;"), _plain_text("SELECT 'drop'")
    (True, False)
    """
    if not query.isascii() or "\\" in query or query.count("(") > _PLAIN_MAX_DEPTH:
        return False
    semicolon = query.find(";")
    if semicolon >= 0 and query[semicolon + 1 :].strip(" \t\r\n"):
        return False
    return _PLAIN_HEAD.match(query) is not None and _REFUSED_TEXT.search(query) is None


def _plain_tokens(query: str, dialect: str | None) -> bool:
    """True when the tokens alone show what the parse would find: one statement starting
    with SELECT or WITH, no write keyword (nor INTO) outside string literals, no `;` but a
    last one, shallow nesting. Tokenizing costs a fraction of parsing."""
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import SqlglotError

    try:
        tokens = Dialect.get_or_raise(dialect).tokenize(query)
    except SqlglotError:
        return False
    if not tokens or tokens[0].token_type.name not in _PLAIN_START:
        return False
    depth = 0
    for i, token in enumerate(tokens):
        kind = token.token_type.name
        if kind == "L_PAREN":
            depth += 1
            if depth > _PLAIN_MAX_DEPTH:
                return False
        elif kind == "R_PAREN":
            depth -= 1
        elif kind == "SEMICOLON":
            if i < len(tokens) - 1:
                return False
        elif kind != "STRING" and token.text.upper() in _PLAIN_REFUSED:
            return False
    return True


def _token_refusal(query: str, dialect: str | None) -> str | None:
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import SqlglotError

    try:
        tokens = Dialect.get_or_raise(dialect).tokenize(query)
    except SqlglotError:
        return None  # not even tokenizable: the engine will report the syntax error
    words = {t.text.upper() for t in tokens if t.token_type.name not in {"STRING", "VAR"}}
    found = sorted(words & _WRITE_TOKENS)
    if found:
        return f"statement keyword(s) {', '.join(found)} found: writes are refused"
    if any(t.token_type.name == "SEMICOLON" for t in tokens[:-1]):
        return "several statements: only one read-only query may run at a time"
    return None


# --- top-level ordering -----------------------------------------------------------------------

# the word ORDER standing alone, or inside a word that starts with a digit (a number's scan
# may end inside it); quoted names, strings and comments included
_ORDER_TEXT = re.compile(
    r"(?<![A-Za-z0-9_])(?:ORDER(?![A-Za-z0-9_])|[0-9][A-Za-z0-9_]*?ORDER)", re.IGNORECASE
)


def plainly_unordered(query: str) -> bool:
    """True when the text alone shows that no parse can find a top-level ORDER BY: ASCII
    with the word ORDER nowhere (not even in a string or a comment). sqlglot makes an
    ordering only of an ORDER BY (or Oracle's ORDER SIBLINGS BY) keyword, so such a query
    is unordered if it parses at all; a few microseconds against a parse's milliseconds.

    >>> plainly_unordered("SELECT order_id, count(*) FROM orders GROUP BY 1")
    True
    >>> plainly_unordered("SELECT a FROM t ORDER BY a"), plainly_unordered("SELECT 'order'")
    (False, False)
    """
    return query.isascii() and _ORDER_TEXT.search(query) is None


def top_level_order(query: str, dialect: str | None = None) -> OrderInfo:
    """Top-level ORDER BY of the last statement (a UNION's ORDER BY orders the union).

    >>> top_level_order("SELECT a, b FROM t ORDER BY b DESC, 1")
    OrderInfo(ordered=True, keys=(1, 0))
    >>> top_level_order("SELECT * FROM (SELECT a FROM t ORDER BY a) s")
    OrderInfo(ordered=False, keys=())
    """
    from sqlglot import exp

    statements = parsed(query, dialect)
    if isinstance(statements, str):
        raise ValueError(f"cannot parse SQL: {statements}")
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
