"""Real-world KQL that duckdb-kql 1.1 refuses, rewritten into KQL it runs, and the KQL it
would answer wrongly, refused.

duckdb-kql translates KQL to DuckDB SQL and refuses what it does not cover; its coverage is
data (function tables, see `_kql_functions`) plus a translator with no extension point for
operators. What cannot be a row of its tables is rewritten here, at the KQL level, before
duckdb-kql sees the query: each rule finds one construct in duckdb-kql's own syntax tree
(`duckdb_kql.parse`), replaces its source text by equivalent KQL that duckdb-kql covers,
and raises `KqlRefused` instead when the equivalence does not hold for that use (a name or
type it cannot know, an option it cannot honour). Rules and what they do:

- string literals with escapes duckdb-kql decodes wrongly (`\\u00e9`, `\\x41`, `\\a`, octal):
  decoded by Kusto's rules and written back with the escapes it reads right;
- named arguments of a `let` function, which duckdb-kql binds by position: put in order;
  of a built-in, which Kusto.Language binds by position: the names dropped, the first one
  naming an unnamed result as Kusto names it;
- the deprecated aggregates `makeset`/`makelist` (default maxSize 128) and `argmax`/`argmin`
  (their own result names), `parsejson`, `notempty`: the current functions;
- `make_set`/`make_list` (and `_if`) with a maxSize, which duckdb-kql ignores: queryeval's
  sized rows;
- `percentiles(x, p1, p2, ...)`: one `percentile` per point, named as Kusto names them;
- `mv-expand todynamic(Col)` / `parse_json(Col)` (and a path on it) without a name: named
  as Kusto names it;
- `project-reorder`: a `project` of the listed columns then the others in input order;
- `take n` / `top n` of a `let n = <integer>`: the integer;
- `count(p)` (Kusto's obsolete `countif(p)`): `countif`, named `count_p`;
- `make-series ... on T from A to B step S` over datetimes: per-bin summaries gathered into
  arrays with the default filled in (queryeval's series rows);
- `bin_at(value, size, fixed)`: `bin` shifted by the fixed point's offset;
- `x between (A .. span)`: `A .. A + span`; `range(a, b)`: its step 1 made explicit;
- `partition by K (top 1 by X)`: `arg_max`; `evaluate bag_unpack(c)`: typed columns for the
  keys found in the input (which is run first);
- `let` views and functions with a tabular body (nested ones first): stored functions
  (duckdb-kql's `functions=`), which it expands where they are called as Kusto does;
- `split(s, d, i)`, `indexof(s, x, start)`, `extract_json(path, text[, typeof(T)])`,
  single-level `top-nested`, `join ... on A and B`, `pack` with computed keys, and a
  parenthesized pipeline head: the KQL duckdb-kql reads for them;
- `between (A - 1h .. B + span)`: the bounds parenthesized (`syntax_repaired`).

Refused before any rule: a query of comments only (no query statement, as a let-only one),
and a union of more than `MAX_UNION_INPUTS` inputs (`union *` over hundreds of tables: the
per-input rewriting is the evaluator's cost, past a query's time limit).

    >>> rewrite_kql("T | summarize makeset(a) by b").text
    'T | summarize queryeval_make_set(a, 128) by b'
"""

from __future__ import annotations

import collections
import fnmatch
import functools
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from queryeval.languages.kql import decode_string, quote_name, tokenize


class Inspector(Protocol):
    """What some rules need to know about the data: asked of the engine, in KQL."""

    def columns(self, query: str, functions: tuple[str, ...]) -> list[tuple[str, str]]:
        """The output columns of `query` as (name, DuckDB type), without running it."""

    def bag_slots(self, query: str, functions: tuple[str, ...],
                  column: str) -> list[tuple[str, list[str]]]:  # fmt: skip
        """The top-level keys of the property bags in `column` of `query`'s rows, with the
        JSON types of their non-null values (DuckDB's json_each names)."""


_MAX_PASSES = 12
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$")  # a name that needs no quoting
_NAME = re.compile(r"^[A-Za-z_0-9]*[A-Za-z_][A-Za-z_0-9]*$")  # a name KQL reads unquoted


class KqlRefused(Exception):
    """queryeval will not hand this query to duckdb-kql: it would answer it wrongly, or the
    construct is outside what it runs. The message names the construct."""


@dataclass(frozen=True)
class Rewritten:
    """The query as duckdb-kql is to run it, and the stored-function definitions it needs
    (`let` functions and views with a tabular body, which duckdb-kql runs only as stored
    functions: its `functions=` argument)."""

    text: str
    functions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Edit:
    """Replace `query[start:stop]` by `text`."""

    start: int
    stop: int
    text: str


# -- the syntax tree ---------------------------------------------------------------------------


def _kind(node: Any) -> str:
    name = type(node).__name__
    return name[:-7] if name.endswith("Context") else name


def _is_token(node: Any) -> bool:
    return hasattr(node, "symbol")


def _span(node: Any) -> tuple[int, int]:
    """[start, stop) character offsets of a node or token."""
    if _is_token(node):
        return node.symbol.start, node.symbol.stop + 1
    stop = node.stop.stop + 1 if node.stop is not None else node.start.start
    return node.start.start, max(stop, node.start.start)


def _children(node: Any) -> list[Any]:
    return list(getattr(node, "children", None) or [])


def _rules(node: Any) -> list[Any]:
    return [c for c in _children(node) if not _is_token(c)]


def _walk(node: Any) -> Iterator[Any]:
    """`node` and every rule node under it, in preorder. Iterative: ANTLR's expression
    trees nest a dozen rules per operand, and nested generators cost the depth per node."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        kids = getattr(current, "children", None)
        if kids:
            stack.extend(c for c in reversed(kids) if not hasattr(c, "symbol"))


def _tokens(node: Any) -> Iterator[Any]:
    """The tokens under `node`, in source order (iterative, as `_walk`)."""
    stack = list(reversed(_children(node)))
    while stack:
        current = stack.pop()
        if hasattr(current, "symbol"):
            yield current
        else:
            stack.extend(reversed(_children(current)))


def _collapse(node: Any) -> Any:
    """The innermost node of a chain of single-child wrappers."""
    while True:
        kids = _children(node)
        if len(kids) != 1 or _is_token(kids[0]):
            return node
        node = kids[0]


def _parent(node: Any, *kinds: str) -> Any | None:
    p = getattr(node, "parentCtx", None)
    while p is not None:
        if _kind(p) in kinds:
            return p
        p = getattr(p, "parentCtx", None)
    return None


_NAME_NODES = ("IdentifierName", "IdentifierOrKeywordOrEscapedName", "EscapedName",
               "IdentifierOrExtendedKeywordOrEscapedName", "ParameterName")  # fmt: skip


def _name_of(node: Any) -> str | None:
    """The identifier a name node spells (`a`, `['a b']`), or None."""
    node = _collapse(node)
    if _is_token(node):
        text = node.symbol.text
    elif _kind(node) in ("SimpleNameReference", *_NAME_NODES):
        text = "".join(t.symbol.text for t in _tokens(node))
    else:
        return None
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
            return inner[1:-1]
        return None
    return text if _NAME.match(text) else None


@dataclass
class _Call:
    """A function call: its node, name token and arguments (name clause text or None)."""

    node: Any
    name_token: Any
    name: str
    args: list[Any]

    def arg_names(self) -> list[str | None]:
        """Each argument's `name =` (None when positional; "" when not a plain name)."""
        out: list[str | None] = []
        for arg in self.args:
            named = _collapse(arg)
            clause = next((c for c in _rules(named) if _kind(c) == "NamedExpressionNameClause"),
                          None)  # fmt: skip
            out.append((_name_of(_rules(clause)[0]) or "") if clause is not None else None)
        return out

    def arg_value(self, i: int) -> Any:
        """The argument's expression node (without a `name =` clause)."""
        named = _collapse(self.args[i])
        rules = _rules(named)
        if rules and _kind(rules[0]) == "NamedExpressionNameClause":
            return rules[1]
        return named


_CALLS: collections.OrderedDict[int, tuple[Any, list[_Call]]] = collections.OrderedDict()


def _calls(tree: Any) -> Iterator[_Call]:
    """The function calls under `tree`, in preorder; a whole query's tree is searched once
    (each rule of each pass asks: on a union of hundreds of tables, seconds a search)."""
    if getattr(tree, "parentCtx", None) is not None:
        return _find_calls(tree)
    with _PARSED_LOCK:
        hit = _CALLS.get(id(tree))
    if hit is not None and hit[0] is tree:
        return iter(hit[1])
    found = list(_find_calls(tree))
    with _PARSED_LOCK:
        _CALLS[id(tree)] = (tree, found)  # the tree held: its id is not reused meanwhile
        while len(_CALLS) > _PARSED_SIZE:
            _CALLS.popitem(last=False)
    return iter(found)


def _find_calls(tree: Any) -> Iterator[_Call]:
    for node in _walk(tree):
        if _kind(node) != "NamedFunctionCallExpression":
            continue
        kids = _children(node)
        if not kids or _is_token(kids[0]):
            continue
        tokens = list(_tokens(kids[0]))
        if len(tokens) != 1:
            continue
        args = [c for c in kids if not _is_token(c) and _kind(c) == "ArgumentExpression"]
        yield _Call(node, tokens[0], tokens[0].symbol.text, args)


def _as_column(node: Any) -> str | None:
    """The column a bare name reference names, else None."""
    node = _collapse(node)
    if _kind(node) in ("SimpleNameReference", "NameReferenceWithDataScope", *_NAME_NODES):
        return _name_of(node)
    return None


def _integer_literal(node: Any) -> int | None:
    node = _collapse(node)
    if _kind(node) in ("LongLiteralExpression", "IntLiteralExpression"):
        try:
            return int(node.getText())
        except ValueError:
            return None
    return None


def _number_literal(node: Any) -> str | None:
    node = _collapse(node)
    if _kind(node) in ("LongLiteralExpression", "IntLiteralExpression", "RealLiteralExpression"):
        text = str(node.getText())
        return text if re.fullmatch(r"\d+(\.\d+)?", text) else None
    return None


# -- the rewriting loop ------------------------------------------------------------------------


@dataclass
class _Query:
    text: str
    tree: Any
    inspector: Inspector | None
    functions: list[str] = field(default_factory=list)

    @functools.cached_property
    def nodes(self) -> list[Any]:
        """Every rule node of the tree in preorder (`_walk`), listed once: each rule reads
        them all."""
        return list(_walk(self.tree))

    def source(self, node: Any) -> str:
        start, stop = _span(node)
        return self.text[start:stop]

    def lets(self) -> dict[str, Any]:
        """Top-level `let` declarations: name -> declaration node."""
        out: dict[str, Any] = {}
        for node in self.nodes:
            if _kind(node) in ("LetVariableDeclaration", "LetFunctionDeclaration"):
                names = [c for c in _rules(node) if _kind(c) in _NAME_NODES]
                name = _name_of(names[0]) if names else None
                if name:
                    out.setdefault(name, node)
        return out

    def columns_before(self, operator: Any, what: str) -> list[tuple[str, str]]:
        """The columns flowing into the piped operator `operator` (via the engine)."""
        inspector, prefix = self._before(operator, what)
        try:
            return inspector.columns(prefix, tuple(self.functions))
        except KqlRefused:
            raise
        except Exception as exc:
            if _names_a_missing_name(exc):
                raise  # the query's own error (its input names no such table or column)
            raise KqlRefused(f"{what}: the input columns are unknown ({exc})") from None

    def slots_before(self, operator: Any, column: str, what: str) -> list[tuple[str, list[str]]]:
        """The property-bag keys of `column` flowing into `operator` (runs the input)."""
        inspector, prefix = self._before(operator, what)
        try:
            return inspector.bag_slots(prefix, tuple(self.functions), column)
        except KqlRefused:
            raise
        except Exception as exc:
            if _names_a_missing_name(exc):
                raise  # the query's own error (its input names no such table or column)
            raise KqlRefused(f"{what}: the input's keys are unknown ({exc})") from None

    def _before(self, operator: Any, what: str) -> tuple[Inspector, str]:
        """The engine and the KQL of everything flowing into `operator`."""
        if self.inspector is None:
            raise KqlRefused(f"{what} needs the input columns, and no engine is at hand")
        piped = _parent(operator, "PipedOperator")
        pipe = _parent(operator, "PipeExpression")
        if piped is None or pipe is None:
            raise KqlRefused(f"{what} outside a pipeline")
        start, _ = _span(pipe)
        bar, _ = _span(piped)
        statement = _parent(pipe, "Statement")
        if statement is not None and _parent(statement, "LetFunctionBody") is not None:
            raise KqlRefused(f"{what} inside a function body")
        top = statement
        while top is not None and _parent(top, "Statement") is not None:
            top = _parent(top, "Statement")
        if _parent(pipe, "LetFunctionBody") is not None:
            raise KqlRefused(f"{what} inside a function body")
        body = self.text[start:bar]
        head = self._head(top, body) if top is not None else ""
        return self.inspector, head + body

    def _head(self, top: Any, body: str) -> str:
        """The statements before `top` that `body` needs: a long `let` (a union of many
        tables) that neither `body`, the stored functions nor a statement kept after it
        names is left out. It cannot change the columns flowing into `body`, and an unread
        `let` over a union of hundreds of tables took seconds to inspect with each input."""
        query = getattr(top, "parentCtx", None)
        statements = _rules(query) if query is not None else []
        if not any(s is top for s in statements):
            return self.text[: _span(top)[0]]
        before = statements[: next(i for i, s in enumerate(statements) if s is top)]
        if not before:
            return self.text[: _span(top)[0]]
        starts = [_span(s)[0] for s in before] + [_span(top)[0]]
        # the body and the stored functions handed over with it (hoisted `let`s)
        needed = set(_WORD.findall(" ".join([body, *self.functions])))
        kept: list[str] = []
        for i in reversed(range(len(before))):
            segment = self.text[starts[i] : starts[i + 1]]  # the statement and its `;`
            name = _let_name(before[i])
            if (name is not None and _IDENT.match(name) and name not in needed
                    and len(segment) > _LONG_LET):  # fmt: skip
                continue
            kept.append(segment)
            needed |= set(_WORD.findall(segment))
        return self.text[: starts[0]] + "".join(reversed(kept))


_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_LONG_LET = 4000  # characters of a `let` statement left out of an inspected input unread


def _let_name(statement: Any) -> str | None:
    """The name a top-level `let` statement declares (None for another statement)."""
    for node in _walk(statement):
        if _kind(node) in ("LetVariableDeclaration", "LetFunctionDeclaration"):
            names = [c for c in _rules(node) if _kind(c) in _NAME_NODES]
            return _name_of(names[0]) if names else None
    return None


def _names_a_missing_name(exc: BaseException) -> bool:
    """Whether inspecting a query's input failed as the input names a table the database
    lacks (DuckDB's catalog error, duckdb-kql's unknown table) or a column its own input
    lacks (DuckDB's binder error): the query's own error, as it is without the operator."""
    text = str(exc)
    return (
        "Table with name" in text
        or "unknown table" in str(getattr(exc, "hint", ""))
        or ("Referenced column" in text and "not found" in text)
    )


_PARSED: collections.OrderedDict[str, Any] = collections.OrderedDict()
_PARSED_SIZE = 64  # trees kept: a query's passes, its prefixes and a second engine's
_PARSED_LOCK = threading.Lock()


def parsed(text: str) -> Any:
    """duckdb-kql's syntax tree of `text` (None when it does not parse or is a control
    command), the last few kept: ANTLR's Python parser is most of a rewrite's cost, and the
    same texts come back (each pass, each prefix a rule inspects, each engine of a run).
    The trees are read, never changed.

    >>> parsed("T | take 1") is parsed("T | take 1"), parsed("T | where")
    (True, None)
    """
    from duckdb_kql import KqlSyntaxError
    from duckdb_kql import parse as parse_kql

    with _PARSED_LOCK:
        if text in _PARSED:
            _PARSED.move_to_end(text)
            return _PARSED[text]
    try:
        tree = parse_kql(text).tree
    except KqlSyntaxError:
        tree = None
    with _PARSED_LOCK:
        _PARSED[text] = tree
        while len(_PARSED) > _PARSED_SIZE:
            _PARSED.popitem(last=False)
    return tree


def rewrite_kql(query: str, inspector: Inspector | None = None,
                functions: tuple[str, ...] = ()) -> Rewritten:  # fmt: skip
    """`query` as KQL duckdb-kql runs with the same answer, or KqlRefused. A query that
    does not parse is returned unchanged (duckdb-kql reports the syntax error); one of
    comments only is refused as a let-only one is (Kusto.Language finds no error in it, and
    Kusto's docs require a tabular expression statement of a query)."""
    tokens = tokenize(query)
    if _union_width(tokens) > MAX_UNION_INPUTS:
        _check_wide_unions(query, inspector)
    if all(t.text == ";" for t in tokens):
        raise KqlRefused(
            "no query statement found (the query is only comments: Kusto's docs require a "
            "tabular expression statement)"
        )
    text = query
    hoisted = list(functions)
    for _ in range(_MAX_PASSES):
        text = syntax_repaired(text)
        tree = parsed(text)
        if tree is None:  # not KQL it parses (a control command, a syntax error): as is
            return Rewritten(text, tuple(hoisted))
        q = _Query(text, tree, inspector, hoisted)
        edits = _edits(q, RULES + _kusto_rules())
        if not edits:  # the rest done: function bodies are final, hand them over
            edits = _edits(q, (_hoist_functions,))
        if not edits:
            if _TABLE_PARAMETER in text:
                raise KqlRefused("table() of a function parameter that a call does not give "
                                 "as a string literal")  # fmt: skip
            return Rewritten(text, tuple(hoisted))
        text = _apply(text, edits)
    raise KqlRefused("the query kept changing under rewriting")


MAX_UNION_INPUTS = 64  # inputs of one union whose columns may be asked of the engine


def _check_wide_unions(query: str, inspector: Inspector | None) -> None:
    """KqlRefused for a union of more than `MAX_UNION_INPUTS` inputs of which some input's
    columns are not known from the catalog (a table, or a table's `project` as
    `wildcard_unions` writes it): each such input would be rewritten and translated on its
    own to learn its columns (about 0.4 s of CPU apiece), the evaluator's cost. Decided by
    the count of inputs alone, the same on a loaded machine."""
    from queryeval.engines._kql_rewrite_kusto import (
        MAX_WILDCARD_COLUMNS,
        catalog,
        static_leg_columns,
    )

    tree = parsed(syntax_repaired(query))
    if tree is None:
        return
    q = _Query(query, tree, inspector)
    lets = q.lets()
    tables = {t: cols for t, cols in catalog(q).items() if t not in lets}
    for node in q.nodes:
        if _kind(node) != "UnionOperator":
            continue
        legs = [c for c in _rules(node) if _kind(c) == "UnionOperatorExpression"]
        if len(legs) <= MAX_UNION_INPUTS:
            continue
        known = [static_leg_columns(q.source(leg), tables) for leg in legs]
        unknown = sum(cols is None for cols in known)
        width = sum(len(cols) for cols in known if cols is not None)
        if not unknown and width > MAX_WILDCARD_COLUMNS:
            raise KqlRefused(
                f"a union of {len(legs)} tables ({width} columns in all) whose every column "
                f"the query may read: past the embedded engine's {MAX_WILDCARD_COLUMNS} columns"
            )
        if unknown:
            raise KqlRefused(
                f"a union of {len(legs)} inputs, {unknown} of them other than a table or its "
                f"columns: the embedded engine rewrites and translates each such input on its "
                f"own to learn its columns (about 0.4 s of CPU apiece), past a query's time "
                f"limit beyond {MAX_UNION_INPUTS} inputs; the evaluator's cost, not the query's"
            )


def _union_width(tokens: list[Any]) -> int:
    """The most inputs of any `union` in the query (0 without one): its commas at its own
    depth, up to the pipe, `;` or closing bracket that ends it, plus one.

    >>> _union_width(tokenize("union (A | take 1), B, (C) | take 1; union D"))
    3
    """
    widest = 0
    for i, token in enumerate(tokens):
        if token.kind != "word" or token.text.lower() != "union":
            continue
        commas = 0
        for later in tokens[i + 1 :]:
            if later.depth < token.depth or (later.depth == token.depth and later.text in "|;"):
                break  # a bracket closing around the union, or its end
            if later.depth == token.depth and later.text == ",":
                commas += 1
        widest = max(widest, commas + 1)
    return widest


def syntax_repaired(text: str) -> str:
    """`text` itself when duckdb-kql parses it; else, when that makes it parse, with the
    repairs of KQL its grammar does not read but Kusto's does (`_parenthesized_bounds`),
    which change no meaning.

    >>> syntax_repaired("T | where t between (a - 1h .. a)")
    'T | where t between ((a - 1h) .. a)'
    """
    if parsed(text) is not None:
        return text
    repaired = _parenthesized_bounds(_table_calls(text))
    if parsed(repaired) is None:
        repaired = _table_names(repaired)
    return repaired if repaired != text and parsed(repaired) is not None else text


def _table_names(text: str) -> str:
    """`table` as a column name (`mv-apply table = ...`, `join ... on table`), which
    Kusto.Language reads as a name where no `(` follows and duckdb-kql's grammar reads only
    as the table() function: written `['table']`, the same name."""
    tokens = tokenize(text)
    edits = [Edit(t.start, t.end, "['table']") for i, t in enumerate(tokens)
             if t.kind == "word" and t.text == "table"
             and (i + 1 == len(tokens) or tokens[i + 1].text != "(")
             and (i == 0 or tokens[i - 1].text != ".")]  # fmt: skip
    return _apply(text, edits) if edits else text


_TABLE_PARAMETER = "queryeval_table_of_"  # table(p) of a parameter p, until the call gives p


def _table_calls(text: str) -> str:
    """`table("T")` as the name T (the table docs: the table the string names), and
    `table(p)` of a name (a function's parameter) as a placeholder name that
    `_inline_parameter_calls` replaces by the table the call names (refused otherwise)."""
    tokens = tokenize(text)
    edits = []
    for i in range(len(tokens) - 3):
        word, opener, arg, closer = tokens[i : i + 4]
        if word.text.lower() != "table" or opener.text != "(" or closer.text != ")":
            continue
        if i and tokens[i - 1].text == ".":
            continue
        if arg.kind == "string" and arg.text[:1] in "'\"":
            edits.append(Edit(word.start, closer.end, quote_name(_literal_value(arg.text))))
        elif arg.kind == "word" and _IDENT.match(arg.text):
            edits.append(Edit(word.start, closer.end, _TABLE_PARAMETER + arg.text))
    return _apply(text, edits) if edits else text


def _parenthesized_bounds(text: str) -> str:
    """`x between (A .. B + span)`: each bound that is more than one token parenthesized,
    `(A) .. (B + span)`, the same expressions in Kusto (`..` separates whole expressions);
    duckdb-kql's grammar reads only a primary expression there."""
    tokens = tokenize(text)
    edits: list[Edit] = []
    for i, token in enumerate(tokens[:-1]):
        opener = tokens[i + 1]
        if token.text.lower() != "between" or opener.text != "(":
            continue
        close = next((t for t in tokens[i + 2 :] if t.depth == opener.depth and t.text == ")"),
                     None)  # fmt: skip
        if close is None:
            continue
        inner = [t for t in tokens[i + 2 :] if t.start < close.start]
        dots = [k for k in range(len(inner) - 1)
                if inner[k].text == inner[k + 1].text == "." and inner[k].depth == opener.depth + 1
                and inner[k].end == inner[k + 1].start]  # fmt: skip
        if len(dots) != 1:
            continue
        low, high = inner[: dots[0]], inner[dots[0] + 2 :]
        for part in (low, high):
            if len(part) > 1:
                edits.append(Edit(part[0].start, part[0].start, "("))
                edits.append(Edit(part[-1].end, part[-1].end, ")"))
    return _apply(text, edits) if edits else text


def _kusto_rules() -> tuple[Callable[[_Query], list[Edit]], ...]:
    """The rules that make duckdb-kql's answers Kusto's (`_kql_rewrite_kusto`, which builds
    on this module)."""
    from queryeval.engines._kql_rewrite_kusto import KUSTO_RULES

    return KUSTO_RULES


def _edits(q: _Query, rules: tuple[Callable[[_Query], list[Edit]], ...]) -> list[Edit]:
    edits: list[Edit] = []
    for rule in rules:
        try:
            found = rule(q)
        except KqlRefused:
            raise
        except Exception as exc:  # a query shape the rule does not know: not run
            if _names_a_missing_name(exc):
                raise
            raise KqlRefused(
                f"queryeval's {rule.__name__.strip('_')} rewrite failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        edits.extend(e for e in found if q.text[e.start : e.stop] != e.text)
    return edits


def _apply(text: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits (the outermost first; nested ones wait a pass)."""
    chosen: list[Edit] = []
    for edit in sorted(edits, key=lambda e: (e.start, -e.stop)):
        if chosen and edit.start < chosen[-1].stop:
            continue
        chosen.append(edit)
    out, pos = [], 0
    for edit in chosen:
        out.append(text[pos : edit.start])
        out.append(edit.text)
        pos = edit.stop
    out.append(text[pos:])
    return "".join(out)


# -- rule: string literals ---------------------------------------------------------------------

# an escape duckdb-kql decodes differently from Kusto, after any run of escaped backslashes
_WRONG_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\[uxabfv0-9]")


def _decode(body: str) -> str:
    """A string literal's body decoded by Kusto's rules; refused when it holds an unpaired
    UTF-16 surrogate or a malformed escape."""
    try:
        return decode_string(body)
    except ValueError as exc:
        raise KqlRefused(str(exc)) from None


def _literal_value(text: str) -> str:
    """The value of one string literal's source text (regular or verbatim)."""
    verbatim = text.startswith("@")
    body = text[1:] if verbatim else text
    if len(body) < 2 or body[0] not in "'\"" or body[-1] != body[0]:
        raise KqlRefused("a string literal of an unexpected form")
    quote, inner = body[0], body[1:-1]
    return inner.replace(quote * 2, quote) if verbatim else _decode(inner)


def _encode_for_duckdb_kql(value: str, quote: str) -> str:
    """A literal duckdb-kql decodes to `value` (it reads \\\\, \\', \\", \\n, \\r, \\t)."""
    out = [quote]
    for ch in value:
        if ch in ("\\", quote):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\0":
            raise KqlRefused("a string literal holds a NUL character")
        else:
            out.append(ch)
    out.append(quote)
    return "".join(out)


def _string_literals(q: _Query) -> list[Edit]:
    edits = []
    for node in q.nodes:
        if _kind(node) != "StringLiteralExpression":
            continue
        for token in _tokens(node):
            text = token.symbol.text
            if not text or text[0] not in "'\"" or not _WRONG_ESCAPE.search(text):
                continue  # verbatim (@'...'), obfuscated (h'...') and multi-line ones keep theirs
            quote = text[0]
            body = text[1:-1] if len(text) >= 2 and text[-1] == quote else text[1:]
            value = _decode(body)
            start, stop = _span(token)
            if "\0" in value and _is_argument(node):  # `replace_string(s, '\u0000', '')`
                parts = [_encode_for_duckdb_kql(p, quote) for p in value.split("\0")]
                edits.append(Edit(start, stop, f"strcat({', queryeval_nul(), '.join(parts)})"))
                continue
            edits.append(Edit(start, stop, _encode_for_duckdb_kql(value, quote)))
    return edits


def _is_argument(literal: Any) -> bool:
    """Whether a string literal is a whole argument of a function call (where any string
    expression may stand)."""
    argument = _parent(literal, "ArgumentExpression")
    return argument is not None and _span(argument) == _span(literal)


# -- rule: named arguments ---------------------------------------------------------------------


def _builtin_named_arguments(call: _Call, names: list[str | None]) -> list[Edit]:
    edits = []
    for i, name in enumerate(names):
        if name is not None:
            edits.append(Edit(_span(call.args[i])[0], _span(call.arg_value(i))[0], ""))
    if _unnamed_whole(call.node) is not None and names[0] is not None:
        if call.name.lower() not in _FIRST_ARGUMENT_NAMED or not names[0]:
            raise KqlRefused(f"{call.name}() with a named first argument naming its result")
        a = _span(call.node)[0]
        edits.append(Edit(a, a, f"{quote_name(names[0])} = "))
    return edits


def _let_function_parameters(declaration: Any, q: _Query) -> list[tuple[str, str | None]]:
    params = next((c for c in _rules(declaration) if _kind(c) == "LetFunctionParameterList"), None)
    out: list[tuple[str, str | None]] = []
    if params is None:
        return out
    for param in _rules(params):
        if _kind(param) != "ScalarParameter":
            raise KqlRefused("named arguments of a function with a tabular parameter")
        kids = _rules(param)
        name = _name_of(kids[0])
        if name is None:
            raise KqlRefused("named arguments: a parameter name is not plain")
        default = next((c for c in kids if _kind(c) == "ScalarParameterDefault"), None)
        value = None
        if default is not None:
            value = q.source(_rules(default)[0])
        out.append((name, value))
    return out


# Built-in functions whose unnamed result takes its first argument's name (Kusto.Language's
# ResultNameKind.FirstArgument; `bin(x = Ts, 1h)` is a column named x).
# fmt: off
_FIRST_ARGUMENT_NAMED = frozenset({
    "abs", "acos", "asin", "atan", "atan2", "bin", "bin_at", "binary_all_and", "binary_all_or",
    "binary_all_xor", "binary_and", "binary_not", "binary_or", "binary_shift_left",
    "binary_shift_right", "binary_xor", "bitset_count_ones", "ceiling", "cos", "erf", "erfc",
    "exp", "exp10", "exp2", "floor", "format_bytes", "format_datetime", "format_timespan",
    "gamma", "log", "log10", "log2", "loggamma", "parse_csv", "parse_json", "parse_xml",
    "parsejson", "pow", "round", "sin", "split", "sqrt", "startofday", "tan", "tobool",
    "toboolean", "todatetime", "todecimal", "todouble", "todynamic", "toguid", "tohex",
    "toint", "tolong", "toobject", "toreal", "tostring", "totime", "totimespan",
})
# fmt: on


def _named_arguments(q: _Query) -> list[Edit]:
    """Named arguments: to a `let` function, bound by name (duckdb-kql binds by position);
    to a built-in, where Kusto.Language binds by position and the name only names an
    unnamed result, the names dropped (and the result named when Kusto names it so)."""
    edits = []
    lets = None
    for call in _calls(q.tree):
        names = call.arg_names()
        if all(n is None for n in names):
            continue
        lets = q.lets() if lets is None else lets
        declaration = lets.get(call.name)
        if declaration is None:
            edits.extend(_builtin_named_arguments(call, names))
            continue
        if _kind(declaration) != "LetFunctionDeclaration":
            raise KqlRefused(f"named arguments to {call.name}, which is not a function")
        params = _let_function_parameters(declaration, q)
        # a positional argument takes the parameter at its position (as Kusto.Language
        # binds `f(a = 1, "x")`); one that meets a named one is refused below
        given: dict[str, str] = {}
        for i, name in enumerate(names):
            key = name if name is not None else (params[i][0] if i < len(params) else None)
            if key is None or key not in dict(params) or key in given:
                raise KqlRefused(f"{call.name}(): argument {name or i} matches no parameter")
            given[key] = q.source(call.arg_value(i))
        ordered: list[str] = []
        for pname, default in params:
            if pname in given:
                ordered.append(given[pname])
            elif default is not None:
                ordered.append(default)
            else:
                raise KqlRefused(f"{call.name}(): no value for parameter {pname}")
        first, last = _span(call.args[0])[0], _span(call.args[-1])[1]
        edits.append(Edit(first, last, ", ".join(ordered)))
    return edits


# -- rule: deprecated and size-limited aggregates ---------------------------------------------

_RENAMES = {"parsejson": "parse_json", "notempty": "isnotempty"}
_DEPRECATED_LISTS = {"makeset": "make_set", "makelist": "make_list"}
# aggregates with a maxSize argument (its position), which duckdb-kql's own rows ignore
_SIZED = {"make_set": 1, "make_list": 1, "make_set_if": 2, "make_list_if": 2}


def _aggregates(q: _Query) -> list[Edit]:
    """Deprecated names to current ones; a maxSize honoured through queryeval's sized rows
    (`_kql_functions`), which keep Kusto's result names (`set_x`, `list_x`)."""
    edits = []
    for call in _calls(q.tree):
        lower = call.name.lower()
        start, stop = _span(call.name_token)
        if lower in _RENAMES:
            edits.append(Edit(start, stop, _RENAMES[lower]))
        elif lower in _DEPRECATED_LISTS and len(call.args) in (1, 2):
            edits.append(Edit(start, stop, f"queryeval_{_DEPRECATED_LISTS[lower]}"))
            if len(call.args) == 1:  # the deprecated forms keep at most 128 elements
                end = _span(call.args[0])[1]
                edits.append(Edit(end, end, ", 128"))
        elif lower in _SIZED and len(call.args) == _SIZED[lower] + 1:
            edits.append(Edit(start, stop, f"queryeval_{lower}"))
    return edits


def _whole_of(node: Any) -> Any | None:
    """The NamedExpression whose whole value is `node`, else None."""
    parent = _parent(node, "NamedExpression")
    if parent is None or _collapse(_rules(parent)[-1]) is not node:
        return None
    return parent


def _unnamed_whole(node: Any) -> Any | None:
    """The NamedExpression whose whole value is `node` and that has no `name =`, else None
    (Kusto then names the result after the expression)."""
    whole = _whole_of(node)
    if whole is None or _kind(_rules(whole)[0]) == "NamedExpressionNameClause":
        return None
    return whole


def _result_name(argument: Any, prefix: str, what: str) -> str:
    """`prefix` + the column `argument` names, quoted: Kusto's name for an unnamed result
    named after its first argument; refused for an argument that is not a column."""
    column = _as_column(argument)
    if column is None:
        raise KqlRefused(f"{what} of an expression without a name")
    return quote_name(prefix + column)


def _is_named(call: _Call) -> bool:
    """The call is the whole of a `name = call` expression."""
    return _whole_of(call.node) is not None and _unnamed_whole(call.node) is None


def _is_whole_expression(call: _Call) -> Any | None:
    """The NamedExpression whose whole value is this call, else None."""
    return _whole_of(call.node)


# -- rule: percentiles -------------------------------------------------------------------------


def _percentiles(q: _Query) -> list[Edit]:
    edits = []
    for call in _calls(q.tree):
        if call.name.lower() != "percentiles":
            continue
        whole = _is_whole_expression(call)
        if whole is None or _parent(call.node, "SummarizeOperator") is None:
            raise KqlRefused("percentiles() inside a larger expression")
        points = [_number_literal(call.arg_value(i)) for i in range(1, len(call.args))]
        if not points or any(p is None for p in points):
            raise KqlRefused("percentiles() with points that are not number literals")
        value = q.source(call.arg_value(0))
        rules = _rules(whole)
        names: list[str]
        if _kind(rules[0]) == "NamedExpressionNameClause":
            listed = next((c for c in _rules(rules[0]) if _kind(c) == "NamedExpressionNameList"),
                          None)  # fmt: skip
            if listed is None:
                raise KqlRefused("percentiles() with one name for several results")
            names = [n for n in (_name_of(c) for c in _rules(listed)) if n]
            if len(names) != len(points):
                raise KqlRefused("percentiles(): as many names as points are needed")
        else:
            column = _as_column(call.arg_value(0))
            if column is None:
                raise KqlRefused("percentiles() of an expression without names")
            names = [f"percentile_{column}_{str(p).replace('.', '_')}" for p in points]
        parts = [f"{quote_name(n)} = percentile({value}, {p})"
                 for n, p in zip(names, points, strict=True)]  # fmt: skip
        a, b = _span(whole)
        edits.append(Edit(a, b, ", ".join(parts)))
    return edits


# -- rule: deprecated argmax / argmin ----------------------------------------------------------


def _argmax(q: _Query) -> list[Edit]:
    edits = []
    for call in _calls(q.tree):
        lower = call.name.lower()
        if lower not in ("argmax", "argmin"):
            continue
        summarize = _parent(call.node, "SummarizeOperator")
        whole = _is_whole_expression(call)
        if summarize is None or whole is None or _is_named(call):
            raise KqlRefused(f"{call.name}() outside the plain `summarize {call.name}(...)` form")
        prefix = "max" if lower == "argmax" else "min"
        primary = _as_column(call.arg_value(0))
        if primary is None:
            raise KqlRefused(f"{call.name}() of an expression")
        by = [_as_column(_collapse(n)) for c in _rules(summarize)
              if _kind(c) == "SummarizeOperatorByClause" for n in _rules(c)]  # fmt: skip
        renames = [(f"{prefix}_{primary}", primary)]
        for i in range(1, len(call.args)):
            value = _collapse(call.arg_value(i))
            if _kind(value) in ("StarExpression", "Wildcard") or q.source(value).strip() == "*":
                columns = [name for name, _ in q.columns_before(summarize, call.name)]
                returned = [c for c in columns if c != primary and c not in by]
            else:
                column = _as_column(value)
                if column is None:
                    raise KqlRefused(f"{call.name}() returning an expression")
                returned = [column] if column != primary and column not in by else []
            for column in returned:
                if all(old != column for _, old in renames):
                    renames.append((f"{prefix}_{primary}_{column}", column))
        others = [r for r in _rules(summarize) if r is not whole and _kind(r) == "NamedExpression"]
        if others:
            raise KqlRefused(f"{call.name}() beside other aggregates")
        a, b = _span(call.name_token)
        edits.append(Edit(a, b, "arg_" + prefix))
        end = _span(summarize)[1]
        renamed = ", ".join(f"{quote_name(new)} = {quote_name(old)}" for new, old in renames)
        edits.append(Edit(end, end, f" | project-rename {renamed}"))
    return edits


# -- rule: mv-expand of an unnamed todynamic(Col) ------------------------------------------------

_TO_DYNAMIC = {"todynamic", "parse_json", "parsejson", "toobject"}


def _mv_expand_names(q: _Query) -> list[Edit]:
    edits = []
    for node in q.nodes:
        if _kind(node) not in ("MvexpandOperator", "MvExpandOperator"):
            continue
        for item in _rules(node):
            if _kind(item) != "MvexpandOperatorExpression":
                continue
            named = next((c for c in _rules(item) if _kind(c) == "NamedExpression"), None)
            if named is None or _kind(_rules(named)[0]) == "NamedExpressionNameClause":
                continue
            value = _collapse(_rules(named)[-1])
            name = _dynamic_source_name(value)
            if name is None:
                continue  # left for duckdb-kql to run or refuse
            start, _ = _span(named)
            edits.append(Edit(start, start, f"{quote_name(name)} = "))
    return edits


def _dynamic_source_name(value: Any) -> str | None:
    """Kusto's name for `todynamic(Col)` (Col) or a path on it or on a column (`Col_x`);
    None otherwise."""
    if _kind(value) == "NamedFunctionCallExpression":
        calls = list(_calls(value))
        call = calls[0] if calls else None
        if call is None or call.node is not value or call.name.lower() not in _TO_DYNAMIC:
            return None
        if len(call.args) != 1:
            return None
        return _as_column(call.arg_value(0))
    if _kind(value) == "FunctionCallOrPathPathExpression":
        parts = _rules(value)
        if len(parts) != 2:
            return None
        root = _collapse(parts[0])
        base = _dynamic_source_name(root)
        if base is None and _kind(root) != "FunctionCallOrPathPathExpression":
            base = _as_column(root)  # `Col.x`: Kusto.Language names it Col_x too
        if base is None:
            return None
        member = [t.symbol.text for t in _tokens(parts[1])]
        if len(member) == 2 and member[0] == "." and _IDENT.match(member[1]):
            return f"{base}_{member[1]}"
        if len(member) == 3 and member[0] == "[" and member[2] == "]":
            key = member[1]
            if len(key) >= 2 and key[0] == key[-1] and key[0] in "'\"" and "\\" not in key:
                return f"{base}_{key[1:-1]}"
        return None
    return None


# -- rule: project-reorder ---------------------------------------------------------------------


def _project_reorder(q: _Query) -> list[Edit]:
    edits = []
    for node in q.nodes:
        if _kind(node) != "ProjectReorderOperator":
            continue
        patterns: list[str] = []
        for item in _rules(node):
            if _kind(item) != "ProjectReorderExpression":
                continue
            if len(list(_tokens(item))) != len(list(_tokens(_rules(item)[0]))):
                raise KqlRefused("project-reorder with asc/desc/granny ordering")
            text = "".join(t.symbol.text for t in _tokens(item))
            name = _name_of(_rules(item)[0]) if "*" not in text else None
            patterns.append(name if name is not None else text)
        columns = [name for name, _ in q.columns_before(node, "project-reorder")]
        first: list[str] = []
        for pattern in patterns:
            if "*" in pattern:
                matched = [c for c in columns if fnmatch.fnmatchcase(c, pattern)]
            else:
                matched = [pattern] if pattern in columns else []
                if not matched:
                    raise KqlRefused(f"project-reorder: no column {pattern!r}")
            first.extend(c for c in matched if c not in first)
        order = first + [c for c in columns if c not in first]
        a, b = _span(node)
        edits.append(Edit(a, b, "project " + ", ".join(quote_name(c) for c in order)))
    return edits


# -- rule: take/top of a let-bound integer -----------------------------------------------------


def _let_counts(q: _Query) -> list[Edit]:
    edits = []
    lets = None
    for node in q.nodes:
        if _kind(node) not in ("TakeOperator", "TopOperator", "TopHittersOperator"):
            continue
        rules = _rules(node)
        if not rules:
            continue
        count = _collapse(rules[0])
        name = _as_column(count)
        if name is None:
            continue
        lets = q.lets() if lets is None else lets
        declaration = lets.get(name)
        if declaration is None or _kind(declaration) != "LetVariableDeclaration":
            continue
        value = _integer_literal(_rules(declaration)[-1])
        if value is None:
            continue
        a, b = _span(count)
        edits.append(Edit(a, b, str(value)))
    return edits


# -- rule: bin_at --------------------------------------------------------------------------------


_DATETIME_CALLS = {"datetime", "now", "ago", "todatetime", "startofday", "startofweek",
                   "startofmonth", "startofyear", "endofday", "endofweek", "endofmonth",
                   "endofyear", "datetime_add", "make_datetime"}  # fmt: skip


def _bin_at_kind(node: Any) -> str | None:
    """ "datetime" or "number" when the fixed point's type shows in its text, else None
    (a timespan, whose `bin` duckdb-kql computes as a datetime inside an expression)."""
    node = _collapse(node)
    if _number_literal(node) is not None:
        return "number"
    if _kind(node) in ("DateTimeLiteralExpression",):
        return "datetime"
    calls = list(_calls(node))
    if calls and calls[0].node is node and calls[0].name.lower() in _DATETIME_CALLS:
        return "datetime"
    return None


def _bin_at(q: _Query) -> list[Edit]:
    edits = []
    for call in _calls(q.tree):
        if call.name.lower() != "bin_at" or len(call.args) != 3:
            continue
        fixed = call.arg_value(2)
        if _bin_at_kind(fixed) is None and not _datetime_like(q, fixed):
            raise KqlRefused("bin_at() whose fixed point is not a datetime or a number")
        value, size, fixed = (f"({q.source(call.arg_value(i))})" for i in range(3))
        offset = f"({fixed} - bin({fixed}, {size}))"
        expression = f"(bin({value} - {offset}, {size}) + {offset})"
        whole = _unnamed_whole(call.node)
        a, b = _span(call.node)
        if whole is not None and _parent(call.node, "WhereOperator") is None:
            expression = f"{_result_name(call.arg_value(0), '', 'bin_at()')} = {expression}"
            a, b = _span(whole)
        edits.append(Edit(a, b, expression))
    return edits


# -- rule: split with an index ------------------------------------------------------------------


def _split_index(q: _Query) -> list[Edit]:
    """`split(s, d, i)`: the i-th piece in an array (empty when there is none)."""
    edits = []
    for call in _calls(q.tree):
        if call.name.lower() != "split" or len(call.args) != 3:
            continue
        index = _integer_literal(call.arg_value(2))
        if index is None or index < 0:
            raise KqlRefused("split() with an index that is not a non-negative integer")
        text, delimiter = q.source(call.arg_value(0)), q.source(call.arg_value(1))
        a, b = _span(call.node)
        edits.append(Edit(a, b, f"array_slice(split({text}, {delimiter}), {index}, {index})"))
    return edits


# -- rule: top-nested with one level -------------------------------------------------------------


def _top_nested(q: _Query) -> list[Edit]:
    """`top-nested N of Col by Agg [asc|desc]` (one level, no `with others`): the top N
    groups of a summarize, named as Kusto names them (`Col`, `aggregated_Col`)."""
    edits = []
    for node in q.nodes:
        if _kind(node) != "TopNestedOperator":
            continue
        parts = [p for p in _rules(node) if _kind(p) == "TopNestedOperatorPart"]
        if len(parts) != 1 or len(_rules(node)) != 1:
            raise KqlRefused("top-nested with several levels or `with others`")
        pieces = _rules(parts[0])
        if len(pieces) != 3 or "others" in q.source(parts[0]).lower():
            raise KqlRefused("top-nested with `with others`")
        count = _integer_literal(pieces[0])
        if count is None:
            raise KqlRefused("top-nested whose count is not an integer literal")
        of_name, of_value = _named_parts(q, pieces[1])
        if of_name is None:
            raise KqlRefused("top-nested of an expression without a name")
        ordering = ""
        by = pieces[2]
        if _kind(by) == "OrderedExpression":
            kids = _rules(by)
            ordering = q.source(kids[1]).strip().lower() if len(kids) > 1 else ""
            if ordering not in ("", "asc", "desc"):
                raise KqlRefused("top-nested with a nulls ordering")
            by = kids[0]
        agg_name, agg_value = _named_parts(q, by)
        agg_name = agg_name or f"aggregated_{of_name}"
        named_agg, named_of = quote_name(agg_name), quote_name(of_name)
        text = f"summarize {named_agg} = {agg_value} by {named_of} = {of_value} "
        text += f"| top {count} by {named_agg} {ordering}".rstrip()
        a, b = _span(node)
        edits.append(Edit(a, b, text))
    return edits


def _named_parts(q: _Query, named: Any) -> tuple[str | None, str]:
    """(`name` or the column's own name or None, the value's text) of a NamedExpression."""
    named = _collapse(named) if _kind(named) != "NamedExpression" else named
    rules = _rules(named)
    if rules and _kind(rules[0]) == "NamedExpressionNameClause":
        return _name_of(_rules(rules[0])[0]), q.source(rules[1])
    return _as_column(named), q.source(named)


# -- rule: join on `a and b` -------------------------------------------------------------------


def _join_conjunction(q: _Query) -> list[Edit]:
    """`join ... on $left.a == $right.b and $left.c == $right.d`: the conditions as a list,
    which duckdb-kql reads (its grammar takes the `and` into the last column name)."""
    edits = []
    for node in q.nodes:
        if _kind(node) != "JoinOperatorOnClause":
            continue
        condition = _collapse(_rules(node)[0]) if _rules(node) else None
        if condition is None or _kind(condition) != "LogicalAndExpression":
            continue
        ands = [c for c in _rules(condition) if _kind(c) == "LogicalAndOperation"]
        terms = [_rules(condition)[0], *ands]
        if not all("$left." in q.source(t) and "$right." in q.source(t) for t in terms):
            continue
        for operation in ands:
            token = next(t for t in _children(operation) if _is_token(t))
            if token.symbol.text.lower() != "and":
                break
            a, b = _span(token)
            edits.append(Edit(a - 1 if q.text[a - 1 : a] == " " else a, b, ","))
    return edits


# -- rule: pack() with computed keys -----------------------------------------------------------


def _pack_keys(q: _Query) -> list[Edit]:
    """Keys of `pack`/`bag_pack` given as expressions, made strings (as Kusto requires; a
    dynamic key is its string)."""
    edits = []
    for call in _calls(q.tree):
        if call.name.lower() not in ("pack", "bag_pack", "pack_dictionary"):
            continue
        for i in range(0, len(call.args), 2):
            key = _collapse(call.arg_value(i))
            if _kind(key) == "StringLiteralExpression":
                continue
            keyed = list(_calls(key))
            if keyed and keyed[0].node is key and keyed[0].name.lower() == "tostring":
                continue
            a, b = _span(key)
            edits.append(Edit(a, b, f"tostring({q.source(key)})"))
    return edits


# -- rule: a parenthesized pipeline head ---------------------------------------------------------


def _parenthesized_source(q: _Query) -> list[Edit]:
    """`(T | ops) | more` is `T | ops | more`, and a statement (or a let's value) that is
    all one `(T | ops)` is `T | ops`; duckdb-kql takes no parenthesized source."""
    edits = []
    for node in q.nodes:
        if _kind(node) != "PipeExpression":
            continue
        kids = _rules(node)
        head = _collapse(kids[0]) if kids else None
        if not kids or _kind(head) != "ParenthesizedExpression":
            continue
        if len(kids) == 1 and not _whole_statement(node):
            continue  # `(x)` in an expression, a join's `(T | ...)`: left as written
        if any(_kind(k) != "PipedOperator" for k in kids[1:]):
            continue
        inner = _rules(head)
        if len(inner) != 1 or _kind(inner[0]) != "Expression":
            continue
        a, b = _span(head)
        edits.append(Edit(a, b, q.source(inner[0])))
    return edits


def _whole_statement(pipe: Any) -> bool:
    """Whether the pipe expression is all of a query statement or of a let's value."""
    expression = _parent(pipe, "Expression")
    if expression is None or _span(expression) != _span(pipe):
        return False
    holder = _parent(expression, "QueryStatement", "LetVariableDeclaration", "Expression",
                     "PipeExpression", "PrimaryExpression", "ParenthesizedExpression")  # fmt: skip
    return holder is not None and _kind(holder) in ("QueryStatement", "LetVariableDeclaration")


# -- rule: extractjson -------------------------------------------------------------------------

_JSON_PATH = re.compile(
    r"^\$((\.[A-Za-z_][A-Za-z_0-9]*)|(\[\d+\])|(\['[^'\\]*'\])|(\[\"[^\"\\]*\"\]))*$"
)
_CONVERSIONS = {"string": "tostring", "long": "tolong", "int": "toint", "real": "toreal",
                "double": "toreal", "bool": "tobool", "boolean": "tobool",
                "datetime": "todatetime", "guid": "toguid", "timespan": "totimespan",
                "dynamic": ""}  # fmt: skip


def _extract_json(q: _Query) -> list[Edit]:
    """`extract_json(path, text[, typeof(T)])` for a plain JSONPath (`$.a.b`, `$['a']`,
    `$.a[0]`): the element of `parse_json(text)`, as a string or converted to T."""
    edits = []
    for call in _calls(q.tree):
        if call.name.lower() not in ("extractjson", "extract_json") or len(call.args) not in (2, 3):
            continue
        path_node = _collapse(call.arg_value(0))
        if _kind(path_node) != "StringLiteralExpression":
            raise KqlRefused("extract_json() with a path that is not a literal")
        path = _literal_value(q.source(path_node))
        if not _JSON_PATH.match(path):
            raise KqlRefused(f"extract_json() with the JSONPath {path!r}")
        convert = "tostring"
        if len(call.args) == 3:
            kind = re.fullmatch(r"typeof\(\s*(\w+)\s*\)", q.source(call.arg_value(2)).strip())
            if kind is None or kind.group(1).lower() not in _CONVERSIONS:
                raise KqlRefused("extract_json() to a type it cannot convert to")
            convert = _CONVERSIONS[kind.group(1).lower()]
        element = f"parse_json({q.source(call.arg_value(1))}){path[1:]}"
        a, b = _span(call.node)
        edits.append(Edit(a, b, f"{convert}({element})" if convert else element))
    return edits


# -- rule: tabular let functions and views as stored functions ---------------------------------


def _hoist_functions(q: _Query) -> list[Edit]:
    """`let F = view() {...}` and `let F = (scalar params) { tabular body }`, which
    duckdb-kql refuses as `let`, handed to it as stored functions instead, innermost first
    (run once every other rule is done, so their bodies are final). Kusto expands both
    where they are called; every `let` name of the query must be unique, so that a name in
    a body means at the call what it meant at the declaration."""
    declarations = [n for n in q.nodes if _kind(n) in _LET_DECLARATIONS]
    names = [_declared_name(d) for d in declarations]
    edits = []
    for declaration in declarations:
        if _kind(declaration) not in ("LetViewDeclaration", "LetFunctionDeclaration"):
            continue
        body = next((c for c in _rules(declaration) if _kind(c) == "LetFunctionBody"), None)
        params = next(
            (c for c in _rules(declaration) if _kind(c) == "LetFunctionParameterList"), None
        )
        if body is None or not (_kind(declaration) == "LetViewDeclaration" or _tabular_body(body)):
            continue
        if params is not None and any(_kind(p) != "ScalarParameter" for p in _rules(params)):
            continue  # a tabular parameter: duckdb-kql's own `invoke` path
        if any(_kind(n) in ("LetViewDeclaration", "LetFunctionDeclaration") and n is not declaration
               for n in _walk(body)):  # fmt: skip
            continue  # its inner functions go first
        if _scalar_result(body):
            raise KqlRefused("a scalar let function with let statements of its own "
                             "(duckdb-kql defines functions with a tabular body only)")  # fmt: skip
        name = _declared_name(declaration)
        if name is None or len(set(names)) != len(names):
            raise KqlRefused("a tabular let function among repeated let names")
        start, stop = _span(body)
        signature = q.source(params) if params is not None else ""
        q.functions.append(f"function {name}({signature}) {{ {q.text[start + 1 : stop - 1]} }}")
        statement = _parent(declaration, "LetFunctionBodyStatement", "Statement")
        a, b = _span(statement if statement is not None else declaration)
        semicolon = re.match(r"\s*;", q.text[b:])
        edits.append(Edit(a, b + (semicolon.end() if semicolon else 0), ""))
    return edits


_LET_DECLARATIONS = ("LetVariableDeclaration", "LetFunctionDeclaration", "LetViewDeclaration")
# calls that make a table, not a scalar (a body ending in one is left as it is)
_TABULAR_CALLS = {"range", "datatable", "table", "materialize", "view", "union", "print",
                  "toscalar", "externaldata", "find", "search", "database", "cluster"}  # fmt: skip


def _scalar_body_lets(q: _Query) -> list[Edit]:
    """A scalar `let` function whose body has `let` statements of its own (`{ let a = e1;
    let b = f(a); g(a, b) }`), which duckdb-kql refuses: the lets inlined into the final
    expression in order, each name (not a property, call or argument name) replaced by its
    parenthesized value, `{ g((e1), (f((e1)))) }`; the same value, as a `let` of a scalar
    names an expression."""
    edits = []
    for declaration in q.nodes:
        if _kind(declaration) != "LetFunctionDeclaration":
            continue
        body = next((c for c in _rules(declaration) if _kind(c) == "LetFunctionBody"), None)
        if body is None:
            continue
        parts = _rules(body)
        lets = [c for c in parts if _kind(c) == "LetFunctionBodyStatement"]
        last = parts[-1] if parts else None
        if not lets or last is None or _kind(last) != "Expression" or len(parts) != len(lets) + 1:
            continue
        declared = [_rules(c)[0] if _rules(c) else None for c in lets]
        declared = [_collapse(d) if d is not None else None for d in declared]
        if any(d is None or _kind(d) != "LetVariableDeclaration" for d in declared):
            continue
        pieces = [last, *(next(r for r in _rules(d) if _kind(r) == "Expression") for d in declared)]
        if any(_kind(n) in ("PipedOperator", "LetFunctionBody") for p in pieces for n in _walk(p)):
            continue
        final = _collapse(last)
        calls = [c for c in _calls(final) if c.node is final]
        if _kind(final) not in _SCALAR_KINDS and not (
            calls and calls[0].name.lower() not in _TABULAR_CALLS
        ):
            continue
        values: dict[str, str] = {}
        for d in declared:
            name = _declared_name(d) or _plain_name(_rules(d)[0])
            value = next(r for r in _rules(d) if _kind(r) == "Expression")
            if name is None:
                break
            values[name] = "(" + _substituted(q.source(value), values) + ")"
        else:
            start, stop = _span(body)
            edits.append(Edit(start, stop, "{ " + _substituted(q.source(last), values) + " }"))
    return edits


def _inline_parameter_calls(q: _Query) -> list[Edit]:
    """Calls of a tabular `let` function that uses a parameter where duckdb-kql needs a
    literal (`table(p)`, `top p by ...`, `take p`), each call given literal arguments:
    the call replaced by the body with each parameter replaced by its argument (`table("T")`
    by T), the declaration dropped; the expansion Kusto makes of a function at its call
    (every `let` name of the query unique, so the body's names mean the same there)."""
    edits = []
    for declaration in q.nodes:
        if _kind(declaration) != "LetFunctionDeclaration":
            continue
        body = next((c for c in _rules(declaration) if _kind(c) == "LetFunctionBody"), None)
        plist = next(
            (c for c in _rules(declaration) if _kind(c) == "LetFunctionParameterList"), None
        )
        if body is None or plist is None or not _tabular_body(body):
            continue
        if any(_kind(c) == "LetFunctionBodyStatement" for c in _rules(body)):
            continue
        if any(_kind(p) != "ScalarParameter" for p in _rules(plist)):
            continue
        params = [_plain_name(_rules(p)[0]) for p in _rules(plist)]
        start, stop = _span(body)
        text = q.text[start + 1 : stop - 1]
        if None in params:
            continue
        named = "|".join(re.escape(p) for p in params if p)
        if _TABLE_PARAMETER not in text and not re.search(
            rf"\b(?:top|take|limit)\s+(?:{named})\b", text, re.IGNORECASE
        ):
            continue
        name = _declared_name(declaration) or _plain_name(_rules(declaration)[0])
        lets = [_declared_name(d) for d in q.nodes if _kind(d) in _LET_DECLARATIONS]
        if name is None or len(set(lets)) != len(lets):
            raise KqlRefused("a function with a table() or count parameter among repeated lets")
        calls = [c for c in _calls(q.tree) if c.name == name]
        for call in calls:
            if len(call.args) != len(params) or any(call.arg_names()):
                raise KqlRefused(f"{name}: a call with named or default arguments")
            values: dict[str, str] = {}
            inlined = text
            for i, param in enumerate(params):
                assert param is not None
                value = _collapse(call.arg_value(i))
                source = q.source(value)
                literal = _kind(value).endswith("LiteralExpression")
                placeholder = _TABLE_PARAMETER + param
                if placeholder in inlined:
                    if _kind(value) != "StringLiteralExpression":
                        raise KqlRefused(f"{name}: table({param}) of an argument that is not "
                                         "a string literal")  # fmt: skip
                    table = quote_name(_literal_value(source))
                    inlined = re.sub(rf"\b{re.escape(placeholder)}\b", table, inlined)
                values[param] = source if literal else f"({source})"
            edits.append(Edit(*_span(call.node), f"({_substituted(inlined, values)})"))
        statement = _parent(declaration, "Statement")
        a, b = _span(statement if statement is not None else declaration)
        semicolon = re.match(r"\s*;", q.text[b:])
        edits.append(Edit(a, b + (semicolon.end() if semicolon else 0), ""))
    return edits


def _plain_name(node: Any) -> str | None:
    """The name a name node spells when it is one plain word (`visible`, which the grammar
    reads as a keyword)."""
    text = "".join(t.symbol.text for t in _tokens(node)) if not _is_token(node) else ""
    return text if _IDENT.match(text) else None


def _substituted(text: str, values: dict[str, str]) -> str:
    """`text` with each word naming a key of `values` (not after `.`, not a call or a
    `name =`) replaced by its value."""
    tokens = tokenize(text)
    edits = []
    for i, token in enumerate(tokens):
        if token.kind != "word" or token.text not in values:
            continue
        before = tokens[i - 1].text if i else ""
        after = [t.text for t in tokens[i + 1 : i + 3]]
        if before == "." or after[:1] == ["("] or (after[:1] == ["="] and after[1:] != ["="]):
            continue
        edits.append(Edit(token.start, token.end, values[token.text]))
    return _apply(text, edits)


def _declared_name(declaration: Any) -> str | None:
    node = next((c for c in _rules(declaration) if _kind(c) in _NAME_NODES), None)
    return _name_of(node) if node is not None else None


# what a tabular body cannot end in: arithmetic, comparisons, logic, literals
_SCALAR_KINDS = {"AdditiveExpression", "MultiplicativeExpression", "EqualityExpression",
                 "RelationalExpression", "LogicalAndExpression", "LogicalOrExpression",
                 "StringBinaryOperatorExpression", "LongLiteralExpression",
                 "IntLiteralExpression", "RealLiteralExpression", "StringLiteralExpression",
                 "BooleanLiteralExpression", "DateTimeLiteralExpression",
                 "TimeSpanLiteralExpression", "DynamicLiteralExpression"}  # fmt: skip


def _scalar_result(body: Any) -> bool:
    """A function body with `let` statements that ends in a scalar expression."""
    if not any(_kind(c) == "LetFunctionBodyStatement" for c in _rules(body)):
        return False
    last = next((c for c in reversed(_rules(body)) if _kind(c) == "Expression"), None)
    return last is not None and _kind(_collapse(last)) in _SCALAR_KINDS


def _tabular_body(body: Any) -> bool:
    """A function body ending in a pipeline (or holding statements of its own)."""
    if any(_kind(c) == "LetFunctionBodyStatement" for c in _rules(body)):
        return True
    last = next((c for c in reversed(_rules(body)) if _kind(c) == "Expression"), None)
    pipe = _collapse(last) if last is not None else None
    while pipe is not None and _kind(pipe) != "PipeExpression" and len(_rules(pipe)) == 1:
        pipe = _rules(pipe)[0]
    return pipe is not None and any(_kind(c) == "PipedOperator" for c in _rules(pipe))


# -- rule: indexof with a start ----------------------------------------------------------------


def _indexof_start(q: _Query) -> list[Edit]:
    """`indexof(s, x, start)` for a non-negative literal start and a non-empty literal x:
    the first match at or after start, counted from the beginning, -1 when none (queryeval's
    row, which reads each argument once: a rewrite in KQL repeated them, and duckdb-kql's
    own `substring` repeats its arguments again)."""
    edits = []
    for call in _calls(q.tree):
        if call.name.lower() != "indexof" or len(call.args) != 3:
            continue
        start = _integer_literal(call.arg_value(2))
        lookup = _collapse(call.arg_value(1))
        if start is None or start < 0 or _kind(lookup) != "StringLiteralExpression":
            raise KqlRefused("indexof() with a start that is not a non-negative literal")
        if not _literal_value(q.source(lookup)):
            raise KqlRefused("indexof() of an empty string with a start")
        a, b = _span(call.name_token)
        edits.append(Edit(a, b, "queryeval_indexof"))
    return edits


# -- rule: between a datetime and a timespan ------------------------------------------------------


def _between_span(q: _Query) -> list[Edit]:
    """`x between (A .. span)`: Kusto reads a timespan upper bound as A + span."""
    edits = []
    for node in q.nodes:
        if _kind(node) != "BetweenEqualityExpression":
            continue
        bounds = [r for r in _rules(node)]
        if len(bounds) != 2:
            continue
        low, high = (_collapse(b) for b in bounds)
        if _kind(high) != "TimeSpanLiteralExpression":
            continue
        if _kind(low) == "TimeSpanLiteralExpression" or _number_literal(low) is not None:
            continue  # a timespan range: the upper bound is itself
        a, b = _span(high)
        edits.append(Edit(a, b, f"(({q.source(low)}) + {q.source(high)})"))
    return edits


# -- rule: make-series -----------------------------------------------------------------------------

# aggregates whose unnamed result is named prefix_column (prefix = the function's name)
_SERIES_AGGREGATES = {"count", "countif", "sum", "sumif", "avg", "avgif", "min", "max",
                      "dcount", "dcountif", "stdev", "variance"}  # fmt: skip


def _make_series(q: _Query) -> list[Edit]:
    """`make-series Agg [default=D], ... on T from A to B step S [by G, ...]` with a datetime
    axis and explicit bounds: each group's aggregates per bin `A + k*S < B` (the rows with
    A <= T < B), a bin without rows holding D (0 when not given), as arrays in bin order,
    then the axis itself as an array named T; columns by, aggregates, axis, as Kusto orders
    them; no row at all for an input of no rows. Without `from`/`to`, or over a number axis,
    it is refused."""
    edits = []
    for node in q.nodes:
        if _kind(node) != "MakeSeriesOperator":
            continue
        parts = _rules(node)
        in_range = next((p for p in parts if _kind(p) == "MakeSeriesOperatorInRangeClause"), None)
        if in_range is not None:
            edits.append(_series_in_range(q, in_range))
            continue
        on = next((p for p in parts if _kind(p) == "MakeSeriesOperatorOnClause"), None)
        bounds = next((p for p in parts if _kind(p) == "MakeSeriesOperatorFromToStepClause"),
                      None)  # fmt: skip
        by = next((p for p in parts if _kind(p) == "MakeSeriesOperatorByClause"), None)
        known = {"MakeSeriesOperatorAggregation", "MakeSeriesOperatorOnClause",
                 "MakeSeriesOperatorFromToStepClause", "MakeSeriesOperatorByClause",
                 "RelaxedQueryOperatorParameter"}  # fmt: skip
        if on is None or bounds is None or any(_kind(p) not in known for p in parts):
            raise KqlRefused("make-series without from/to/step")
        axis = _as_column(_rules(on)[0])
        limits = _rules(bounds)
        words = [t.symbol.text.lower() for t in _children(bounds) if _is_token(t)]
        if axis is None or words != ["from", "to", "step"] or len(limits) != 3:
            raise KqlRefused("make-series without from, to and step, or on an expression")
        start, end, step = (q.source(x) for x in limits)
        if not (_datetime_like(q, limits[0]) and _datetime_like(q, limits[1])
                and _timespan_like(q, limits[2])):  # fmt: skip
            raise KqlRefused("make-series other than over datetimes with a timespan step")
        groups = [q.source(g) for g in _rules(by)] if by is not None else []
        values, series = [], []
        for i, (name, value, clause) in enumerate(_series_aggregations(q, parts)):
            default = "0"
            if clause is not None:
                default = q.source(_rules(clause)[0])
            values.append(f"_qe_v{i} = {value}")
            series.append(f"{quote_name(name)} = queryeval_series(_qe_v{i}, _qe_bin, "
                          f"{start}, {end}, {step}, {default})")  # fmt: skip
        keys = ", ".join([*groups, f"_qe_bin = bin_at({quote_name(axis)}, {step}, {start})"])
        by_groups = f" by {', '.join(quote_name(_named_parts(q, g)[0] or '') for g in _rules(by))}"
        if by is not None and any(_named_parts(q, g)[0] is None for g in _rules(by)):
            raise KqlRefused("make-series by an expression without a name")
        # `_qe_bins`: the bins holding rows; an input of no rows at all gives no row (the
        # docs' `take 0 | make-series ... | count` is 0), where summarize would give one
        text = (f"where {quote_name(axis)} >= {start} and {quote_name(axis)} < {end} "
                f"| summarize {', '.join(values)} by {keys} "
                f"| summarize {', '.join(series)}, {quote_name(axis)} = "
                f"queryeval_series_axis(_qe_bin, {start}, {end}, {step}), _qe_bins = count()"
                f"{by_groups if by is not None else ''} "
                "| where _qe_bins > 0 | project-away _qe_bins")  # fmt: skip
        a, b = _span(node)
        edits.append(Edit(a, b, text))
    return edits


def _series_in_range(q: _Query, clause: Any) -> Edit:
    """`on T in range(start, stop, step)`, make-series' alternate syntax. Kusto's docs
    ("make-series operator", Alternate Syntax): the stop value is inclusive, and the axis is
    binned with bin() (not bin_at), so start may not be in the series. That is the main
    syntax `from bin(start, step) to bin(stop, step) + step step step`: bins aligned as
    bin() aligns them, the first one holding start, the last one holding stop."""
    values = _rules(clause)
    if len(values) != 3:
        raise KqlRefused("make-series in range() without start, stop and step")
    start, stop, step = (f"({q.source(v)})" if _kind(_collapse(v)) == "AdditiveExpression"
                         else q.source(v) for v in values)  # fmt: skip
    return Edit(*_span(clause), f"from bin({start}, {step}) to bin({stop}, {step}) + {step} "
                                f"step {step}")  # fmt: skip


def _series_aggregations(q: _Query, parts: list[Any]) -> list[tuple[str, str, Any]]:
    """(name, aggregate text, default clause or None) of each make-series aggregate.
    duckdb-kql's grammar reads `name=func(x)` as the operator parameter `name=func`
    followed by the aggregate `(x)`; the two are put back together here (the operator's own
    parameters, `kind=` and `hint.*`, are refused)."""
    out: list[tuple[str, str, Any]] = []
    glued: tuple[str, str] | None = None
    for part in parts:
        if _kind(part) == "RelaxedQueryOperatorParameter":
            text = q.source(part)
            name, _, function = (x.strip() for x in text.partition("="))
            if name.lower() == "kind" or name.lower().startswith("hint.") or not function:
                raise KqlRefused(f"make-series with the option {text}")
            glued = (name, function)
            continue
        if _kind(part) != "MakeSeriesOperatorAggregation":
            continue
        named = _rules(part)[0]
        defaults = [
            c for c in _rules(part) if _kind(c) == "MakeSeriesOperatorExpressionDefaultClause"
        ]
        clause = defaults[0] if defaults else None
        if glued is not None:
            value = _collapse(named)
            if _kind(value) != "ParenthesizedExpression":
                raise KqlRefused("make-series with an operator parameter")
            out.append((glued[0], glued[1] + q.source(value), clause))
            glued = None
            continue
        given, text = _named_parts(q, named)
        out.append((given or _series_name(q, _collapse(named)), text, clause))
    if glued is not None:
        raise KqlRefused("make-series with an operator parameter")
    return out


def _series_name(q: _Query, aggregate: Any) -> str:
    """Kusto's name for an unnamed make-series aggregate (as summarize names it)."""
    if _kind(aggregate) == "CountExpression" and not _rules(aggregate):
        return "count_"
    calls = list(_calls(aggregate))
    if (
        not calls
        or calls[0].node is not aggregate
        or calls[0].name.lower() not in (_SERIES_AGGREGATES)
    ):
        raise KqlRefused("make-series of an unnamed aggregate it cannot name")
    call = calls[0]
    column = _as_column(call.arg_value(0)) if call.args else None
    if column is None:
        raise KqlRefused("make-series of an unnamed aggregate of an expression")
    return f"{call.name.lower()}_{column}"


def _datetime_like(q: _Query, node: Any) -> bool:
    """The expression is visibly a datetime (a literal, a datetime function, or a `let`
    name bound to one)."""
    if _bin_at_kind(node) == "datetime":
        return True
    inner = _collapse(node)
    if _kind(inner) == "AdditiveExpression":  # X + span, X - span: as X
        return _datetime_like(q, _rules(inner)[0])
    if _kind(inner) == "ParenthesizedExpression" and len(_rules(inner)) == 1:
        return _datetime_like(q, _rules(inner)[0])
    calls = [c for c in _calls(inner) if c.node is inner]
    if calls and calls[0].name.lower() == "bin" and len(calls[0].args) == 2:
        return _datetime_like(q, calls[0].arg_value(0))  # bin(datetime, span): a datetime
    name = _as_column(node)
    declaration = q.lets().get(name) if name else None
    if declaration is not None and _kind(declaration) == "LetVariableDeclaration":
        return _bin_at_kind(_rules(declaration)[-1]) == "datetime"
    source = q.source(node).strip()
    return bool(re.fullmatch(r"(datetime\(.*\)|now\(\)|ago\(.*\))\s*[-+].*", source))


def _timespan_like(q: _Query, node: Any) -> bool:
    node = _collapse(node)
    if _kind(node) == "TimeSpanLiteralExpression":
        return True
    name = _as_column(node)
    declaration = q.lets().get(name) if name else None
    if declaration is None or _kind(declaration) != "LetVariableDeclaration":
        return False
    return _kind(_collapse(_rules(declaration)[-1])) == "TimeSpanLiteralExpression"


# -- rule: count(predicate) ---------------------------------------------------------------------


# what cannot be a bool: `count(x)` of these is not valid KQL (Kusto.Language: a value of
# type bool expected), and countif would count the non-zero or non-empty values instead
_NOT_BOOL = {"AdditiveExpression", "MultiplicativeExpression", "InvocationExpression",
             "LongLiteralExpression", "IntLiteralExpression", "RealLiteralExpression",
             "StringLiteralExpression", "DecimalLiteralExpression", "DateTimeLiteralExpression",
             "TimeSpanLiteralExpression", "GuidLiteralExpression",
             "DynamicLiteralExpression"}  # fmt: skip
_BOOL_FUNCTIONS = {"isempty", "isnotempty", "isnull", "isnotnull", "not", "isnan", "isinf",
                   "isfinite", "tobool", "toboolean", "ipv4_is_private", "ipv4_is_in_range",
                   "ipv4_is_match", "ipv6_is_match", "has_any_ipv4", "has_ipv4",
                   "has_ipv4_prefix", "has_any_ipv4_prefix", "set_has_element",
                   "isascii", "isutf8"}  # fmt: skip


def _count_predicate(q: _Query) -> list[Edit]:
    """`count(p)`, Kusto's obsolete spelling of `countif(p)` (p must be a bool), named
    `count_p` for a column p as Kusto names it. Refused where p is not a bool: a column of
    another type (asked of the engine), a number or string, arithmetic, a function that does
    not return a bool (not valid KQL; countif would count something else)."""
    edits = []
    for node in q.nodes:
        if _kind(node) != "CountExpression":
            continue
        args = _rules(node)
        if len(args) != 1:
            continue
        _check_bool(q, node, _collapse(args[0]))
        text = f"countif({q.source(args[0])})"
        if _unnamed_whole(node) is not None:
            text = f"{_result_name(args[0], 'count_', 'count()')} = {text}"
        a, b = _span(node)
        edits.append(Edit(a, b, text))
    return edits


def _check_bool(q: _Query, count: Any, value: Any) -> None:
    """KqlRefused unless `value` (the argument of `count(...)`) is a bool."""
    kind = _kind(value)
    what = f"count({q.source(value)}) of a value that is not a bool"
    if kind in _NOT_BOOL:
        raise KqlRefused(what)
    if kind == "NamedFunctionCallExpression":
        name = q.source(value).split("(", 1)[0].strip().lower()
        if name not in _BOOL_FUNCTIONS:
            raise KqlRefused(f"count({q.source(value)}): {name}() may not return a bool")
        return
    column = _as_column(value)
    if column is None:
        return  # a comparison, a logical or string operator: a predicate
    summarize = _parent(count, "SummarizeOperator")
    if summarize is None:
        raise KqlRefused(f"count({column}) outside summarize")
    types = dict(q.columns_before(summarize, f"count({column})"))
    if str(types.get(column, "")).upper() != "BOOLEAN":
        raise KqlRefused(what)


# -- rule: range() of two arguments ------------------------------------------------------------


def _range_step(q: _Query) -> list[Edit]:
    """`range(start, stop)`: the default step 1 made explicit (queryeval's `range` row)."""
    edits = []
    for call in _calls(q.tree):
        if call.name.lower() == "range" and len(call.args) == 2:
            end = _span(call.args[-1])[1]
            edits.append(Edit(end, end, ", 1"))
    return edits


# -- rule: partition by K (top 1 by X) -----------------------------------------------------------


def _partition_top(q: _Query) -> list[Edit]:
    """`partition by K (top 1 by X [asc|desc])`: per K the row with the largest (smallest)
    X, which is `summarize arg_max(X, *) by K` (`arg_min`), in the input's column order."""
    edits = []
    for node in q.nodes:
        if _kind(node) != "PartitionOperator":
            continue
        body = next((c for c in _rules(node) if _kind(c) == "PartitionOperatorSubExpressionBody"),
                    None)  # fmt: skip
        key = next((c for c in _rules(node) if _kind(c) == "EntityExpression"), None)
        top = _rules(body)[0] if body is not None and len(_rules(body)) == 1 else None
        while top is not None and _kind(top) in ("PipeSubExpression", "AfterPipeOperator"):
            kids = _rules(top)
            if len(kids) != 1:
                break
            top = kids[0]
        if key is None or top is None or _kind(top) != "TopOperator":
            raise KqlRefused("partition with a subquery other than `top 1 by X`")
        count, ordered = _rules(top)
        if _integer_literal(count) != 1:
            raise KqlRefused("partition with `top N` for N other than 1")
        kids = _rules(ordered) if _kind(ordered) == "OrderedExpression" else [ordered]
        ordering = (q.source(kids[1]).strip().lower() if len(kids) > 1 else "") or "desc"
        if ordering not in ("asc", "desc"):
            raise KqlRefused("partition ... top 1 with a nulls ordering")
        by = _as_column(kids[0])
        partition_key = _name_of(next(c for c in _walk(key) if _kind(c) in _NAME_NODES))
        if by is None or partition_key is None:
            raise KqlRefused("partition ... top 1 by an expression")
        columns = [quote_name(c) for c, _ in q.columns_before(node, "partition")]
        aggregate = "arg_max" if ordering == "desc" else "arg_min"
        a, b = _span(node)
        text = f"summarize {aggregate}({quote_name(by)}, *) by {quote_name(partition_key)}"
        edits.append(Edit(a, b, f"{text} | project {', '.join(columns)}"))
    return edits


# -- rule: evaluate bag_unpack ---------------------------------------------------------------------

# json_each's types of a slot's non-null values -> the column Kusto gives it
_SLOT_TYPES = {
    frozenset({"VARCHAR"}): "tostring",
    frozenset({"BOOLEAN"}): "tobool",
    frozenset({"DOUBLE"}): "toreal",
    frozenset({"UBIGINT"}): "tolong",
    frozenset({"BIGINT"}): "tolong",
    frozenset({"UBIGINT", "BIGINT"}): "tolong",
}


def _bag_unpack(q: _Query) -> list[Edit]:
    """`evaluate bag_unpack(Col [, 'prefix'])`: one column per top-level key found in the
    input's bags (so the input is run first), typed as its values when they share a type and
    dynamic otherwise, after the input's other columns in key order (as Kusto's documented
    example orders them); a key colliding with an input column is refused, as Kusto does."""
    edits = []
    for node in q.nodes:
        if _kind(node) != "EvaluateOperator":
            continue
        calls = [c for c in _calls(node) if _collapse(_rules(node)[-1]) is c.node]
        if not calls or calls[0].name.lower() != "bag_unpack":
            continue
        call = calls[0]
        if len(_rules(node)) != 1 or len(call.args) not in (1, 2) or any(call.arg_names()):
            raise KqlRefused("bag_unpack with options, conflicts or an output schema")
        column = _as_column(call.arg_value(0))
        prefix = ""
        if len(call.args) == 2:
            literal = _collapse(call.arg_value(1))
            if _kind(literal) != "StringLiteralExpression":
                raise KqlRefused("bag_unpack with a prefix that is not a literal")
            prefix = _literal_value(q.source(literal))
        if column is None:
            raise KqlRefused("bag_unpack of an expression")
        inputs = [c for c, _ in q.columns_before(node, "bag_unpack") if c != column]
        slots = sorted(q.slots_before(node, column, "bag_unpack"))
        parts = []
        for key, types in slots:
            name = prefix + key
            if name in inputs:
                raise KqlRefused(f"bag_unpack: the key {key!r} is also an input column")
            convert = _SLOT_TYPES.get(frozenset(t for t in types if t != "NULL"), "")
            value = f"{quote_name(column)}[{_kql_string(key)}]"
            parts.append(f"{quote_name(name)} = {convert}({value})" if convert else
                         f"{quote_name(name)} = {value}")  # fmt: skip
        project = ", ".join(quote_name(c) for c in [*inputs, *(prefix + k for k, _ in slots)])
        text = (f"extend {', '.join(parts)} | project {project}" if parts
                else f"project {project}")  # fmt: skip
        a, b = _span(node)
        edits.append(Edit(a, b, text))
    return edits


def _kql_string(value: str) -> str:
    return _encode_for_duckdb_kql(value, "'")


RULES: tuple[Callable[[_Query], list[Edit]], ...] = (
    _between_span,
    _make_series,
    _count_predicate,
    _range_step,
    _partition_top,
    _bag_unpack,
    _indexof_start,
    _string_literals,
    _named_arguments,
    _aggregates,
    _percentiles,
    _argmax,
    _mv_expand_names,
    _project_reorder,
    _let_counts,
    _bin_at,
    _split_index,
    _top_nested,
    _join_conjunction,
    _pack_keys,
    _parenthesized_source,
    _extract_json,
    _scalar_body_lets,
    _inline_parameter_calls,
)
