"""Columns whose names differ only in case (`CallerIPAddress`, `CallerIpAddress`): two
columns in Kusto (names are case-sensitive), one name to DuckDB, so duckdb-kql refuses them
(its rule R7). queryeval keeps them apart by a renaming scheme, tried only on a query
duckdb-kql refused for that reason:

- every spelling of such a group but one (the canonical one, a spelling of the tables'
  columns) is written `<spelling>__qe<i>` wherever the query names it, and read from a table
  that has it by a `project-rename` leg (`union *` and `union Pattern*` are expanded to their
  tables, in duckdb-kql's name order);
- the result's columns are named back (`decode_column`): the suffix dropped, the original
  spelling kept exactly.

A query that could see a column's *name* as data (`pack_all`, `column_ifexists`,
`getschema`, `bag_unpack`, wildcard column lists, a string that spells a
renamed column) is refused rather than answered with the encoded names.

    >>> decode_column("CallerIpAddress__qe1")
    'CallerIpAddress'
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Any

from queryeval.languages.kql import quote_name

_SUFFIX = re.compile(r"__qe\d+$")
# what reads column names as data: the encoded names would show
NAME_READERS = re.compile(
    r"\b(pack_all|column_ifexists|columnifexists|getschema|bag_unpack|narrow|"
    # wildcard column lists: project-away/keep/reorder (`project` takes none: a `*` there is
    # a multiplication, `1.0 * Size`)
    r"buildschema|pack\s*\(\s*\*|bag_pack\s*\(\s*\*)\b|\bproject-(away|keep|reorder)\b[^|]*\*",
    re.I,
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_WITHSOURCE = re.compile(r"union\s+(?:\w+\s*=\s*\w+\s+)*?(withsource\s*=\s*(\w+)\s+)", re.I)


def _kql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class CaseIndex:
    """The spellings of a database's column names by their case-folded form: a quick look at
    whether a query may name columns that differ only in case (then `separate_case`)."""

    def __init__(self, tables: dict[str, list[str]]) -> None:
        self.spellings: dict[str, set[str]] = {}
        self.encoded: set[str] = set()  # tables storing a spelling under its encoded name
        for table, columns in tables.items():
            if "." not in table:
                for column in columns:
                    spelling = decode_column(column)
                    self.spellings.setdefault(spelling.casefold(), set()).add(spelling)
                    if spelling != column:
                        self.encoded.add(table)
        self.collide = any(len(s) > 1 for s in self.spellings.values())

    def might_collide(self, query: str) -> bool:
        """False when no word of `query` is another spelling of a column (or of a column
        with several spellings), and it has no `union` across tables that collide."""
        if self.collide and "union" in query.lower():
            return True
        words = set(_WORD.findall(query))
        if words & self.encoded:  # a table holding two spellings (its names would show)
            return True
        for word in words:
            known = self.spellings.get(word.casefold())
            if known and (len(known) > 1 or word not in known):
                return True
        return False


def decode_column(name: str) -> str:
    """A result column's name as the query's author wrote it (the scheme's suffix off)."""
    return _SUFFIX.sub("", name)


@dataclass(frozen=True)
class Separated:
    text: str
    renamed: dict[str, str]  # spelling -> encoded name


def _names(tree: Any, text: str) -> list[tuple[int, int, str, bool]]:
    """(start, stop, name, escaped) of every name token of the query."""
    from queryeval.engines._kql_rewrite import _kind, _name_of, _span, _walk

    out = []
    for node in _walk(tree):
        kind = _kind(node)
        if kind in ("IdentifierName", "EscapedName"):
            name = _name_of(node)
            if name is not None:
                start, stop = _span(node)
                out.append((start, stop, name, kind == "EscapedName"))
    return out


def separate_case(query: str, tables: dict[str, list[str]]) -> Separated | None:
    """`query` with the spellings of each case-colliding column group kept apart (see the
    module); None when there is no such group to separate. KqlRefused when the query would
    see the encoded names."""
    from queryeval.engines._kql_rewrite import (
        KqlRefused,
        _kind,
        _rules,
        _span,
        _walk,
        parsed,
        syntax_repaired,
    )

    tables = {t: cols for t, cols in tables.items() if "." not in t}
    query = syntax_repaired(query)  # Kusto's syntax duckdb-kql's grammar does not read
    tree = parsed(query)
    if tree is None:  # not parsed (a comment-only text, ...): left to `prepare`'s verdict
        return None
    # the union wildcards, each expanded to its tables (duckdb-kql's name order)
    wildcards: list[tuple[int, int, list[str]]] = []
    for node in _walk(tree):
        if _kind(node) == "WildcardedNameReference":
            pattern = query[slice(*_span(node))].strip()
            wildcards.append((*_span(node), sorted(fnmatch.filter(tables, pattern))))
    names = _names(tree, query)
    as_columns = _tables_named_as_columns(tree, query, tables)
    # each table read: the columns it brings into the query (a leg `(T | project ...)` as
    # `wildcard_unions` writes it brings only those it projects)
    visible: dict[int, list[tuple[str, str]]] = {}  # (table column, the name it reaches as)
    for start, stop, name, _ in names:
        in_wildcard = any(a <= start < b for a, b, _ in wildcards)
        if name in tables and start not in as_columns and not in_wildcard:
            visible[start] = _projected_columns(query, stop, tables[name])
    outputs = {out for cols in visible.values() for _, out in cols}
    outputs |= {c for _, _, legs in wildcards for t in legs for c in tables[t]}
    spellings: dict[str, set[str]] = {}
    stored: dict[str, set[str]] = {}  # a spelling a table stores encoded -> those names
    plain: set[str] = set()  # spellings read as they are spelled
    for column in outputs:
        spelling = decode_column(column)
        spellings.setdefault(spelling.casefold(), set()).add(spelling)
        if spelling != column:
            stored.setdefault(spelling, set()).add(column)
        else:
            plain.add(spelling)
    for start, stop, name, _ in names:
        if (name not in tables or start in as_columns) and not query[stop:].lstrip().startswith(
            "("
        ):  # a column, not a call
            spellings.setdefault(name.casefold(), set()).add(name)
    table_columns = {decode_column(c) for c in outputs}
    # a group: several spellings, or one stored encoded and also read (or named) as spelled
    plain |= {n for _, stop, n, _ in names if n not in tables}
    groups = [sorted(g) for g in spellings.values()
              if (len(g) > 1 or any(s in stored and s in plain for s in g))
              and g & table_columns]  # fmt: skip
    if not groups:
        return None
    if NAME_READERS.search(query):
        raise KqlRefused("columns whose names differ only in case, in a query that reads "
                         "column names as data")  # fmt: skip
    renamed: dict[str, str] = {}
    for group in groups:
        # the canonical spelling is one no table stores encoded; a spelling a table stores
        # encoded keeps that name; the others take the numbers left (DuckDB folds case:
        # a group's encoded names differ by their number)
        unstored = [s for s in group if s not in stored]
        in_tables = [s for s in unstored if s in table_columns]
        if (not unstored and len(group) > 1) or any(len(stored.get(s, ())) > 1 for s in group):
            raise KqlRefused("columns whose names differ only in case, stored encoded in "
                             "ways that disagree")  # fmt: skip
        canonical = in_tables[0] if in_tables else unstored[0] if unstored else None
        taken = {int(n.rsplit("__qe", 1)[1]) for s in group for n in stored.get(s, ())}
        free = (k for k in range(1, len(group) + len(taken) + 1) if k not in taken)
        for spelling in group:
            if spelling in stored:
                renamed[spelling] = next(iter(stored[spelling]))
            elif spelling != canonical:
                renamed[spelling] = f"{spelling}__qe{next(free)}"
    literals = {query[slice(*_span(n))][1:-1] for n in _walk(tree)
                if _kind(n) == "StringLiteralExpression"}  # fmt: skip
    if literals & set(renamed):
        raise KqlRefused("columns whose names differ only in case, one spelled in a string")

    # `union withsource=Name` (a source `search` is one: `_kql_rewrite_kusto`'s
    # `searches_as_unions`): a renaming leg would be named `union_arg<i>`, so each leg names
    # its own table in a first column and the withsource goes; legs other than tables refused
    sourced: list[tuple[int, int, str]] = []
    edits: list[tuple[int, int, str]] = []
    for node in _walk(tree):
        if _kind(node) == "UnionOperator":
            source = _WITHSOURCE.match(query[slice(*_span(node))])
            if source:
                legs = [_kind(_rules(k)[0]) if _rules(k) else "" for k in _rules(node)
                        if _kind(k) == "UnionOperatorExpression"]  # fmt: skip
                if any(
                    k not in ("EntityNameReference", "WildcardedEntityExpression") for k in legs
                ):
                    raise KqlRefused("columns whose names differ only in case, in a union "
                                     "withsource= of legs other than tables")  # fmt: skip
                sourced.append((*_span(node), source.group(2)))
                start = _span(node)[0] + source.start(1)
                edits.append((start, start + len(source.group(1)), ""))

    def leg(table: str, start: int = -1) -> str:
        read = [c for c, _ in visible[start]] if start in visible else tables[table]
        moves = [f"{quote_name(renamed[c])} = {quote_name(c)}" for c in read if c in renamed]
        for a, b, column in sourced:
            if not a <= start < b:
                continue
            column = quote_name(column)
            tagged = f"extend {column} = {_kql_string(table)} | project-reorder {column}"
            renaming = f" | project-rename {', '.join(moves)}" if moves else ""
            return f"({quote_name(table)}{renaming} | {tagged})"
        if not moves:
            return quote_name(table)
        return f"({quote_name(table)} | project-rename {', '.join(moves)})"

    for start, stop, legs in wildcards:
        edits.append((start, stop, ", ".join(leg(t, start) for t in legs)))
    places = _places(tree, query)
    for start, stop, name, _ in names:
        if any(a <= start < b for a, b, _ in wildcards):
            continue
        if name in tables and start not in as_columns:
            if leg(name, start) != quote_name(name):
                where = places.get(start)
                if where is None:
                    raise KqlRefused(
                        f"columns whose names differ only in case, read from {name} other "
                        "than as a union leg or a pipeline head"
                    )
                edits.append((start, stop, where + leg(name, start)))
        elif name in renamed and not query[stop:].lstrip().startswith("("):
            edits.append((start, stop, quote_name(renamed[name])))
    out, pos = [], 0
    for start, stop, text in sorted(edits):
        out.append(query[pos:start] + text)
        pos = stop
    return Separated("".join(out) + query[pos:], renamed)


def _places(tree: Any, text: str) -> dict[int, str | None]:
    """What a table read starting at each offset needs before its renaming leg: "" for a
    whole leg of a `union`, "union " for a pipeline's head, None (absent) elsewhere; the
    tree walked once (a union of hundreds of tables reads as many tables)."""
    from queryeval.engines._kql_rewrite import _kind, _span, _walk

    code = re.sub(r"//[^\n]*", lambda m: " " * len(m.group()), text)  # comments as blanks
    places: dict[int, str | None] = {}
    for node in _walk(tree):
        kind = _kind(node)
        if kind == "UnionOperatorExpression":
            places.setdefault(_span(node)[0], "")
        elif kind == "BeforePipeExpression":
            start = _span(node)[0]
            before = start - 1
            while before >= 0 and code[before].isspace():
                before -= 1
            places.setdefault(start, "union " if before < 0 or code[before] in "(;=" else None)
    return places


# a leg as `wildcard_unions` writes it: a table's `project` of its columns, closing the leg
_LEG_PROJECT = re.compile(r"\s*\|\s*project\s+([^|()]*)\)")


def _projected_columns(text: str, stop: int, columns: list[str]) -> list[tuple[str, str]]:
    """The columns of a table read ending at `stop` that reach the rest of the query, with
    the names they reach it as: those a `(T | project a, b_long = b, S = 'T')` leg
    projects; every column as it is otherwise.

    >>> _projected_columns("(T | project S = 'T', b_long = b)", 2, ["a", "b"])
    [('b', 'b_long')]
    """
    from queryeval.engines._kql_rewrite_kusto import _items

    match = _LEG_PROJECT.match(text, stop)
    items = _items(match.group(1)) if match is not None else None
    if items is None or any(
        source not in ("'", "!") and (source or name) not in columns for name, source in items
    ):
        return [(c, c) for c in columns]
    return [(source or name, name) for name, source in items if source not in ("'", "!")]


# calls whose arguments may be tables (the others take scalars: a name there is a column)
_TABULAR_CALLS = {"table", "view", "materialize", "toscalar", "database", "cluster",
                  "externaldata", "range", "find", "union"}  # fmt: skip
# operators whose expressions are read in the row's scope (a name there is a column)
_ROW_OPERATORS = {"WhereOperator", "FilterOperator", "ExtendOperator", "ProjectOperator",
                  "SummarizeOperator", "DistinctOperator", "SortOperator", "OrderOperator",
                  "TopOperator", "MvexpandOperator", "MvExpandOperator", "ParseOperator",
                  "MakeSeriesOperator"}  # fmt: skip
# what takes a table inside such an operator: a subquery, toscalar, a call's arguments
_TABULAR_NODES = {"PipeExpression", "ToScalarExpression", "PipedOperator", "Statement"}


def _tables_named_as_columns(tree: Any, text: str, tables: dict[str, Any]) -> set[int]:
    """The offsets of the table names read as columns: in an expression of a row-wise
    operator (`extend Action = coalesce(Operation, OperationName)`, `project Operation`),
    where Kusto reads a name in the row's scope (a table is no scalar); not in a subquery,
    `toscalar`, or an argument of a `let` function or of a call that takes tables.

    >>> from queryeval.engines._kql_rewrite import parsed
    >>> q = "union A, Operation | extend x = coalesce(Operation, 1) | project Operation"
    >>> sorted(_tables_named_as_columns(parsed(q), q, {"A": [], "Operation": []}))
    [41, 65]
    """
    from queryeval.engines._kql_rewrite import _kind, _rules, _span, _walk

    lets = set()
    for node in _walk(tree):
        if _kind(node) in ("LetVariableDeclaration", "LetFunctionDeclaration"):
            kids = _rules(node)
            if kids:
                lets.add(text[slice(*_span(kids[0]))].strip())
    out: set[int] = set()
    for node in _walk(tree):
        if _kind(node) not in ("IdentifierName", "EscapedName"):
            continue
        start, stop = _span(node)
        if text[start:stop] not in tables:
            continue
        up = getattr(node, "parentCtx", None)
        while up is not None:
            kind = _kind(up)
            if kind in _ROW_OPERATORS:
                out.add(start)
                break
            if kind in _TABULAR_NODES:
                break
            if kind == "NamedFunctionCallExpression":
                function = text[_span(up)[0] : stop].split("(")[0].strip()
                if function.lower() in _TABULAR_CALLS or function in lets:
                    break
            up = getattr(up, "parentCtx", None)
    return out
