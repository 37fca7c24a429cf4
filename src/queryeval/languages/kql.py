"""KQL: its names, the read-only check, tokens, and the top-level ordering of a query
(a final ``sort``/``order``/``top`` whose order survives)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from queryeval.languages._lexer import CLOSE, OPEN, Token, check_brackets, split_tokens, unquote
from queryeval.languages._order import OrderInfo, SortKey

__all__ = [
    "NAMES",
    "decode_string",
    "order_by_pipes",
    "quote_name",
    "read_only_refusal",
    "tokenize",
    "top_level_order",
]

NAMES = frozenset({"kql", "kusto"})
"""The language names that mean KQL."""

# --- the read-only check ------------------------------------------------------------------------

_READ_COMMANDS = re.compile(r"^\.show\b", re.IGNORECASE)


def read_only_refusal(query: str, dialect: str | None = None) -> str | None:
    """Refuse every control command except `.show ...` (`.drop`, `.set`, `.append`, ...);
    None when the query may run.

    >>> read_only_refusal(".show tables") is None, read_only_refusal(".drop table T")
    (True, "control command '.drop table': only queries and .show commands may run")
    """
    from duckdb_kql.control import strip_leading_comments

    head = strip_leading_comments(query).lstrip()
    if head.startswith("."):
        command = " ".join(head.split()[:2])
        if not _READ_COMMANDS.match(head):
            return f"control command {command!r}: only queries and .show commands may run"
    return None


# --- top-level ordering -----------------------------------------------------------------------

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


def top_level_order(query: str, dialect: str | None = None) -> OrderInfo:
    """Ordered when the final pipeline sorts (``sort by``/``order by``/``top N by``) and no
    later operator (summarize, join, union, distinct, ...) discards that order.

    >>> top_level_order("T | sort by a desc | project b = a, c")
    OrderInfo(ordered=True, keys=('b',))
    """
    try:
        return _kql_order_from_ir(query)
    except _ParserUnavailable:
        return order_by_pipes(query)


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


def order_by_pipes(query: str) -> OrderInfo:
    """The tokenizer fallback of :func:`top_level_order`: split at top-level ``;`` and ``|``.

    >>> order_by_pipes("T | where s == 'a | sort by b' | sort by x | take 3")
    OrderInfo(ordered=True, keys=('x',))
    """
    tokens = tokenize(query)
    check_brackets(tokens, "KQL")
    statements = [s for s in split_tokens(tokens, ";") if s] if tokens else []
    if not statements:
        raise ValueError("cannot parse KQL: empty query")
    last = statements[-1]
    if last[0].kind == "word" and last[0].text.lower() in {"let", "set", "declare"}:
        return OrderInfo(False)
    info = OrderInfo(False)
    for segment in split_tokens(last, "|")[1:]:
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


def _kql_items(query: str, segment: list[Token]) -> list[list[Token]]:
    """The comma-separated arguments of a pipeline stage, after the operator's name."""
    match = re.match(r"[A-Za-z_][\w-]*", query[segment[0].start :])
    name_end = segment[0].start + (match.end() if match else 0)
    args = [t for t in segment if t.start >= name_end]
    return [item for item in split_tokens(args, ",") if item] if args else []


def _kql_track_keys(
    operator: str, items: list[list[Token]], keys: tuple[SortKey, ...]
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


def _kql_plain(tokens: list[Token]) -> str | None:
    """The column a bare reference names (``x`` or ``['x y']``), else None."""
    name = _kql_name(tokens)
    return name if isinstance(name, str) else None


def _kql_operator(query: str, segment: list[Token]) -> str:
    """The operator's name, hyphenated ones (``project-away``) included."""
    match = re.match(r"[A-Za-z_][\w-]*", query[segment[0].start :])
    return match.group(0).lower() if match else ""


def _kql_sort_keys(segment: list[Token]) -> tuple[SortKey, ...]:
    words = [t.text.lower() if t.kind == "word" else "" for t in segment]
    if "by" not in words:
        return ()
    after = segment[words.index("by") + 1 :]
    keys: list[SortKey] = []
    for part in split_tokens(after, ",") if after else []:
        body = [t for t in part if not (t.kind == "word" and t.text.lower() in _KQL_DIRECTION)]
        keys.append(_kql_name(body))
    return tuple(keys)


def _kql_name(tokens: list[Token]) -> SortKey:
    if len(tokens) == 1 and tokens[0].kind == "word":
        return tokens[0].text
    texts = [t.text for t in tokens]
    if len(texts) == 3 and texts[0] == "[" and texts[2] == "]" and tokens[1].kind == "string":
        return unquote(texts[1])  # ['column name']
    return None


# --- tokens -----------------------------------------------------------------------------------


def tokenize(text: str) -> list[Token]:
    """Words, strings, numbers and punctuation with their bracket depth; comments dropped.

    Hand-written for the fallback below: only top-level structure (pipes) is needed, and
    strings (``'..'``, ``@'..'``, ``h'..'``, triple backticks) and comments must not be
    mistaken for syntax.

    >>> [t.text for t in tokenize("T | where s == @'a|b' // note")]
    ['T', '|', 'where', 's', '=', '=', "@'a|b'"]
    """
    tokens: list[Token] = []
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
        start = i
        if text.startswith("```", i):
            end = text.find("```", i + 3)
            i = n if end < 0 else end + 3
            tokens.append(Token("string", text[start:i], depth, start, i))
            continue
        if ch in "@hH" and i + 1 < n and text[i + 1] in "'\"":
            i += 1  # verbatim (@'..') or obfuscated (h'..') KQL string
            ch = text[i]
        if ch in "'\"":
            i = _string_end(text, i, ch, verbatim=text[start] == "@")
            tokens.append(Token("string", text[start:i], depth, start, i))
            continue
        if ch.isalpha() or ch == "_" or ch == "$":
            while i < n and (text[i].isalnum() or text[i] in "_$"):
                i += 1
            tokens.append(Token("word", text[start:i], depth, start, i))
            continue
        if ch.isdigit():
            while i < n and (text[i].isalnum() or text[i] == "."):
                i += 1
            tokens.append(Token("number", text[start:i], depth, start, i))
            continue
        if ch in OPEN:
            tokens.append(Token("punct", ch, depth, start, i + 1))
            depth += 1
        elif ch in CLOSE:
            depth = max(depth - 1, 0)
            tokens.append(Token("punct", ch, depth, start, i + 1))
        else:
            tokens.append(Token("punct", ch, depth, start, i + 1))
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


# --- string literals and names --------------------------------------------------------------------

_SIMPLE_ESCAPES = {"'": "'", '"': '"', "\\": "\\", "a": "\a", "b": "\b", "f": "\f", "n": "\n",
                   "r": "\r", "t": "\t", "v": "\v"}  # fmt: skip
_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$")


def decode_string(body: str) -> str:
    """The value of a regular (not verbatim) KQL string literal's body, by Kusto.Language's
    rules (`KustoFacts.DecodeEscapes`): `\\uXXXX` (UTF-16 units), `\\xXX`, up to three octal
    digits, the C escapes, and any other escaped character standing for itself. ValueError
    for an unpaired surrogate or an escape without its digits.

    >>> decode_string(r"caf\\u00e9 \\x41\\101\\t!")
    'café AA\\t!'
    """
    units: list[int] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in _SIMPLE_ESCAPES:
                units.extend(_utf16(_SIMPLE_ESCAPES[nxt]))
                i += 2
            elif nxt in "ux":
                width = 4 if nxt == "u" else 2
                digits = re.match(f"[0-9A-Fa-f]{{1,{width}}}", body[i + 2 : i + 2 + width])
                if digits is None:
                    raise ValueError(f"string escape \\{nxt} without hexadecimal digits")
                units.append(int(digits.group(0), 16))
                i += 2 + len(digits.group(0))
            elif nxt.isdigit():
                digits = re.match(r"[0-7]{1,3}", body[i + 1 : i + 4])
                if digits is None:
                    raise ValueError(f"string escape \\{nxt} is not octal")
                units.append(int(digits.group(0), 8) & 0xFFFF)
                i += 1 + len(digits.group(0))
            else:
                units.extend(_utf16(nxt))
                i += 2
        else:
            units.extend(_utf16(ch))
            i += 1
    data = b"".join(u.to_bytes(2, "little") for u in units)
    try:
        return data.decode("utf-16-le")
    except UnicodeDecodeError:
        raise ValueError("a string literal holds an unpaired UTF-16 surrogate") from None


def _utf16(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


def quote_name(name: str) -> str:
    """A column name as KQL source: as is when plain, else `['...']`.

    >>> quote_name("Level"), quote_name("5 min")
    ('Level', "['5 min']")
    """
    if _PLAIN_NAME.match(name):
        return name
    return "['" + name.replace("\\", "\\\\").replace("'", "\\'") + "']"
