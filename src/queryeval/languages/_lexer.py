"""A small tokenizer for KQL and Cypher: words, strings, numbers, punctuation and depth.

Hand-written because the only need is top-level structure (pipes, clauses), and no
maintained Cypher parser exists on PyPI; strings and comments must not be mistaken for
syntax.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # word | string | punct | number
    text: str
    depth: int
    start: int
    end: int


OPEN = {"(": ")", "[": "]", "{": "}"}
CLOSE = {")", "]", "}"}


def tokenize(text: str, *, cypher: bool) -> list[Token]:
    """Words, strings, numbers and punctuation with their bracket depth; comments dropped.

    Hand-written because the only need is top-level structure (pipes, clauses), and no
    maintained Cypher parser exists; strings and comments must not be mistaken for syntax.
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
        if cypher and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        start = i
        if not cypher and text.startswith("```", i):
            end = text.find("```", i + 3)
            i = n if end < 0 else end + 3
            tokens.append(Token("string", text[start:i], depth, start, i))
            continue
        if not cypher and ch in "@hH" and i + 1 < n and text[i + 1] in "'\"":
            i += 1  # verbatim (@'..') or obfuscated (h'..') KQL string
            ch = text[i]
        if ch in "'\"" or (cypher and ch == "`"):
            verbatim = text[start] == "@" or ch == "`"
            i = _string_end(text, i, ch, verbatim)
            kind = "word" if ch == "`" else "string"
            tokens.append(Token(kind, text[start:i], depth, start, i))
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
    parts: list[list[Token]] = [[]]
    for token in tokens:
        if token.kind == "punct" and token.text == separator and token.depth == tokens[0].depth:
            parts.append([])
        else:
            parts[-1].append(token)
    return parts


def unquote(name: str) -> str:
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "`'\"":
        return name[1:-1]
    return name
