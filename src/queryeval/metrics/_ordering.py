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

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

SortKey = int | str | None


class OrderInfo(NamedTuple):
    """``(ordered, keys)``: whether rows come back in a defined order, and by what."""

    ordered: bool
    keys: tuple[SortKey, ...] = ()


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


# -- a tokenizer for KQL and Cypher ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # word | string | punct | number
    text: str
    depth: int
    start: int
    end: int


_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {")", "]", "}"}


def _tokenize(text: str, *, cypher: bool) -> list[_Token]:
    """Words, strings, numbers and punctuation with their bracket depth; comments dropped.

    Hand-written because the only need is top-level structure (pipes, clauses), and no
    maintained Cypher parser exists; strings and comments must not be mistaken for syntax.
    """
    tokens: list[_Token] = []
    depth = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
            continue
        if cypher and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        start = i
        if not cypher and text.startswith("```", i):
            end = text.find("```", i + 3)
            i = n if end < 0 else end + 3
            tokens.append(_Token("string", text[start:i], depth, start, i))
            continue
        if not cypher and ch in "@hH" and i + 1 < n and text[i + 1] in "'\"":
            i += 1  # verbatim (@'..') or obfuscated (h'..') KQL string
            ch = text[i]
        if ch in "'\"" or (cypher and ch == "`"):
            verbatim = text[start] == "@" or ch == "`"
            i = _string_end(text, i, ch, verbatim)
            kind = "word" if ch == "`" else "string"
            tokens.append(_Token(kind, text[start:i], depth, start, i))
            continue
        if ch.isalpha() or ch == "_" or ch == "$":
            while i < n and (text[i].isalnum() or text[i] in "_$"):
                i += 1
            tokens.append(_Token("word", text[start:i], depth, start, i))
            continue
        if ch.isdigit():
            while i < n and (text[i].isalnum() or text[i] == "."):
                i += 1
            tokens.append(_Token("number", text[start:i], depth, start, i))
            continue
        if ch in _OPEN:
            tokens.append(_Token("punct", ch, depth, start, i + 1))
            depth += 1
        elif ch in _CLOSE:
            depth = max(depth - 1, 0)
            tokens.append(_Token("punct", ch, depth, start, i + 1))
        else:
            tokens.append(_Token("punct", ch, depth, start, i + 1))
        i += 1
    return tokens


def _string_end(text: str, i: int, quote: str, verbatim: bool) -> int:
    """Index just past the string literal that opens at ``text[i]``."""
    j = i + 1
    while j < len(text):
        if text[j] == "\\" and not verbatim:
            j += 2
            continue
        if text[j] == quote:
            if verbatim and j + 1 < len(text) and text[j + 1] == quote:
                j += 2  # doubled quote inside a verbatim string
                continue
            return j + 1
        j += 1
    return len(text)


def _check_brackets(tokens: list[_Token], language: str) -> None:
    """Raise ValueError unless every bracket closes the one that opened last."""
    stack: list[str] = []
    for token in tokens:
        if token.kind != "punct":
            continue
        if token.text in _OPEN:
            stack.append(_OPEN[token.text])
        elif token.text in _CLOSE and (not stack or stack.pop() != token.text):
            raise ValueError(
                f"cannot parse {language}: unbalanced {token.text!r} at offset {token.start}"
            )
    if stack:
        raise ValueError(f"cannot parse {language}: {len(stack)} unclosed bracket(s)")


def _split(tokens: list[_Token], separator: str) -> list[list[_Token]]:
    parts: list[list[_Token]] = [[]]
    for token in tokens:
        if token.kind == "punct" and token.text == separator and token.depth == tokens[0].depth:
            parts.append([])
        else:
            parts[-1].append(token)
    return parts


def _unquote(name: str) -> str:
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "`'\"":
        return name[1:-1]
    return name


# -- KQL ------------------------------------------------------------------------------------

# Operators after which rows keep the order a sort gave them.
_KQL_ORDER_KEEPING = {
    "where",
    "filter",
    "project",
    "project-away",
    "project-keep",
    "project-rename",
    "project-reorder",
    "extend",
    "take",
    "limit",
    "parse",
    "parse-where",
    "parse-kv",
    "serialize",
    "as",
    "render",
    "invoke",
}
_KQL_ORDERING = {"sort", "order", "top"}
_KQL_DIRECTION = {"asc", "desc", "nulls", "first", "last"}


def kql_order(query: str) -> OrderInfo:
    """Ordered when the final pipeline sorts (``sort by``/``order by``/``top N by``) and no
    later operator (summarize, join, union, distinct, ...) discards that order."""
    try:
        return _kql_order_from_ir(query)
    except _ParserUnavailable:
        return kql_order_by_pipes(query)


class _ParserUnavailable(Exception):
    """duckdb-kql is missing or cannot lower this (valid) query."""


def _kql_order_from_ir(query: str) -> OrderInfo:
    try:
        from duckdb_kql import KqlSyntaxError, KqlUnsupportedError
        from duckdb_kql import ir as kql_ir
        from duckdb_kql.lower import lower
    except ImportError as error:
        raise _ParserUnavailable from error
    try:
        tree = lower(query)
    except (KqlSyntaxError, KqlUnsupportedError, RecursionError) as error:
        # the vendored grammar misses some valid operators (``serialize`` alone, ...)
        raise _ParserUnavailable from error
    keeping = (kql_ir.Where, kql_ir.Take, kql_ir.Parse)
    info = OrderInfo(False)
    for op in tree.operators:
        if isinstance(op, kql_ir.Sort | kql_ir.Top):
            keys = tuple(
                k.expr.name if isinstance(k.expr, kql_ir.ColumnRef) else None for k in op.keys
            )
            info = OrderInfo(True, keys)
        elif isinstance(op, kql_ir.Project):
            items = []
            for item in op.expressions:
                source = item.expr.name if isinstance(item.expr, kql_ir.ColumnRef) else None
                items.append((item.name or source, source))
            info = OrderInfo(info.ordered, _projected(info.keys, items))
        elif isinstance(op, kql_ir.ProjectRename):
            info = OrderInfo(info.ordered, _renamed(info.keys, dict(op.renames)))
        elif isinstance(op, kql_ir.Extend):
            replaced = {e.name: None for e in op.expressions if e.name}
            info = OrderInfo(info.ordered, _renamed(info.keys, replaced))
        elif isinstance(op, kql_ir.ProjectAway):
            info = OrderInfo(info.ordered, _renamed(info.keys, dict.fromkeys(op.columns)))
        elif not isinstance(op, keeping):
            info = OrderInfo(False)
    return info if info.ordered else OrderInfo(False)


def _projected(
    keys: tuple[SortKey, ...], items: list[tuple[str | None, str | None]]
) -> tuple[SortKey, ...]:
    """Sort keys after a ``project`` of (output name, source column) items: a key column
    projected under a new name follows it; one not projected can no longer be named."""
    out: list[SortKey] = []
    for key in keys:
        names = [name for name, source in items if source is not None and source == key]
        out.append(names[0] if names else None)
    return tuple(out)


def _renamed(keys: tuple[SortKey, ...], mapping: Mapping[str, str | None]) -> tuple[SortKey, ...]:
    """Sort keys after renames (old -> new) or drops/overwrites (old -> None)."""
    return tuple(mapping.get(k, k) if isinstance(k, str) else k for k in keys)


def kql_order_by_pipes(query: str) -> OrderInfo:
    """The tokenizer fallback of :func:`kql_order`: split at top-level ``;`` and ``|``."""
    tokens = _tokenize(query, cypher=False)
    _check_brackets(tokens, "KQL")
    statements = [s for s in _split(tokens, ";") if s] if tokens else []
    if not statements:
        raise ValueError("cannot parse KQL: empty query")
    last = statements[-1]
    if last[0].kind == "word" and last[0].text.lower() in {"let", "set", "declare"}:
        return OrderInfo(False)
    info = OrderInfo(False)
    for segment in _split(last, "|")[1:]:
        if not segment:
            raise ValueError("cannot parse KQL: empty pipeline stage")
        name = _kql_operator(query, segment)
        if name in _KQL_ORDERING:
            info = OrderInfo(True, _kql_sort_keys(segment))
        elif name not in _KQL_ORDER_KEEPING:
            info = OrderInfo(False)
        elif info.ordered:
            info = OrderInfo(True, _kql_track_keys(name, _kql_items(query, segment), info.keys))
    return info


def _kql_items(query: str, segment: list[_Token]) -> list[list[_Token]]:
    """The comma-separated arguments of a pipeline stage, after the operator's name."""
    match = re.match(r"[A-Za-z_][\w-]*", query[segment[0].start :])
    name_end = segment[0].start + (match.end() if match else 0)
    args = [t for t in segment if t.start >= name_end]
    return [item for item in _split(args, ",") if item] if args else []


def _kql_track_keys(
    operator: str, items: list[list[_Token]], keys: tuple[SortKey, ...]
) -> tuple[SortKey, ...]:
    """Sort-key names after a column-shaping operator that keeps the row order."""
    assigned = [(item[0], item[2:]) for item in items if len(item) > 2 and item[1].text == "="]
    if operator == "project":
        projected: list[tuple[str | None, str | None]] = []
        for item in items:
            if len(item) > 2 and item[1].text == "=":
                projected.append((_kql_plain(item[:1]), _kql_plain(item[2:])))
            else:
                plain = _kql_plain(item)
                projected.append((plain, plain))
        return _projected(keys, projected)
    if operator == "project-rename":
        renames: dict[str, str | None] = {}
        for new, old in assigned:
            new_name, old_name = _kql_name([new]), _kql_plain(old)
            if isinstance(new_name, str) and old_name is not None:
                renames[old_name] = new_name
        return _renamed(keys, renames)
    if operator == "extend":
        return _renamed(
            keys, {n: None for t, _ in assigned if isinstance(n := _kql_name([t]), str)}
        )
    if operator == "project-away":
        return _renamed(keys, {n: None for item in items if (n := _kql_plain(item)) is not None})
    return keys


def _kql_plain(tokens: list[_Token]) -> str | None:
    """The column a bare reference names (``x`` or ``['x y']``), else None."""
    name = _kql_name(tokens)
    return name if isinstance(name, str) else None


def _kql_operator(query: str, segment: list[_Token]) -> str:
    """The operator's name, hyphenated ones (``project-away``) included."""
    match = re.match(r"[A-Za-z_][\w-]*", query[segment[0].start :])
    return match.group(0).lower() if match else ""


def _kql_sort_keys(segment: list[_Token]) -> tuple[SortKey, ...]:
    words = [t.text.lower() if t.kind == "word" else "" for t in segment]
    if "by" not in words:
        return ()
    after = segment[words.index("by") + 1 :]
    keys: list[SortKey] = []
    for part in _split(after, ",") if after else []:
        body = [t for t in part if not (t.kind == "word" and t.text.lower() in _KQL_DIRECTION)]
        keys.append(_kql_name(body))
    return tuple(keys)


def _kql_name(tokens: list[_Token]) -> SortKey:
    if len(tokens) == 1 and tokens[0].kind == "word":
        return tokens[0].text
    texts = [t.text for t in tokens]
    if len(texts) == 3 and texts[0] == "[" and texts[2] == "]" and tokens[1].kind == "string":
        return _unquote(texts[1])  # ['column name']
    return None


# -- Cypher ---------------------------------------------------------------------------------

_CYPHER_CLAUSE_END = {"skip", "limit", "offset"}
_CYPHER_DIRECTION = {"asc", "desc", "ascending", "descending"}


def cypher_order(query: str) -> OrderInfo:
    """Ordered when the final top-level RETURN has an ORDER BY (a WITH ... ORDER BY or one in
    a CALL subquery does not order the result; neither does anything across a UNION)."""
    all_tokens = _tokenize(query, cypher=True)
    _check_brackets(all_tokens, "Cypher")
    tokens = [t for t in all_tokens if t.depth == 0]
    if not tokens:
        raise ValueError("cannot parse Cypher: empty query")
    words = [t.text.lower() if t.kind == "word" else "" for t in tokens]
    if "union" in words:
        return OrderInfo(False)
    if "return" not in words:
        return OrderInfo(False)
    ret = len(words) - 1 - words[::-1].index("return")
    order = next(
        (i for i in range(ret + 1, len(words) - 1) if words[i] == "order" and words[i + 1] == "by"),
        None,
    )
    if order is None:
        return OrderInfo(False)
    items = _cypher_return_items(query, tokens[ret + 1 : order])
    end = next(
        (i for i in range(order + 2, len(words)) if words[i] in _CYPHER_CLAUSE_END), len(words)
    )
    keys: list[SortKey] = []
    for part in _split(tokens[order + 2 : end], ","):
        body = [t for t in part if not (t.kind == "word" and t.text.lower() in _CYPHER_DIRECTION)]
        text = query[body[0].start : body[-1].end].strip() if body else ""
        keys.append(_cypher_key(text, items))
    return OrderInfo(True, tuple(keys))


def _cypher_return_items(query: str, tokens: list[_Token]) -> list[tuple[str, str]] | None:
    """(expression, output name) per RETURN item; None for ``RETURN *``."""
    if tokens and tokens[0].kind == "word" and tokens[0].text.lower() == "distinct":
        tokens = tokens[1:]
    items: list[tuple[str, str]] = []
    for part in _split(tokens, ",") if tokens else []:
        if not part:
            continue
        if len(part) == 1 and part[0].text == "*":
            return None
        words = [t.text.lower() if t.kind == "word" else "" for t in part]
        if "as" in words[1:]:
            at = len(words) - 1 - words[::-1].index("as")
            expression = _compact(query[part[0].start : part[at - 1].end])
            items.append((expression, _unquote(part[-1].text)))
        else:
            expression = query[part[0].start : part[-1].end]
            items.append((_compact(expression), expression.strip()))
    return items


def _cypher_key(text: str, items: list[tuple[str, str]] | None) -> SortKey:
    """A sort key as a RETURN item position: by alias (or output name), then by expression."""
    if items is None:
        return _unquote(text) or None
    for i, (_, name) in enumerate(items):
        if _unquote(text) == name:
            return i
    for i, (expression, _) in enumerate(items):
        if _compact(text) == expression:
            return i
    return None


def _compact(text: str) -> str:
    return re.sub(r"\s+", "", text)
