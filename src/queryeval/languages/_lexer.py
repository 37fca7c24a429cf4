"""Tokens of the hand-lexed languages (KQL's pipe splitter, Cypher) and what both do with
them: bracket checks, splitting at a top-level separator, unquoting names.

Each language lexes its own text (`kql.tokenize`, `cypher.tokenize`) into these tokens.
"""

from __future__ import annotations

from typing import NamedTuple


class Token(NamedTuple):
    """One token: its kind, text, bracket depth and place in the query (a named tuple: a
    query has many, and tuples are built several times faster than frozen dataclasses)."""

    kind: str  # word | string | punct | number | parameter (Cypher's $name)
    text: str
    depth: int
    start: int
    end: int


OPEN = {"(": ")", "[": "]", "{": "}"}
CLOSE = {")", "]", "}"}


def check_brackets(tokens: list[Token], language: str) -> None:
    """Raise ValueError unless every bracket closes the one that opened last."""
    stack: list[str] = []
    for token in tokens:
        if token.kind != "punct":
            continue
        if token.text in OPEN:
            stack.append(OPEN[token.text])
        elif token.text in CLOSE and (not stack or stack.pop() != token.text):
            raise ValueError(
                f"cannot parse {language}: unbalanced {token.text!r} at offset {token.start}"
            )
    if stack:
        raise ValueError(f"cannot parse {language}: {len(stack)} unclosed bracket(s)")


def split_tokens(tokens: list[Token], separator: str) -> list[list[Token]]:
    """The tokens cut at each `separator` at the depth of the first token."""
    parts: list[list[Token]] = [[]]
    for token in tokens:
        if token.kind == "punct" and token.text == separator and token.depth == tokens[0].depth:
            parts.append([])
        else:
            parts[-1].append(token)
    return parts


def unquote(name: str) -> str:
    """A name without its quotes (`x`, 'x' or "x")."""
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "`'\"":
        return name[1:-1]
    return name
