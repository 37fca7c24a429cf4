"""Cypher: is the result ordered (ORDER BY after the final top-level RETURN)?"""

from __future__ import annotations

import re

from queryeval.languages._lexer import (
    Token,
    check_brackets,
    split_tokens,
    tokenize,
    unquote,
)
from queryeval.languages._order import OrderInfo, SortKey

_CYPHER_CLAUSE_END = {"skip", "limit", "offset"}
_CYPHER_DIRECTION = {"asc", "desc", "ascending", "descending"}


def cypher_order(query: str) -> OrderInfo:
    """Ordered when the final top-level RETURN has an ORDER BY (a WITH ... ORDER BY or one in
    a CALL subquery does not order the result; neither does anything across a UNION)."""
    all_tokens = tokenize(query, cypher=True)
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
