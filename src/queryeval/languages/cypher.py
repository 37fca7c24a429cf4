"""Cypher: its names, the one lexer, the read-only check, the names a query refers to, and
the top-level ordering of a query (ORDER BY after the final top-level RETURN).

No maintained Cypher parser is on PyPI, so a small regular-expression lexer finds words
outside strings, comments and `quoted` names; everything here reads its tokens.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from queryeval.languages._lexer import CLOSE, OPEN, Token, check_brackets, split_tokens, unquote
from queryeval.languages._order import OrderInfo, SortKey

__all__ = [
    "NAMES",
    "Neo4jKind",
    "neo4j_kind",
    "read_only_refusal",
    "referenced_names",
    "tokenize",
    "top_level_order",
]

NAMES = frozenset({"cypher", "opencypher", "gql"})
"""The language names that mean Cypher."""

# --- tokens -----------------------------------------------------------------------------------

# An unterminated string, comment or `name` is not one: its quote becomes punctuation and
# what follows is read as code (so a write hidden behind a stray quote is still seen).
_TOKEN = re.compile(
    r"""
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<word>`(?:[^`]|``)*`|[^\W\d]\w*)
  | (?P<parameter>\$(?:[^\W\d]\w*|\d+|`(?:[^`]|``)*`))
  | (?P<number>0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?)
  | (?P<punct>\S)
    """,
    re.VERBOSE | re.DOTALL,
)


def tokenize(query: str) -> list[Token]:
    """Words (`quoted` names included), strings, parameters (``$name``), numbers and
    punctuation, each with its bracket depth; comments dropped.

    >>> [(t.kind, t.text, t.depth) for t in tokenize("RETURN `a b`, $p, [1] // c")]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('word', 'RETURN', 0), ('word', '`a b`', 0), ('punct', ',', 0), ('parameter', '$p', 0),
     ('punct', ',', 0), ('punct', '[', 0), ('number', '1', 1), ('punct', ']', 0)]
    """
    tokens: list[Token] = []
    depth = 0
    for match in _TOKEN.finditer(query):
        kind = match.lastgroup or "punct"
        if kind == "comment":
            continue
        text = match.group()
        start, end = match.span()
        if kind == "punct":
            if text in OPEN:
                tokens.append(Token(kind, text, depth, start, end))
                depth += 1
                continue
            if text in CLOSE:
                depth = max(depth - 1, 0)
        tokens.append(Token(kind, text, depth, start, end))
    return tokens


# --- the read-only check ------------------------------------------------------------------------

_WRITES = {"CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "FOREACH",
           "LOAD", "ALTER", "GRANT", "REVOKE", "DENY"}  # fmt: skip
_PROCEDURE_WRITES = re.compile(
    r"\b(create|merge|delete|drop|set|remove|write|import|load|periodic|refactor|"
    r"trigger|schema\.assert|index|constraint)\b",
    re.IGNORECASE,
)


def read_only_refusal(query: str) -> str | None:
    """Refuse write clauses (CREATE, MERGE, SET, DELETE, REMOVE, ...), procedure calls that
    write, and several statements; None when the query may run. A word after `.`, `:`, `$`,
    `AS` or before `:` is a name (a property, label, parameter, alias or map key).

    >>> read_only_refusal("MATCH (n) RETURN n.delete AS set") is None
    True
    >>> read_only_refusal("MATCH (n) DETACH DELETE n")
    'DETACH clause: writes are refused'
    """
    tokens = tokenize(query)
    for i, token in enumerate(tokens):
        text = token.text
        if token.kind == "punct":
            if text == ";" and any(t.kind != "punct" for t in tokens[i + 1 :]):
                return "several statements: only one read-only query may run at a time"
            continue
        if token.kind != "word":
            continue
        before = tokens[i - 1].text if i else ""
        after = tokens[i + 1].text if i + 1 < len(tokens) else ""
        if before in {".", ":", "$"} or before.upper() == "AS" or after == ":":
            continue  # a property, label, parameter, alias or map key named like a keyword
        word = text.upper()
        if word in _WRITES:
            return f"{word} clause: writes are refused"
        if word == "CALL" and _writing_procedure(tokens, i + 1):
            return "a procedure that may write: writes are refused"
    return None


def _writing_procedure(tokens: list[Token], start: int) -> bool:
    """Whether the procedure name after CALL looks like one that writes (apoc.create...)."""
    name: list[str] = []
    for token in tokens[start:]:
        if token.kind == "word" or token.text == ".":
            name.append(token.text.strip("`"))
        else:
            break
    return bool(name) and bool(_PROCEDURE_WRITES.search("".join(name)))


# --- names a query refers to ----------------------------------------------------------------------


def referenced_names(query: str) -> dict[str, set[str]]:
    """Labels, relationship types and parameters a query names: a name after `:` (or after
    `|`, `&`, `!` in a label expression) inside `(...)` or outside brackets is a label,
    inside `[...]` a relationship type; inside `{...}` it is a map value and skipped.

    >>> names = referenced_names("MATCH (p:Person {name: $name})-[:ACTED_IN]->(m) RETURN m")
    >>> sorted(names["labels"]), sorted(names["types"]), sorted(names["parameters"])
    (['Person'], ['ACTED_IN'], ['name'])
    """
    out: dict[str, set[str]] = {"labels": set(), "types": set(), "parameters": set()}
    stack: list[str] = []
    expect_label = after_label = False
    before = ""
    for token in tokenize(query):
        kind, text = token.kind, token.text
        if kind == "parameter" or (before == "$" and kind in {"word", "number"}):
            out["parameters"].add(text.removeprefix("$").strip("`"))
            expect_label = after_label = False
        elif expect_label and kind == "word":
            context = stack[-1] if stack else ""
            if context == "[":
                out["types"].add(text.strip("`"))
            elif context != "{":
                out["labels"].add(text.strip("`"))
            expect_label, after_label = False, True
        else:
            if text in ("(", "[", "{"):
                stack.append(text)
            elif text in (")", "]", "}") and stack:
                stack.pop()
            expect_label = text == ":" or (
                text in ("|", "&", "!") and (expect_label or after_label)
            )
            after_label = False
        before = text
    return out


# --- top-level ordering -----------------------------------------------------------------------

_CYPHER_CLAUSE_END = {"skip", "limit", "offset"}
_CYPHER_DIRECTION = {"asc", "desc", "ascending", "descending"}


def top_level_order(query: str) -> OrderInfo:
    """Ordered when the final top-level RETURN has an ORDER BY (a WITH ... ORDER BY or one in
    a CALL subquery does not order the result; neither does anything across a UNION).

    >>> top_level_order("MATCH (m) RETURN m.title AS t, m.year ORDER BY m.year DESC, t")
    OrderInfo(ordered=True, keys=(1, 0))
    """
    all_tokens = tokenize(query)
    check_brackets(all_tokens, "Cypher")
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
    for part in split_tokens(tokens[order + 2 : end], ","):
        body = [t for t in part if not (t.kind == "word" and t.text.lower() in _CYPHER_DIRECTION)]
        text = query[body[0].start : body[-1].end].strip() if body else ""
        keys.append(_cypher_key(text, items))
    return OrderInfo(True, tuple(keys))


def _cypher_return_items(query: str, tokens: list[Token]) -> list[tuple[str, str]] | None:
    """(expression, output name) per RETURN item; None for ``RETURN *``."""
    if tokens and tokens[0].kind == "word" and tokens[0].text.lower() == "distinct":
        tokens = tokens[1:]
    items: list[tuple[str, str]] = []
    for part in split_tokens(tokens, ",") if tokens else []:
        if not part:
            continue
        if len(part) == 1 and part[0].text == "*":
            return None
        words = [t.text.lower() if t.kind == "word" else "" for t in part]
        if "as" in words[1:]:
            at = len(words) - 1 - words[::-1].index("as")
            expression = _compact(query[part[0].start : part[at - 1].end])
            items.append((expression, unquote(part[-1].text)))
        else:
            expression = query[part[0].start : part[-1].end]
            items.append((_compact(expression), expression.strip()))
    return items


def _cypher_key(text: str, items: list[tuple[str, str]] | None) -> SortKey:
    """A sort key as a RETURN item position: by alias (or output name), then by expression."""
    if items is None:
        return unquote(text) or None
    for i, (_, name) in enumerate(items):
        if unquote(text) == name:
            return i
    for i, (expression, _) in enumerate(items):
        if _compact(text) == expression:
            return i
    return None


def _compact(text: str) -> str:
    return re.sub(r"\s+", "", text)


# --- values the neo4j driver returns --------------------------------------------------------------

Neo4jKind = Literal["node", "relationship", "path", "duration", "datetime", "date", "time"]
_TEMPORAL = (("Duration", "duration"), ("DateTime", "datetime"), ("Date", "date"), ("Time", "time"))
_GRAPH = (("Node", "node"), ("Relationship", "relationship"), ("Path", "path"))


def neo4j_kind(value: Any) -> Neo4jKind | None:
    """Which graph or temporal value of the neo4j driver `value` is, None for any other
    value; told by its class and module, so neo4j is never imported. Engines turn these
    into plain Python values, the result comparator into canonical forms.

    >>> neo4j_kind(3), neo4j_kind("MATCH (n) RETURN n")
    (None, None)
    """
    cls = type(value)
    module = cls.__module__ or ""
    if not module.startswith("neo4j"):
        # the driver makes one Relationship subclass per type at run time, and its module
        # is then not neo4j's: look at the class it derives from
        module = cls.__mro__[1].__module__ if len(cls.__mro__) > 1 else ""
        if not module.startswith("neo4j"):
            return None
    names = {c.__name__ for c in cls.__mro__}
    for name, kind in _TEMPORAL if module.startswith("neo4j.time") else _GRAPH:
        if name in names:
            return kind  # type: ignore[return-value]
    return None
