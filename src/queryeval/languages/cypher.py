"""Cypher: its names, the one lexer, the read-only check, the names a query refers to, the
top-level ordering of a query (ORDER BY after the final top-level RETURN), and the literals
it compares with properties.

No maintained Cypher parser is on PyPI, so a small regular-expression lexer finds words
outside strings, comments and `quoted` names; everything here reads its tokens.
"""

from __future__ import annotations

import re
from typing import Any, Literal, NamedTuple

from queryeval.languages._lexer import CLOSE, OPEN, Token, check_brackets, split_tokens, unquote
from queryeval.languages._order import OrderInfo, SortKey

__all__ = [
    "NAMES",
    "LiteralComparison",
    "Neo4jKind",
    "label_bindings",
    "literal_comparisons",
    "neo4j_kind",
    "read_only_refusal",
    "referenced_names",
    "referenced_properties",
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


def read_only_refusal(query: str, dialect: str | None = None) -> str | None:
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

# words before `(` that start a pattern (`MATCH (n)`, `WHERE (n)-->()`), not a function call
_PATTERN_KEYWORDS = {"MATCH", "MERGE", "CREATE", "WHERE", "AND", "OR", "XOR", "NOT", "EXISTS"}
# words before `{` that open a subquery (its labels are labels again), not a map
_SUBQUERY_KEYWORDS = {"EXISTS", "COUNT", "COLLECT", "CALL"}
_CLAUSES = {"MATCH", "OPTIONAL", "WHERE", "WITH", "RETURN", "UNWIND", "CALL", "ORDER", "SKIP",
            "LIMIT", "UNION", "YIELD", "USE", "FINISH", "FILTER", "LET"}  # fmt: skip
_LABEL_OPERATORS = ("|", "&", "!")


def _name(text: str) -> str:
    """A name as the graph stores it: `quoted` names unquoted (a doubled backquote is one)."""
    if len(text) >= 2 and text[0] == text[-1] == "`":
        return text[1:-1].replace("``", "`")
    return text


def _word(token: Token | None, *words: str) -> bool:
    return token is not None and token.kind == "word" and token.text.upper() in words


def referenced_names(query: str) -> dict[str, set[str]]:
    """Labels, relationship types and parameters a query names: a name after `:` (or after
    `|`, `&`, `!` in a label expression) is a label, inside a relationship pattern (`-[...]`)
    a relationship type; inside a map it is a value and skipped; `::` is a type predicate.

    >>> names = referenced_names("MATCH (p:Person {name: $name})-[:ACTED_IN]->(m) RETURN m")
    >>> sorted(names["labels"]), sorted(names["types"]), sorted(names["parameters"])
    (['Person'], ['ACTED_IN'], ['name'])
    >>> referenced_names("MATCH p = ()-->() RETURN [n IN nodes(p) WHERE n:A | n.x]")["types"]
    set()
    """
    out: dict[str, set[str]] = {"labels": set(), "types": set(), "parameters": set()}
    _labels_and_types(tokenize(query), out)
    return out


def referenced_properties(query: str) -> set[str]:
    """The property keys a query reads from a node or relationship: `n.key`, the keys of a
    pattern's map (`(n {key: 1})`) and a projection's `.key` (`n {.key}`), where `n` is bound
    by a pattern and never rebound (by `AS`, `UNWIND`, `YIELD`, `=` or `IN`, a variable may
    hold a map, whose keys are not the graph's). What cannot be told from the text (`n[k]`,
    `properties(n)`, a key of a map) is not named: no query is said to read what it may not.

    >>> sorted(referenced_properties("MATCH (p {name: $n})-[r]->(m) RETURN m {.title}, r.x"))
    ['name', 'title', 'x']
    >>> referenced_properties("UNWIND $rows AS r WITH {k: 1} AS m RETURN r.any, m.k")
    set()
    """
    out: set[str] = set()
    _properties(tokenize(query), out)
    return out


def _opener(tokens: list[Token], i: int) -> str:
    """What the bracket `tokens[i]` opens: a pattern node `(` ("node"), a relationship
    `-[` ("rel"), a subquery `{` ("sub"), a map `{` ("map"), or any other bracket ("other")."""
    text = tokens[i].text
    before = tokens[i - 1] if i else None
    if text == "[":
        return "rel" if before is not None and before.text == "-" else "other"
    if text == "{":
        if _word(before, *_SUBQUERY_KEYWORDS) or (before is not None and before.text == ")"):
            return "sub"  # `exists {...}`, `CALL (x) {...}` (and a quantifier's `{1,3}`)
        return "map"
    if before is None or _word(before, *_PATTERN_KEYWORDS):
        return "node"
    if before.kind == "punct" and before.text in {",", "-", ">", "<", "=", "(", "[", "{"}:
        return "node"
    return "other"


def _labels_and_types(tokens: list[Token], out: dict[str, set[str]]) -> None:
    stack: list[str] = []
    expect_label = after_label = False
    before = ""
    for i, token in enumerate(tokens):
        kind, text = token.kind, token.text
        if kind == "parameter" or (before == "$" and kind in {"word", "number"}):
            out["parameters"].add(_name(text.removeprefix("$")))
            expect_label = after_label = False
        elif expect_label and kind == "word":
            context = stack[-1] if stack else ""
            if context == "rel":
                out["types"].add(_name(text))
            elif context != "map":
                out["labels"].add(_name(text))
            expect_label, after_label = False, True
        else:
            if text in OPEN and kind == "punct":
                stack.append(_opener(tokens, i))
            elif text in CLOSE and kind == "punct" and stack:
                stack.pop()
            context = stack[-1] if stack else ""
            if text == ":":
                expect_label = before != ":"  # `x :: INTEGER` is a type predicate
            else:
                # in a list (`[x IN xs WHERE x:A | x.name]`) `|` ends the predicate
                expect_label = (
                    text in _LABEL_OPERATORS
                    and (expect_label or after_label)
                    and not (text == "|" and context == "other")
                )
            after_label = False
        before = text


def _bindings(tokens: list[Token]) -> tuple[set[str], set[str]]:
    """(variables bound in a pattern, variables bound any other way) of a query."""
    in_pattern: set[str] = set()
    other: set[str] = set()
    yielding = False  # in `YIELD a, b AS c`: every name there is bound by the procedure
    for i, token in enumerate(tokens):
        if token.kind != "word":
            yielding = yielding and token.text == ","
            continue
        before = tokens[i - 1] if i else None
        after = tokens[i + 1] if i + 1 < len(tokens) else None
        name = _name(token.text)
        if yielding and not _word(token, *_CLAUSES):
            other.add(name)
            continue
        yielding = _word(token, "YIELD")
        if before is not None and before.text in {".", ":", "$"}:
            continue  # a property, label or parameter
        if _word(before, "AS") or _word(after, "IN") or (after is not None and after.text == "="):
            other.add(name)  # AS x, UNWIND ... AS x, [x IN ...], p = (...), reduce(a = ...)
        elif (
            before is not None
            and before.text in {"(", "["}
            and _opener(tokens, i - 1) in {"node", "rel"}
            and after is not None
            and (after.text in {":", ")", "]", "{", "*"} or _word(after, "WHERE"))
        ):
            in_pattern.add(name)
    return in_pattern, other


def _properties(tokens: list[Token], out: set[str]) -> None:
    in_pattern, other = _bindings(tokens)
    graph_vars = in_pattern - other  # nodes and relationships: what has property keys
    for i, token in enumerate(tokens):
        if token.kind == "word" and _read_key(tokens, i, graph_vars):
            out.add(_name(tokens[i + 2].text))  # n.key
        elif token.kind == "punct" and token.text == "{" and i:
            out.update(_pattern_or_projection_keys(tokens, i, graph_vars))


def _read_key(tokens: list[Token], i: int, graph_vars: set[str]) -> bool:
    """Whether `tokens[i:i+3]` is `var.key` on a node or relationship variable (not
    `a.b.c`'s `b.c`, nor a namespaced function such as `date.truncate(...)`)."""
    if i + 2 >= len(tokens) or tokens[i + 1].text != "." or tokens[i + 2].kind != "word":
        return False
    if i and tokens[i - 1].text in {".", "$"}:
        return False
    if i + 3 < len(tokens) and tokens[i + 3].text == "(":
        return False
    return _name(tokens[i].text) in graph_vars


def _pattern_or_projection_keys(tokens: list[Token], i: int, graph_vars: set[str]) -> set[str]:
    """The property keys of the map opened at `tokens[i]`: a pattern's map (`(n:L {key:
    1})`, `({key: 1})`, `-[r {key: 1}]-`) or a projection of a graph variable (`n {.key}`);
    none for any other map."""
    before = tokens[i - 1]
    ahead = tokens[i - 2] if i >= 2 else None
    entries = _map_keys(tokens, i)
    if before.text in {"(", "["} and _opener(tokens, i - 1) in {"node", "rel"}:
        return entries["keys"]  # ({key: 1})
    if before.kind != "word" or ahead is None:
        return set()
    if ahead.text in {":", *_LABEL_OPERATORS}:
        return entries["keys"]  # (n:Label {key: 1})
    if _name(before.text) not in graph_vars or ahead.text in {".", "$"}:
        return set()
    if ahead.text in {"(", "["} and _opener(tokens, i - 2) in {"node", "rel"}:
        return entries["keys"]  # (n {key: 1})
    return entries["projected"]  # n {.key, alias: n.other}


def _map_keys(tokens: list[Token], start: int) -> dict[str, set[str]]:
    """The `key:` entries and the `.key` entries of the map opened at `tokens[start]`."""
    depth = tokens[start].depth + 1
    keys: set[str] = set()
    projected: set[str] = set()
    for j in range(start + 1, len(tokens)):
        token = tokens[j]
        if token.depth < depth:
            break
        if token.depth != depth or tokens[j - 1].text not in {"{", ","}:
            continue
        nxt = tokens[j + 1] if j + 1 < len(tokens) else None
        if token.kind == "word" and nxt is not None and nxt.text == ":":
            keys.add(_name(token.text))
        elif token.text == "." and nxt is not None and nxt.kind == "word":
            projected.add(_name(nxt.text))
    return {"keys": keys, "projected": projected}


# --- top-level ordering -----------------------------------------------------------------------

_CYPHER_CLAUSE_END = {"skip", "limit", "offset"}
_CYPHER_DIRECTION = {"asc", "desc", "ascending", "descending"}


def top_level_order(query: str, dialect: str | None = None) -> OrderInfo:
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


# --- literals compared with properties ---------------------------------------------------------

# Read by regular expressions over the text, not by the lexer: a pattern's variable, label
# and `{key: value}` map, `v.key op literal` and `literal op v.key` are found where they
# stand, whatever clause holds them (the audit and the verifier's hints both read them so).
_LIT_STRING = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""
_LIT_NUMBER = r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
_LIT_VALUE = rf"({_LIT_STRING}|{_LIT_NUMBER})"
_LIT_IDENT = r"(?:`[^`]+`|[A-Za-z_]\w*)"
_LIT_COMPARE = re.compile(
    rf"({_LIT_IDENT})\s*\.\s*({_LIT_IDENT})\s*"
    rf"(<>|<=|>=|=~|=|<|>|STARTS\s+WITH|ENDS\s+WITH|CONTAINS)\s*{_LIT_VALUE}",
    re.IGNORECASE,
)
_LIT_REVERSED = re.compile(
    rf"{_LIT_VALUE}\s*(<>|<=|>=|=|<|>)\s*({_LIT_IDENT})\s*\.\s*({_LIT_IDENT})"
)
_LIT_IN = re.compile(rf"({_LIT_IDENT})\s*\.\s*({_LIT_IDENT})\s+IN\s*\[([^\]]*)\]", re.IGNORECASE)
_LIT_BINDING = re.compile(rf"([(\[])\s*({_LIT_IDENT})?\s*:\s*({_LIT_IDENT})")
_LIT_PATTERN_MAP = re.compile(
    rf"([(\[])\s*({_LIT_IDENT})?\s*(?::\s*({_LIT_IDENT}))?[^()\[\]{{}}]*\{{([^{{}}]*)\}}"
)
_LIT_ENTRY = re.compile(rf"({_LIT_IDENT})\s*:\s*{_LIT_VALUE}")
_FLIPPED = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "=", "<>": "<>"}


class LiteralComparison(NamedTuple):
    """A property compared with a literal: ``var.key op value``, the operator read from the
    property's side (``3 < n.x`` is ``n.x > 3``); each item of ``n.x IN [...]`` is one
    (op ``IN``); an entry of a pattern's map one with op ``=``, its ``pattern`` (``node``
    for ``(...)``, ``relationship`` for ``[...]``) and the pattern's first ``label``."""

    var: str | None  # None: a pattern map without a variable
    key: str
    op: str  # = <> < <= > >= =~ STARTS WITH, ENDS WITH, CONTAINS, IN
    value: str | int | float
    pattern: str | None = None  # None: in an expression; else "node" or "relationship"
    label: str | None = None  # a pattern map's label or type, if it names one


def label_bindings(query: str) -> list[tuple[str | None, str, bool]]:
    """(variable or None, label or type, in a relationship pattern) of each ``(v:Label``
    and ``[r:TYPE`` of a Cypher query, in order (names unquoted).

    >>> label_bindings("MATCH (p:Person)-[r:ACTED_IN]->(:Movie) RETURN p")
    [('p', 'Person', False), ('r', 'ACTED_IN', True), (None, 'Movie', False)]
    """
    return [
        (_name(m.group(2)) if m.group(2) else None, _name(m.group(3)), m.group(1) == "[")
        for m in _LIT_BINDING.finditer(query)
    ]


def literal_comparisons(query: str) -> list[LiteralComparison]:
    """The literals (strings, numbers) a Cypher query compares with a property: ``v.key op
    literal``, ``literal op v.key``, ``v.key IN [...]`` and ``{key: literal}`` in a pattern,
    in that order (names unquoted, strings unescaped; the same comparison may repeat).

    >>> for c in literal_comparisons("MATCH (p:Person {name: 'Tom'}) WHERE 2000 < p.born "
    ...                              "AND p.name STARTS WITH 'T' RETURN p"):
    ...     print(c.var, c.key, c.op, repr(c.value), c.label)
    p name STARTS WITH 'T' None
    p born > 2000 None
    p name = 'Tom' Person
    """
    out: list[LiteralComparison] = []
    for m in _LIT_COMPARE.finditer(query):
        op = " ".join(m.group(3).upper().split())
        out.append(LiteralComparison(_name(m.group(1)), _name(m.group(2)), op,
                                     _literal(m.group(4))))  # fmt: skip
    for m in _LIT_REVERSED.finditer(query):
        out.append(LiteralComparison(_name(m.group(3)), _name(m.group(4)),
                                     _FLIPPED[m.group(2)], _literal(m.group(1))))  # fmt: skip
    for m in _LIT_IN.finditer(query):
        owner, key = _name(m.group(1)), _name(m.group(2))
        for item in re.finditer(_LIT_VALUE, m.group(3)):
            out.append(LiteralComparison(owner, key, "IN", _literal(item.group(1))))
    for m in _LIT_PATTERN_MAP.finditer(query):
        var = _name(m.group(2)) if m.group(2) else None
        label = _name(m.group(3)) if m.group(3) else None
        pattern = "node" if m.group(1) == "(" else "relationship"
        for entry in _LIT_ENTRY.finditer(m.group(4)):
            out.append(LiteralComparison(var, _name(entry.group(1)), "=",
                                         _literal(entry.group(2)), pattern, label))  # fmt: skip
    return out


def _literal(text: str) -> str | int | float:
    """A string literal unescaped, or a number (an int when written as one)."""
    if text[0] in "'\"":
        return re.sub(r"\\(.)", lambda m: m.group(1), text[1:-1])
    number = float(text)
    return int(number) if re.fullmatch(r"-?\d+", text) else number
