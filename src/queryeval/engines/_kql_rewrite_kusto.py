"""Rewrites where duckdb-kql runs a query but answers differently from Kusto (or fails only
once the tables hold rows), each made to give Kusto's result or refused (`KqlRefused`):

- `make-series ... | mv-expand Axis`: the axis values are datetimes (Kusto's dynamic
  array holds datetimes; duckdb-kql's expansion turned them into text);
- `union` of inputs whose same-named columns differ in type: one column per type named
  `x_long`, `x_int` (Kusto's documented naming), and `withsource=` over `let` views naming
  each row's view (duckdb-kql named the underlying table);
- `summarize arg_min(X, *) by K = expr` where K is also an input column: that input column
  kept as `K1` (Kusto.Language's result type), where duckdb-kql dropped it;
- a string column `==`/`!=` an integer literal (`ResultType == 0`): compared as text, where
  DuckDB casts every row's string to a number (an error on the first row that is not one);
- `x in (letTable)` whose first column holds dynamic arrays (`summarize makelist(x)`): the
  arrays' elements, typed as x;
- regex group names that are not words (`(?<first name>...)`): the group left unnamed where
  the name is never used (DuckDB's RE2 rejects such a name on the first row);
- `range x from A to B step S | count` of integer literals: the count computed, without
  200 million rows materialised.

And real-world constructs duckdb-kql does not cover: a `parse` pattern that starts with a
capture, `as` (a name nothing else uses), `where * has "x"` and `T | search "x"`.

    >>> rewrite_kql("range x from 1 to 200000000 step 1 | count").text
    'print Count = tolong(200000000)'
"""

from __future__ import annotations

import re
from typing import Any

from queryeval.engines._kql_functions_rules import FUNCTION_RULES
from queryeval.engines._kql_rewrite import (
    Edit,
    KqlRefused,
    _as_column,
    _calls,
    _children,
    _collapse,
    _integer_literal,
    _is_token,
    _kind,
    _literal_value,
    _name_of,
    _named_parts,
    _parent,
    _Query,
    _rules,
    _span,
    _walk,
    parsed,
    rewrite_kql,
    syntax_repaired,
)
from queryeval.languages.kql import quote_name

__all__ = ["KUSTO_RULES", "rewrite_kql"]

# DuckDB column types as Kusto names them (union's `x_long`, mv-expand's `typeof(...)`)
_KQL_TYPES = {"BIGINT": "long", "INTEGER": "int", "DOUBLE": "real", "VARCHAR": "string",
              "TIMESTAMP": "datetime", "TIMESTAMP WITH TIME ZONE": "datetime",
              "BOOLEAN": "bool", "INTERVAL": "timespan", "JSON": "dynamic",
              "UUID": "guid"}  # fmt: skip


def _kql_type(duckdb_type: str) -> str | None:
    upper = duckdb_type.upper()
    if upper.startswith("DECIMAL"):
        return "decimal"
    return _KQL_TYPES.get(upper)


def _statement_head(q: _Query, node: Any) -> str | None:
    """The query's text before the statement holding `node` (its `let`s), or None inside a
    function body (whose names are bound at the call)."""
    if _parent(node, "LetFunctionBody") is not None:
        return None
    top = _parent(node, "Statement")
    while top is not None and _parent(top, "Statement") is not None:
        top = _parent(top, "Statement")
    return q.text[: _span(top)[0]] if top is not None else ""


def _columns_of(q: _Query, node: Any, text: str, what: str) -> list[tuple[str, str]]:
    """The columns of the tabular KQL `text` evaluated where `node` is."""
    head = _statement_head(q, node)
    if head is None or q.inspector is None:
        raise KqlRefused(f"{what} needs its inputs' columns, which are unknown here")
    try:
        return q.inspector.columns(head + text, tuple(q.functions))
    except KqlRefused:
        raise
    except Exception as exc:
        raise KqlRefused(f"{what}: the input columns are unknown ({exc})") from None


def _operator(piped: Any) -> Any:
    """The operator node of a `| operator` (PipedOperator) node."""
    kids = _rules(piped)
    return _collapse(kids[0]) if kids else piped


def _columns_or_none(q: _Query, operator: Any, what: str) -> dict[str, str] | None:
    """The columns flowing into `operator` (name -> DuckDB type), None when unknown."""
    try:
        return dict(q.columns_before(operator, what))
    except KqlRefused:
        return None


# -- make-series | mv-expand of the axis --------------------------------------------------------


def _series_axis_expand(q: _Query) -> list[Edit]:
    """`make-series ... on T ... | mv-expand T` (no `to typeof`, T not reassigned between):
    `to typeof(datetime)`, the type of the values in the axis array (Kusto's make-series
    docs expand it and read datetimes)."""
    edits = []
    for node in q.nodes:
        if _kind(node) != "MakeSeriesOperator":
            continue
        on = next((p for p in _rules(node) if _kind(p) == "MakeSeriesOperatorOnClause"), None)
        axis = _as_column(_rules(on)[0]) if on is not None and _rules(on) else None
        piped, pipe = _parent(node, "PipedOperator"), _parent(node, "PipeExpression")
        if axis is None or piped is None or pipe is None:
            continue
        later = [k for k in _rules(pipe) if _span(k)[0] > _span(piped)[0]]
        for operator in later:
            inner = _operator(operator)
            if _kind(inner) in ("MvexpandOperator", "MvExpandOperator"):
                for item in _rules(inner):
                    parts = _rules(item)
                    if _kind(item) != "MvexpandOperatorExpression" or len(parts) != 1:
                        continue
                    if _as_column(parts[0]) == axis:
                        end = _span(item)[1]
                        edits.append(Edit(end, end, " to typeof(datetime)"))
                break
            if re.search(rf"(?<![\w.]){re.escape(axis)}\s*=(?!=)", q.source(operator)):
                break  # the axis reassigned: no longer the series' own
    return edits


# -- union of differently typed columns, withsource over views ----------------------------------


def _union_types(q: _Query) -> list[Edit]:
    """`union [withsource=S] A, B, ...` (also piped): where a column name has different
    types in the inputs, each input's column renamed `name_type` (`x_long`, `x_int`; a name
    already taken gets a number, `x_long1`), as Kusto's union docs show; with `withsource`,
    each row names its input (the `let` view's own name). Output: S, then the columns in
    order of first appearance. Left to duckdb-kql when no column's type differs and no input
    is a `let` name."""
    edits = []
    for node in q.nodes:
        if _kind(node) != "UnionOperator":
            continue
        params = [c for c in _rules(node) if _kind(c) == "RelaxedQueryOperatorParameter"]
        legs = [c for c in _rules(node) if _kind(c) == "UnionOperatorExpression"]
        others = [c for c in _rules(node) if c not in params and c not in legs]
        source: str | None = None
        options = []
        for param in params:
            name, _, value = (x.strip() for x in q.source(param).partition("="))
            if name.lower() == "withsource":
                source = value
            else:
                options.append((name.lower(), value.lower()))
        piped = _parent(node, "PipedOperator")
        inputs: list[tuple[str, str | None]] = []  # (KQL text, source name)
        if piped is not None:
            pipe = _parent(node, "PipeExpression")
            start, bar = _span(pipe)[0], _span(piped)[0]
            inputs.append((q.text[start:bar], None))
        lets = q.lets()
        let_leg = False
        for leg in legs:
            text = q.source(leg)
            leg_name = _name_of_leg(leg)
            if leg_name is not None and "*" in text:
                leg_name = None
            if leg_name is not None and leg_name in lets:
                let_leg = True
            inputs.append((text, leg_name))
        if others or any("*" in text for text, _ in inputs):
            continue  # wildcard table names: left to duckdb-kql
        if source is None and not inputs:
            continue
        if not legs:
            continue
        tables = catalog(q) if len(inputs) > 1 else {}
        if tables:  # a `let` name is not the table it may shadow
            tables = {t: cols for t, cols in tables.items() if t not in lets}
        try:
            columns = [static_leg_columns(text, tables) or _columns_of(q, node, text, "union")
                       for text, _ in inputs]  # fmt: skip
        except KqlRefused:
            continue  # duckdb-kql will run or refuse it as it does
        types: dict[str, set[str]] = {}
        for cols in columns:
            for name, kind in cols:
                types.setdefault(name, set()).add(kind)
        clash = {name for name, kinds in types.items() if len(kinds) > 1}
        if not clash and not (source is not None and let_leg):
            continue
        # isfuzzy=true only drops inputs that do not resolve (the union docs); every input's
        # columns were found above, so it is the plain union here
        allowed = (("kind", "outer"), ("isfuzzy", "false"), ("isfuzzy", "true"))
        if any(opt not in allowed for opt in options):
            raise KqlRefused("union with kind=inner over differently typed inputs")
        if piped is not None and source is not None:
            raise KqlRefused("a piped union with withsource over let views or typed columns")
        if source is not None and any(name is None for _, name in inputs):
            raise KqlRefused("union withsource of a subquery over let views or typed columns")
        taken = set(types)
        renamed: dict[tuple[str, str], str] = {}
        for cols in columns:
            for name, kind in cols:
                if name not in clash or (name, kind) in renamed:
                    continue
                kql = _kql_type(kind)
                if kql is None:
                    raise KqlRefused(f"union: a column {name!r} of the type {kind}")
                new, n = f"{name}_{kql}", 0
                while new in taken:
                    n += 1
                    new = f"{name}_{kql}{n}"
                taken.add(new)
                renamed[(name, kind)] = new
        order: list[str] = [source] if source is not None else []
        parts = []
        for (text, leg_name), cols in zip(inputs, columns, strict=True):
            pieces = [f"{quote_name(renamed[(c, k)])} = {quote_name(c)}"
                      for c, k in cols if (c, k) in renamed]  # fmt: skip
            body = text.strip()
            if body.startswith("(") and body.endswith(")"):
                body = body[1:-1]
            if pieces:
                body += f" | project-rename {', '.join(pieces)}"
            if source is not None:
                body += f" | extend {quote_name(source)} = {_string(leg_name or '')}"
            parts.append(body)
            for c, k in cols:
                out = renamed.get((c, k), c)
                if out not in order:
                    order.append(out)
        project = f" | project {', '.join(quote_name(c) for c in order)}"
        if piped is not None:
            pipe = _parent(node, "PipeExpression")
            first, *rest = parts
            text = f"union ({first}), " + ", ".join(f"({p})" for p in rest) + project
            edits.append(Edit(_span(pipe)[0], _span(node)[1], text))
        else:
            text = "union " + ", ".join(f"({p})" for p in parts) + project
            edits.append(Edit(*_span(node), text))
    return edits


def _name_of_leg(leg: Any) -> str | None:
    """The table or `let` name a union input is (None for a subquery)."""
    inner = _collapse(leg)
    if _kind(inner) in ("EntityNameReference", "EntityName", "IdentifierName",
                        "IdentifierOrExtendedKeywordOrEscapedName"):  # fmt: skip
        text = q_text = "".join(t.symbol.text for t in _tokens_of(inner))
        return q_text if re.fullmatch(r"[A-Za-z_][\w]*", text) else None
    return None


def _tokens_of(node: Any) -> list[Any]:
    out = []
    for child in _children(node):
        out.extend([child] if _is_token(child) else _tokens_of(child))
    return out


def _string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


# -- arg_min / arg_max (X, *) by an alias that is also an input column --------------------------


def _arg_star_alias(q: _Query) -> list[Edit]:
    """`summarize arg_min(X, *) by K = expr` where K also names an input column: Kusto keeps
    that input column, renamed K1 (K2, ... when taken), after X in input order
    (Kusto.Language's result type: `K, X, K1, ...`); duckdb-kql dropped it."""
    edits = []
    for node in q.nodes:
        if _kind(node) != "SummarizeOperator":
            continue
        by = next((c for c in _rules(node) if _kind(c) == "SummarizeOperatorByClause"), None)
        aggregates = [c for c in _rules(node) if c is not by]
        star = [c for c in _calls(node) if c.name.lower() in ("arg_min", "arg_max")
                and any(q.source(c.arg_value(i)).strip() == "*"
                        for i in range(len(c.args)))]  # fmt: skip
        if by is None or not star:
            continue
        keys = [_named_parts(q, item) for item in _rules(by)]
        aliased = [(name, text) for name, text in keys if name is not None and name != text]
        if not aliased:
            continue
        columns = _columns_or_none(q, node, "arg_min(*)")
        if columns is None:
            raise KqlRefused("arg_min/arg_max(*) by an alias: the input columns are unknown")
        clashing = [(name, text) for name, text in aliased if name in columns]
        if not clashing:
            continue
        call = star[0]
        if len(aggregates) != 1 or _collapse(aggregates[0]) is not call.node or len(call.args) != 2:
            raise KqlRefused("arg_min/arg_max(X, *) beside other aggregates, by an alias "
                             "that is also an input column")  # fmt: skip
        primary = _as_column(call.arg_value(0))
        if primary is None or any(name is None for name, _ in keys):
            raise KqlRefused("arg_min/arg_max(*) of an expression, by an input column's alias")
        temp = {name: f"_qe_by{i}" for i, (name, _) in enumerate(clashing)}
        extend = ", ".join(f"{temp[name]} = {text}" for name, text in clashing)
        by_list = ", ".join(temp[name] if name in temp else q.source(item)
                            for (name, _), item in zip(keys, _rules(by), strict=True))  # fmt: skip
        key_names = [name for name, _ in keys if name is not None]
        taken = set(columns) | set(key_names)
        out = [f"{quote_name(n)} = {temp[n]}" if n in temp else quote_name(n) for n in key_names]
        out.append(quote_name(primary))
        for column in columns:
            if column == primary or (column in key_names and column not in temp):
                continue
            if column in temp:
                n = 1
                while f"{column}{n}" in taken:
                    n += 1
                taken.add(f"{column}{n}")
                out.append(f"{quote_name(f'{column}{n}')} = {quote_name(column)}")
            else:
                out.append(quote_name(column))
        text = (f"extend {extend} | summarize {call.name}({q.source(call.arg_value(0))}, *) "
                f"by {by_list} | project {', '.join(out)}")  # fmt: skip
        edits.append(Edit(*_span(node), text))
    return edits


# -- a string column compared with an integer ---------------------------------------------------


def _string_number_compare(q: _Query) -> list[Edit]:
    """`Col == 5` / `Col != 5` (and `Col in (5, 6)`) for a string column: compared as text
    (`Col == "5"`).
    Kusto.Language accepts it (a bool, no diagnostic) and Kusto compares the number's text;
    duckdb-kql casts each row's string to a number, which fails on the first that is not."""
    edits = []
    for node in q.nodes:
        if _kind(node) != "EqualityExpression":
            continue
        kids = _rules(node)
        if len(kids) == 2 and _kind(kids[1]) == "ListEqualityExpression":
            edits.extend(_string_in_numbers(q, node, kids[0], kids[1]))
            continue
        if len(kids) != 2 or _kind(kids[1]) != "EqualsEqualityExpression":
            continue
        op = next((t.symbol.text for t in _children(kids[1]) if _is_token(t)), "")
        right = _rules(kids[1])
        if op not in ("==", "!=") or len(right) != 1:
            continue
        left_col, right_col = _as_column(kids[0]), _as_column(right[0])
        left_int, right_int = _integer_literal(kids[0]), _integer_literal(right[0])
        if left_col is not None and right_int is not None:
            column, literal = left_col, right[0]
        elif right_col is not None and left_int is not None:
            column, literal = right_col, kids[0]
        else:
            continue
        operator = _parent(node, "PipedOperator")
        if operator is None:
            continue
        columns = _columns_or_none(q, _operator(operator), "a comparison")
        if columns is None or str(columns.get(column, "")).upper() != "VARCHAR":
            continue
        edits.append(Edit(*_span(literal), f'"{_integer_literal(literal)}"'))
    return edits


def _string_in_numbers(q: _Query, node: Any, left: Any, listed: Any) -> list[Edit]:
    """`Col in (0, 50126)` / `!in` for a string column: the integers as text, as `==`."""
    column = _as_column(left)
    items = [i for i in _rules(listed) if _integer_literal(i) is not None]
    operator = _parent(node, "PipedOperator")
    if column is None or not items or operator is None:
        return []
    columns = _columns_or_none(q, _operator(operator), "a comparison")
    if columns is None or str(columns.get(column, "")).upper() != "VARCHAR":
        return []
    return [Edit(*_span(i), f'"{_integer_literal(i)}"') for i in items]


# -- x in (letTable) of dynamic arrays ---------------------------------------------------------


def _in_dynamic_table(q: _Query) -> list[Edit]:
    """`x in (T)` / `!in` where T is a `let` tabular whose first column holds dynamic arrays
    (`summarize makelist(x)`): Kusto's `in` takes the first column and flattens its arrays;
    here the arrays are expanded to elements typed as x."""
    edits = []
    lets = None
    for node in q.nodes:
        if _kind(node) != "ListEqualityExpression":
            continue
        items = _rules(node)
        if len(items) != 1:
            continue
        name = _as_column(items[0])
        lets = q.lets() if lets is None else lets
        declaration = lets.get(name) if name else None
        if declaration is None or _kind(declaration) != "LetVariableDeclaration":
            continue
        value = _rules(declaration)[-1]
        if not any(_kind(n) == "PipedOperator" for n in _walk(value)):
            continue  # a scalar or a literal list (`dynamic([...])`): duckdb-kql's own path
        equality = _parent(node, "EqualityExpression")
        left = _as_column(_rules(equality)[0]) if equality is not None else None
        try:
            first = _columns_of(q, node, q.source(value), "in")[:1]
        except KqlRefused:
            continue
        if not first or first[0][1].upper() != "JSON":
            continue
        operator = _parent(node, "PipedOperator")
        columns = _columns_or_none(q, _operator(operator), "in") if operator is not None else None
        kql = _kql_type(columns.get(left, "")) if columns is not None and left else None
        if kql is None and equality is not None:
            kql = _call_type(_rules(equality)[0])
        if kql is None or kql == "dynamic":
            raise KqlRefused("in (a table of dynamic arrays) for a value whose type is unknown")
        column = quote_name(first[0][0])
        text = (f"{name} | project _qe_in = {column} | mv-expand _qe_in to typeof({kql})"
                " | project _qe_in")  # fmt: skip
        edits.append(Edit(*_span(items[0]), text))
    return edits


# functions whose result type their name shows
_CALL_TYPES = {"tostring": "string", "tolower": "string", "toupper": "string", "trim": "string",
               "strcat": "string", "substring": "string", "extract": "string",
               "tolong": "long", "toint": "int", "toreal": "real", "todouble": "real",
               "todatetime": "datetime", "toguid": "guid", "tobool": "bool"}  # fmt: skip


def _call_type(node: Any) -> str | None:
    """The type of a call whose function's name shows it (`tostring(x)`: string), else None."""
    node = _collapse(node)
    calls = [c for c in _calls(node) if c.node is node]
    return _CALL_TYPES.get(calls[0].name.lower()) if calls else None


# -- regex group names that are not words -------------------------------------------------------

_GROUP = re.compile(r"\(\?P?<([^>=!]*)>")
_REGEX_ARGUMENT = {"extract": 0, "extract_all": 0, "extractall": 0, "replace_regex": 1,
                   "replace": 1, "countof": 1}  # fmt: skip


def _regex_group_names(q: _Query) -> list[Edit]:
    """A regex literal (of `matches regex`, extract, extract_all with two arguments,
    replace_regex) with a group name that is not a word: the group unnamed (these use groups
    by number); extract_all naming its groups, or `countof` of another kind, is refused."""
    edits = []
    literals: list[Any] = []
    for node in q.nodes:
        kids = _rules(node)
        regex = len(kids) == 2 and "regex" in q.source(kids[0]).lower()
        if _kind(node) == "StringBinaryOperation" and regex:
            literals.append(kids[1])
    for call in _calls(q.tree):
        position = _REGEX_ARGUMENT.get(call.name.lower())
        if position is not None and len(call.args) > position:
            literals.append(call.arg_value(position))
    for literal in literals:
        literal = _collapse(literal)
        if _kind(literal) != "StringLiteralExpression":
            continue
        text = q.source(literal)
        names = [m.group(1) for m in _GROUP.finditer(_literal_value(text))]
        if not any(not re.fullmatch(r"\w+", n) for n in names):
            continue
        owner = _parent(literal, "NamedFunctionCallExpression")
        if owner is not None:
            name = q.source(owner).split("(", 1)[0].strip().lower()
            if name in ("extract_all", "extractall") and q.source(owner).count(",") >= 2:
                inner = [c for c in _calls(owner) if c.node is owner]
                if inner and len(inner[0].args) == 3:
                    raise KqlRefused("extract_all naming groups whose names are not words")
            if name == "countof":
                raise KqlRefused("countof with a regex group name that is not a word")
        value = _GROUP.sub(
            lambda m: m.group(0) if re.fullmatch(r"\w+", m.group(1)) else "(", _literal_value(text)
        )
        edits.append(Edit(*_span(literal), _verbatim(value)))
    return edits


def _verbatim(value: str) -> str:
    if "\n" in value or "\r" in value:
        raise KqlRefused("a regex literal over several lines with an unnamed group")
    return "@'" + value.replace("'", "''") + "'"


# -- range | count ---------------------------------------------------------------------------


def _range_count(q: _Query) -> list[Edit]:
    """`range x from A to B step S | count` (integer literals, S not 0): its row count,
    max(0, (B - A) // S + 1), without making the rows (Kusto's range includes B)."""
    edits = []
    for node in q.nodes:
        if _kind(node) != "RangeExpression":
            continue
        pipe = _parent(node, "PipeExpression")
        kids = _rules(pipe) if pipe is not None else []
        if len(kids) < 2 or _collapse(kids[0]) is not node:
            continue
        follower = _operator(kids[1])
        count_op = _kind(follower) == "CountOperator" and not _rules(follower)
        summarize = _kind(follower) == "SummarizeOperator" and re.fullmatch(
            r"summarize\s+count\(\s*\)", q.source(follower).strip()
        )
        if not (count_op or summarize):
            continue
        values = [_integer_literal(v) for v in _rules(node)[1:]]
        if len(values) != 3 or any(v is None for v in values) or values[2] == 0:
            continue
        a, b, s = (int(v) for v in values if v is not None)
        n = max(0, (b - a) // s + 1)
        name = "Count" if count_op else "count_"
        edits.append(Edit(_span(node)[0], _span(kids[1])[1], f"print {name} = tolong({n})"))
    return edits


# -- parse with a pattern that starts with a capture ---------------------------------------------

# a character no real text holds (Unicode's first private-use code point)
_SENTINEL = "\\uE000"


def _parse_leading_capture(q: _Query) -> list[Edit]:
    """`parse X with c 'sep' ...` (default kind; `parse-where` too): c captures from the
    start of X. duckdb-kql takes a pattern starting with `*` or a literal only, so the text
    is prefixed with a sentinel character and the pattern with `* '<sentinel>'`: the same
    captures."""
    edits = []
    for node in q.nodes:
        if _kind(node) not in ("ParseOperator", "ParseWhereOperator"):
            continue
        kids = _rules(node)
        if len(kids) != 2 or _kind(kids[1]) != "ParseOperatorPattern":
            continue  # kind=regex/relaxed, or another shape: left to duckdb-kql
        pattern = kids[1]
        if not re.match(r"[A-Za-z_\[]", q.source(pattern)):
            continue  # starts with `*` or a literal
        a, b = _span(kids[0])
        edits.append(Edit(a, b, f"strcat('{_SENTINEL}', {q.source(kids[0])})"))
        start = _span(pattern)[0]
        edits.append(Edit(start, start, f"* '{_SENTINEL}' "))
    return edits


def _parse_capture_names(q: _Query) -> list[Edit]:
    """`parse x with ... ['Attribute Set Name'] ...` (and `parse-where`): duckdb-kql names
    its regex groups after the columns, and DuckDB's RE2 rejects a group name that is not a
    word; such a capture is made under a word name, then renamed in place (`project-rename`:
    the same column where Kusto puts it)."""
    edits = []
    for node in q.nodes:
        if _kind(node) not in ("ParseOperator", "ParseWhereOperator"):
            continue
        piped = _parent(node, "PipedOperator")
        renames: list[str] = []
        for capture in _walk(node):
            if _kind(capture) != "ParseOperatorNameAndOptionalType":
                continue
            reference = _rules(capture)[0]
            name = _name_of(reference)
            if name is None or re.fullmatch(r"\w+", name):
                continue
            if piped is None:
                raise KqlRefused("parse with a capture name that is not a word, outside a pipe")
            word = f"queryeval_capture_{len(renames) + 1}"
            edits.append(Edit(*_span(reference), word))
            renames.append(f"{quote_name(name)} = {word}")
        if renames and piped is not None:
            end = _span(piped)[1]
            edits.append(Edit(end, end, f" | project-rename {', '.join(renames)}"))
    return edits


# -- as ----------------------------------------------------------------------------------------


def _as_operator(q: _Query) -> list[Edit]:
    """`| as Name`: names the rows for later reference and passes them on unchanged; dropped
    when nothing else in the query names it, refused otherwise."""
    edits = []
    for node in q.nodes:
        if _kind(node) != "AsOperator":
            continue
        names = [n for n in _rules(node) if _as_column(n) is not None]
        name = _as_column(names[-1]) if names else None
        piped = _parent(node, "PipedOperator")
        if name is None or piped is None:
            raise KqlRefused("as with a name it cannot read")
        rest = q.text[: _span(piped)[0]] + q.text[_span(piped)[1] :]
        named = re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")
        if not named.search(rest):
            a, b = _span(piped)
            edits.append(Edit(a, b, ""))
            continue
        edits.append(_as_let(q, node, piped, name, named))
    return edits


def _as_let(q: _Query, node: Any, piped: Any, name: str, named: re.Pattern[str]) -> Edit:
    """`X | as T | rest` where rest names T, the query's own statement: `let T = X; T | rest`
    (the `as` docs: it binds a name as a `let` statement does). Refused elsewhere (in a
    subquery, a `let` or function body) or when T is named before the `as`."""
    pipe = _parent(node, "PipeExpression")
    statement = _parent(pipe, "Statement") if pipe is not None else None
    if (
        pipe is None
        or statement is None
        or _parent(statement, "Statement") is not None
        or _parent(pipe, "PipeExpression", "LetFunctionBody", "LetVariableDeclaration") is not None
        or any(_kind(p) not in ("AsOperator",) for p in _rules(node) if _as_column(p) is None)
    ):
        raise KqlRefused(f"as {name}: the query refers to {name} from a subquery or a let")
    start = _span(pipe)[0]
    head = q.text[start : _span(piped)[0]].rstrip()
    if named.search(q.text[:start]) or named.search(head):
        raise KqlRefused(f"as {name}: {name} is also named before the as")
    return Edit(start, _span(piped)[1], f"let {quote_name(name)} = {head};\n{quote_name(name)}")


# -- where * has "x", T | search "x" ----------------------------------------------------------

_STAR_OPERATORS = {"has", "contains", "startswith", "endswith", "==", "=~", "has_cs",
                   "contains_cs", "hasprefix", "hassuffix", "hasprefix_cs", "hassuffix_cs",
                   "!has", "!contains"}  # fmt: skip


def _star_predicates(q: _Query) -> list[Edit]:
    """`where * op "x"` (a string operator of every column): the operator over each input
    column (as text, `tostring` for other types), joined by `or` (`and` for a negated one);
    `search` as Kusto's docs ("search operator", its predicate syntax) spell it in `where`:
    a term "x" is `* has "x"` ("x*" hasprefix, "*x" hassuffix, "*x*" contains), `Col:"x"` is
    `Col has "x"`, other predicates as written, `search *` every row; the output starts with
    the column `$table` (Kusto.Language's result type). `T | search P` (T a table) is
    `T | where P'`; `search [in (Tables)] P` is `union Tables | where P'` over the tables
    named, or every table of the database when none is."""
    edits = []
    for node in q.nodes:
        if _kind(node) == "SearchOperator":
            edits.append(Edit(*_span(node), _search(q, node)))
            continue
        if _kind(node) != "StringStarOperatorExpression":
            continue
        kids = _rules(node)
        if len(kids) != 2:
            raise KqlRefused("a * predicate of an unexpected form")
        op = q.source(kids[0]).strip()
        if op not in _STAR_OPERATORS or _kind(_collapse(kids[1])) != "StringLiteralExpression":
            raise KqlRefused(f"* {op} other than of a string literal")
        clause = _star_clause(q, node, op, q.source(kids[1]), f"* {op}")
        edits.append(Edit(*_span(node), f"({clause})"))
    return edits


# the column that carries each row's table through a source `search` (renamed `$table`)
_SEARCH_SOURCE = "queryeval_search_table"
_TERM_PARENTS = {"LogicalAndExpression", "LogicalAndOperation", "LogicalOrExpression",
                 "LogicalOrOperation", "UnnamedExpression", "SearchOperator"}  # fmt: skip


def _search(q: _Query, node: Any) -> str:
    """A piped `search` as `where` (then `$table` first); a source one as a `union` of its
    tables (every table without `in`) that carries each row's table, piped into `search`."""
    kids = _rules(node)
    option = [k for k in kids if _kind(k) == "RelaxedQueryOperatorParameter"]
    scope = [k for k in kids if _kind(k) == "SearchOperatorInClause"]
    predicates = [k for k in kids if k not in option and k not in scope]
    if len(predicates) != 1 or len(option) > 1:
        raise KqlRefused("search of an unexpected form")
    kind = q.source(option[0]) + " " if option else ""
    if _parent(node, "PipedOperator") is None:  # search [in (Tables)] P
        sources = q.source(scope[0]).strip()[2:].strip()[1:-1] if scope else "*"
        return (f"union withsource={_SEARCH_SOURCE} {sources} "
                f"| search {kind}{q.source(predicates[0])}")  # fmt: skip
    if scope:
        raise KqlRefused("a piped search with an `in` clause")
    sensitive = False
    if option:
        text = re.sub(r"\s+", "", kind)
        if text not in ("kind=default", "kind=case_insensitive", "kind=case_sensitive"):
            raise KqlRefused(f"search with the option {kind.strip()}")
        sensitive = text == "kind=case_sensitive"
    predicate = _search_predicate(q, predicates[0], sensitive) or "true"
    if _after_search_union(q, node):
        columns = [_SEARCH_SOURCE]
    else:
        columns = [c for c, _ in q.columns_before(node, "search")]
    if _SEARCH_SOURCE in columns:  # the union of a source search
        return f"where {predicate} | project-rename ['$table'] = {_SEARCH_SOURCE}"
    table = _search_table(q, node)
    listed = ", ".join(quote_name(c) for c in columns)
    return f"where {predicate} | project ['$table'] = {_string(table)}, {listed}"


def _after_search_union(q: _Query, node: Any) -> bool:
    """Whether the piped operator `node` comes right after the union of a source search
    as `wildcard_unions` writes it, each input typed from the catalog with its table in
    `_SEARCH_SOURCE` (its columns known without asking the engine)."""
    pipe, piped = _parent(node, "PipeExpression"), _parent(node, "PipedOperator")
    kids = _rules(pipe) if pipe is not None else []
    if len(kids) < 2 or kids[1] is not piped:
        return False
    union = _collapse(kids[0])
    if _kind(union) != "UnionOperator":
        return False
    legs = [c for c in _rules(union) if _kind(c) == "UnionOperatorExpression"]
    if not legs or len(legs) != len(_rules(union)):
        return False  # options (withsource, kind): left to the engine
    tables = {t: cols for t, cols in catalog(q).items() if t not in q.lets()}
    for leg in legs:
        columns = static_leg_columns(q.source(leg), tables)
        if columns is None or (_SEARCH_SOURCE, "VARCHAR") not in columns:
            return False
    return True


def searches_as_unions(query: str) -> str:
    """`query` with each source `search` written as the `union` it searches, piped into a
    `search` (what `_kql_case` separates columns of case-colliding tables in).

    >>> searches_as_unions('search in (A, B) "x" | count')
    'union withsource=queryeval_search_table A, B | search "x" | count'
    """
    query = syntax_repaired(query)
    tree = parsed(query)
    if tree is None:  # not KQL duckdb-kql parses: prepare gives its verdict
        return query
    q = _Query(query, tree, None)
    edits = [(*_span(n), _search(q, n)) for n in _walk(tree)
             if _kind(n) == "SearchOperator" and _parent(n, "PipedOperator") is None]  # fmt: skip
    for a, b, new in sorted(edits, reverse=True):
        query = query[:a] + new + query[b:]
    return query


def _search_predicate(q: _Query, predicate: Any, sensitive: bool) -> str:
    """A search predicate as a `where` predicate ("" for `*`: every row)."""
    if _kind(_collapse(predicate)) == "StarExpression":
        return ""
    suffix = "_cs" if sensitive else ""
    start = _span(predicate)[0]
    text = q.source(predicate)
    edits: list[tuple[int, int, str]] = []
    for literal in _walk(predicate):
        if _kind(literal) != "StringLiteralExpression":
            continue
        a, b = _span(literal)
        value = _literal_value(q.source(literal))
        top = literal
        while (up := getattr(top, "parentCtx", None)) is not None and _span(up) == (a, b):
            top = up
        operation = _parent(literal, "StringBinaryOperation")
        if up is not None and _kind(up) in _TERM_PARENTS:  # a bare term: every column
            op, term = _term_operator(value)
            edits.append((a - start, b - start, f"* {op}{suffix} {_string(term)}"))
        elif operation is not None and q.source(operation).lstrip().startswith(":"):
            colon = _span(operation)[0] - start  # Col:"x" is Col has "x" (as text)
            whole = _parent(operation, "StringBinaryOperatorExpression")
            left = _rules(whole)[0] if whole is not None else None
            if left is None or _span(left)[1] > _span(operation)[0]:
                raise KqlRefused("search with a column term of an unexpected form")
            op, term = _term_operator(value)
            edits.append((_span(left)[0] - start, _span(left)[0] - start, "tostring("))
            edits.append((colon, colon + 1, f") {op}{suffix} "))
            edits.append((a - start, b - start, _string(term)))
        elif sensitive:
            raise KqlRefused("search kind=case_sensitive with a string other than a term")
    for a, b, new in sorted(edits, reverse=True):
        text = text[:a] + new + text[b:]
    return text


def _term_operator(term: str) -> tuple[str, str]:
    """The string operator a search term stands for, and the term without its wildcards."""
    inner = term.strip("*")
    if "*" in inner or not inner:
        raise KqlRefused("search of a term with a wildcard inside it (a regex match)")
    if term.startswith("*") and term.endswith("*"):
        return "contains", inner
    if term.endswith("*"):
        return "hasprefix", inner
    if term.startswith("*"):
        return "hassuffix", inner
    return "has", inner


def _search_table(q: _Query, node: Any) -> str:
    """The table a piped `search` names in its `$table` column (Kusto.Language's result
    type starts with it): the pipeline's source when search is its first operator and the
    source a table; refused otherwise (what Kusto names there is not established)."""
    piped, pipe = _parent(node, "PipedOperator"), _parent(node, "PipeExpression")
    kids = _rules(pipe) if pipe is not None else []
    table = _as_column(kids[0]) if kids else None
    if piped is None or len(kids) < 2 or kids[1] is not piped or table is None:
        raise KqlRefused("search other than right after a table")
    if table in q.lets():
        raise KqlRefused("search of a let name, whose $table is not established")
    return table


def _star_clause(q: _Query, node: Any, op: str, literal: str, what: str) -> str:
    columns = [c for c in q.columns_before(node, what) if c[0] != _SEARCH_SOURCE]
    if not columns:
        raise KqlRefused(f"{what} of rows without columns")
    parts = []
    for name, kind in columns:
        value = quote_name(name)
        if kind.upper() != "VARCHAR":
            value = f"tostring({value})"
        parts.append(f"{value} {op} {literal}")
    return (" and " if op.startswith("!") else " or ").join(parts)


# -- x.[0] -------------------------------------------------------------------------------------


def _legacy_element(q: _Query) -> list[Edit]:
    """`x.[i]`, the legacy spelling of an element access that Kusto.Language still reads as
    `x[i]`: written `x[i]`."""
    if ".[" not in q.text:
        return []
    edits = []
    for node in q.nodes:
        if _kind(node) == "LegacyFunctionCallOrPathElementOperation":
            start = _span(node)[0]
            if q.text[start] == ".":
                edits.append(Edit(start, start + 1, ""))
    return edits


# -- mv-apply of row-wise operators ------------------------------------------------------------

# row-wise: each row on its own gives its rows (a nested mv-apply is rewritten in a later pass,
# or refused there when its own subquery is not row-wise)
_ROW_WISE = re.compile(r"\|?\s*(where|filter|extend|mv-expand|mv-apply)\b", re.I)


def _mv_apply(q: _Query) -> list[Edit]:
    """`mv-apply [x =] arr [to typeof(T)] on (where ... | extend ...)`: Kusto's docs
    ("mv-apply operator"): each row is mv-expanded into a subtable, the subquery applied to
    it, the row's other columns added back, the results unioned. With a subquery of only
    row-wise operators (`where`, `extend`; a last `project` of the expanded name) that is
    `mv-expand` followed by the subquery (also with a nested `mv-apply` or `mv-expand` of
    the row, as row-wise); the expanded column comes last (Kusto.Language's
    result type: `T | mv-apply arr on (...)` moves `arr` after the other columns). Other
    subqueries (summarize, top, take, ...) and options are refused."""
    edits = []
    for node in q.nodes:
        if _kind(node) != "MvapplyOperator" or _parent(node, "MvapplyOperator") is not None:
            continue  # a nested one: once the outer one is rewritten (its input then known)
        kids = _rules(node)
        items = [k for k in kids if _kind(k) == "MvapplyOperatorExpression"]
        subs = [k for k in kids if _kind(k) == "ContextualSubExpression"]
        if len(items) != 1 or len(subs) != 1 or len(kids) != 2:
            raise KqlRefused("mv-apply with several arrays, options or an unusual subquery")
        parts = _rules(items[0])
        named = parts[0]
        to = " " + q.source(parts[1]) if len(parts) > 1 else ""
        name_clause = [k for k in _rules(named) if _kind(k) == "NamedExpressionNameClause"]
        value = q.source(_rules(named)[-1]).strip()
        pipe = _rules(subs[0])[0] if _rules(subs[0]) else None
        operators = [q.source(op).strip() for op in _rules(pipe)] if pipe is not None else []
        if name_clause:
            name = q.source(name_clause[0]).strip()[:-1].strip()
            if name in {c for c, _ in q.columns_before(node, "mv-apply")}:
                raise KqlRefused("mv-apply naming its element after an input column")
            expand = f"mv-expand {name} = {value}{to}"
        else:
            name = value
            if not re.fullmatch(r"[A-Za-z_]\w*", name):
                raise KqlRefused("mv-apply of an expression without a name")
            hold = "queryeval_apply"
            expand = (f"extend {hold} = {name} | project-away {name} "
                      f"| mv-expand {name} = {hold}{to} | project-away {hold}")  # fmt: skip
        if operators and re.fullmatch(rf"\|?\s*project\s+{re.escape(name)}", operators[-1]):
            operators = operators[:-1]  # the expanded column: the row's other ones come back
        if not operators or not all(_ROW_WISE.match(op) for op in operators):
            raise KqlRefused("mv-apply with a subquery other than row-wise where/extend")
        body = " | ".join(op.lstrip("|").strip() for op in operators)
        edits.append(Edit(*_span(node), f"{expand} | {body}"))
    return edits


# -- externaldata -------------------------------------------------------------------------------

EXTERNALDATA_REFUSAL = "externaldata reads its rows from a URL, which an offline evaluator"


def _externaldata(q: _Query) -> list[Edit]:
    """`externaldata(...) [URL]` reads rows over the network at query time: the evaluator
    cannot (it runs offline), so the query is refused as the evaluator's, never run without
    those rows."""
    if "externaldata" not in q.text.lower():
        return []
    for node in q.nodes:
        if _kind(node) == "ExternalDataExpression":
            urls = [q.source(n) for n in _walk(node) if _kind(n) == "StringLiteralExpression"]
            url = urls[0][:80] if urls else "?"
            raise KqlRefused(f"{EXTERNALDATA_REFUSAL} does not fetch ({url})")
    return []


# -- string operators on dynamic arrays -----------------------------------------------------------

_STRING_CALLS = ("tostring",)  # a function whose argument Kusto reads as text
# the calls whose results duckdb-kql holds as DuckDB lists (the rule looks no further without)
_LIST_MAKERS = re.compile(
    r"\b(?:\w*make_?(?:list|set)\w*|split|extract_?all|array_\w+|bag_keys|series_\w+"
    r"|parse_csv)\s*\(",
    re.IGNORECASE,
)


def _array_as_text(q: _Query) -> list[Edit]:
    """A column holding arrays (`summarize v = make_list(x)`, `split`) read as text: the
    left operand of a string operator (`v has "x"`, `v contains "x"`, `v has_any (...)`,
    `v matches regex ...`) or `tostring(v)`. Kusto reads a dynamic value as its JSON text
    there (Kusto.Language types `v has "x"` bool, no diagnostic); duckdb-kql's arrays are
    DuckDB lists, which its string operators do not take and whose cast to text is not JSON
    (`[a, b]`): the column is made dynamic first (`todynamic(v)`, JSON text, as a `dynamic`
    literal there)."""
    if not _LIST_MAKERS.search(q.text):
        return []
    edits = []
    operands: list[Any] = []
    for node in q.nodes:
        kind = _kind(node)
        kids = _rules(node)
        if kind == "StringBinaryOperatorExpression" and len(kids) == 2:
            operands.append(kids[0])
        elif kind == "EqualityExpression" and len(kids) == 2:
            if _kind(kids[1]) != "ListEqualityExpression":
                continue
            op = next((t.symbol.text.lower() for t in _children(kids[1]) if _is_token(t)), "")
            if op in ("has_any", "has_all"):
                operands.append(kids[0])
    for call in _calls(q.tree):
        if call.name.lower() in _STRING_CALLS and len(call.args) == 1:
            operands.append(call.arg_value(0))
    for operand in operands:
        column = _as_column(operand)
        operator = _parent(operand, "PipedOperator")
        if column is None or operator is None:
            continue
        columns = _columns_or_none(q, _operator(operator), "a string operator")
        kind = str(columns.get(column, "")).upper() if columns is not None else ""
        if not kind.endswith("[]"):
            continue
        if kind[:-2] not in _JSON_ELEMENTS:  # datetimes, timespans: not Kusto's JSON text
            raise KqlRefused(f"an array of {kind[:-2]} read as text: Kusto's JSON text of "
                             "its elements is not reproduced")  # fmt: skip
        edits.append(Edit(*_span(_collapse(operand)), f"todynamic({quote_name(column)})"))
    return edits


# list element types whose JSON text DuckDB writes as Kusto does
_JSON_ELEMENTS = {"VARCHAR", "BIGINT", "INTEGER", "DOUBLE", "BOOLEAN"}


# -- abs of a timespan ----------------------------------------------------------------------------


def _abs_timespan(q: _Query) -> list[Edit]:
    """`abs(x)` of a timespan (`abs(SigninTime - RiskTime)`; the abs docs take a timespan):
    `iif((x) < 0s, 0s - (x), (x))`, where duckdb-kql's abs mixed an interval and an integer
    (a translation error). The type of x is asked of the engine, on the operator's input."""
    if "abs" not in q.text.lower():
        return []
    edits = []
    for call in _calls(q.tree):
        if call.name.lower() != "abs" or len(call.args) != 1 or any(call.arg_names()):
            continue
        operator = _parent(call.node, "PipedOperator")
        if operator is None:
            continue
        text = q.source(call.arg_value(0))
        try:
            inspector, prefix = q._before(_operator(operator), "abs")
            columns = inspector.columns(f"{prefix} | project __qe_abs = {text}", tuple(q.functions))
        except Exception:  # not asked here (a function body, a name the operator defines)
            continue
        if [kind.upper() for _, kind in columns] != ["INTERVAL"]:
            continue
        edits.append(Edit(*_span(call.node), f"iif(({text}) < 0s, 0s - ({text}), ({text}))"))
    return edits


# -- evaluate plugins ------------------------------------------------------------------------------

_PLUGIN_REASONS = {
    "ipv4_lookup": "a join on IPv4 ranges (each row matched to the lookup table's prefixes), "
    "which the embedded engine does not translate",
    "narrow": "its rows come from every column's text, in an order Kusto's docs do not define",
}


def _evaluate_plugins(q: _Query) -> list[Edit]:
    """`evaluate plugin(...)` other than `bag_unpack` (rewritten in `_kql_rewrite`): refused
    with the reason, as duckdb-kql runs no plugin ("EvaluateOperator ... not implemented")."""
    if "evaluate" not in q.text.lower():
        return []
    for node in q.nodes:
        if _kind(node) != "EvaluateOperator":
            continue
        calls = [c for c in _calls(node) if _collapse(_rules(node)[-1]) is c.node]
        name = calls[0].name.lower() if calls else "?"
        if name == "bag_unpack":
            continue
        if name == "pivot" and calls:
            return [Edit(*_span(node), _pivot(q, node, calls[0]))]
        reason = _PLUGIN_REASONS.get(name, "a plugin the embedded engine does not run")
        raise KqlRefused(f"evaluate {name}: {reason}")
    return []


def _pivot(q: _Query, node: Any, call: Any) -> str:
    """`evaluate pivot(P [, count()] [, C1, ...])`. Kusto's docs ("pivot plugin"): one
    output column per unique value of P, each cell the aggregate over the rows of that value
    (count() by default, 0 where none: the docs' first example), grouped by C1, ... (by
    default every input column other than P); the columns C1, ..., then the values. The
    values come from the data, so the input is run first (its distinct values of P as the
    keys of one bag). The docs leave the order of the value columns open (their example puts
    ARKANSAS before ARIZONA): here sorted, and a scorer matching columns by name (the
    default) is not affected. Refused: another aggregate, an output schema, a value that is
    empty, a group column's name, or another value's name but for case."""
    if any(call.arg_names()) or len(_rules(node)) != 1:
        raise KqlRefused("evaluate pivot with named arguments or an output schema")
    pivot = _as_column(call.arg_value(0)) if call.args else None
    if pivot is None:
        raise KqlRefused("evaluate pivot of an expression")
    rest = [call.arg_value(i) for i in range(1, len(call.args))]
    if rest and _kind(_collapse(rest[0])) == "CountExpression":
        if _rules(_collapse(rest[0])):
            raise KqlRefused("evaluate pivot with count(x)")
        rest = rest[1:]
    groups = [_as_column(g) for g in rest]
    if any(g is None for g in groups):
        raise KqlRefused("evaluate pivot with an aggregate other than count()")
    columns = [c for c, _ in q.columns_before(node, "evaluate pivot")]
    if pivot not in columns or any(g not in columns for g in groups):
        return q.source(node)  # a name the input lacks: duckdb-kql gives the query's error
    keys: list[str] = [g for g in groups if g is not None] or [c for c in columns if c != pivot]
    inspector, prefix = q._before(node, "evaluate pivot")
    bag = f"{prefix} | summarize _qe_values = make_bag(bag_pack(tostring({quote_name(pivot)}), 1))"
    values = sorted(key for key, _ in inspector.bag_slots(bag, tuple(q.functions), "_qe_values"))
    folded = [v.casefold() for v in values] + [k.casefold() for k in keys]
    if "" in values or len(set(folded)) != len(folded):
        raise KqlRefused("evaluate pivot: a value that is empty, or a column's name but for case")
    by = ", ".join(quote_name(k) for k in keys)
    if not values:
        return f"distinct {by}" if keys else "take 0"
    cells = ", ".join(f"{quote_name(v)} = countif(tostring({quote_name(pivot)}) == {_string(v)})"
                      for v in values)  # fmt: skip
    return f"summarize {cells} by {by}" if keys else f"summarize {cells}"


KUSTO_RULES = (
    _evaluate_plugins,
    _abs_timespan,
    _array_as_text,
    _externaldata,
    _mv_apply,
    _legacy_element,
    _range_count,
    _series_axis_expand,
    _union_types,
    _arg_star_alias,
    _string_number_compare,
    _in_dynamic_table,
    _regex_group_names,
    _parse_leading_capture,
    _parse_capture_names,
    _as_operator,
    _star_predicates,
    *FUNCTION_RULES,
)


# -- union * (and union Pattern*, a source search) over the database's tables ---------------------

# most table columns a wildcard union may carry into its legs when the query may read every
# column (no summarize/distinct/project/count keeps only named ones first): a count, never a time
MAX_WILDCARD_COLUMNS = 2000
_CLOSING = {"SummarizeOperator", "DistinctOperator", "ProjectOperator", "CountOperator"}
_PASSING = {"WhereOperator", "FilterOperator", "ExtendOperator", "ProjectRenameOperator",
            "SortOperator", "OrderOperator", "TakeOperator", "LimitOperator", "TopOperator",
            "MvexpandOperator", "MvExpandOperator", "ParseOperator", "ParseWhereOperator",
            "SerializeOperator", "SearchOperator"}  # fmt: skip
# what reads column names as data, or every column: the legs then carry every column
_READS_ALL = re.compile(
    r"\*|\b(pack_all|column_ifexists|columnifexists|getschema|buildschema|bag_pack|pack)\b", re.I
)
_WORDS = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|\['(?:[^'\\]|\\.)*'\]|\[\"(?:[^\"\\]|\\.)*\"\]")


def wildcard_unions(query: str, tables: dict[str, dict[str, str]]) -> str:
    """`query` with each `union [withsource=S] Pattern*, ...` (and each source `search`, a
    union of every table: `searches_as_unions`) written as the union of the tables it
    matches, from the catalog (`tables`: name -> {column: DuckDB type}), once. Kusto's union
    docs: the outer union has every column of its inputs, one column per name and type, a
    name with several types suffixed `_` and the type (`Level_int`, `Level_string`);
    `withsource` adds a first column naming each row's table. Each leg carries only the
    columns the query names when what follows the union keeps only named columns (a
    summarize, distinct, project or count after row-wise operators): the other columns can
    reach no output. Otherwise every column, up to `MAX_WILDCARD_COLUMNS` in all (a count:
    past it the query is refused). Left as is: a piped union, `kind=inner`, a pattern that
    matches no table (duckdb-kql reports Kusto's error).

    >>> wildcard_unions("union withsource=S * | summarize n = count() by S",
    ...                 {"A": {"a": "BIGINT"}, "B": {"a": "VARCHAR", "b": "BIGINT"}})
    "union (A | project S = 'A'), (B | project S = 'B') | summarize n = count() by S"
    >>> wildcard_unions("union * | take 1", {"A": {"a": "BIGINT"}, "B": {"a": "VARCHAR"}})
    'union (A | project a_long = a), (B | project a_string = a) | take 1'
    """
    lowered = query.lower()
    if "union" not in lowered and "search" not in lowered:
        return query
    if "search" in lowered:
        query = searches_as_unions(query)
    query = syntax_repaired(query)
    tree = parsed(query)
    if tree is None:
        return query
    tables = {t: cols for t, cols in tables.items() if "." not in t}
    names = {_word(w) for w in _WORDS.findall(query)}
    edits = []
    for node in _walk(tree):
        if _kind(node) != "UnionOperator" or _parent(node, "PipedOperator") is not None:
            continue
        legs = [c for c in _rules(node) if _kind(c) == "UnionOperatorExpression"]
        patterns = [_collapse(leg) for leg in legs]
        if not any(_kind(p) in ("WildcardedEntityExpression", "WildcardedNameReference",
                                "WildcardedName") for p in patterns):  # fmt: skip
            continue
        text = _expanded_union(query, node, legs, tables, names)
        if text is not None:
            edits.append((*_span(node), text))
    for a, b, new in sorted(edits, reverse=True):
        query = query[:a] + new + query[b:]
    return query


def _word(word: str) -> str:
    if word.startswith("["):
        return _literal_value(word[1:-1])
    return word


def _expanded_union(query: str, node: Any, legs: list[Any], tables: dict[str, dict[str, str]],
                    names: set[str]) -> str | None:  # fmt: skip
    """The union `node` with its wildcard legs expanded (see `wildcard_unions`), None to leave
    it as is."""
    import fnmatch

    source: str | None = None
    for param in (c for c in _rules(node) if _kind(c) == "RelaxedQueryOperatorParameter"):
        key, _, value = (x.strip() for x in query[slice(*_span(param))].partition("="))
        if key.lower() == "withsource":
            source = value
        elif (key.lower(), value.lower()) not in (("kind", "outer"), ("isfuzzy", "true"),
                                                  ("isfuzzy", "false")):  # fmt: skip
            return None  # kind=inner, hints: left as is
    matched: list[str] = []
    for leg in legs:
        text = query[slice(*_span(leg))].strip()
        if text in tables:
            matched.append(text)
            continue
        if not re.fullmatch(r"[\w*]+", text) or "*" not in text:
            return None  # a subquery or a let name beside a wildcard: left as is
        found = sorted(fnmatch.filter(tables, text))
        if not found:
            return None
        matched.extend(found)
    from queryeval.engines._kql_case import decode_column

    pruned = _keeps_named_columns(query, node)
    # a table holding two spellings stores the later one encoded (`_kql_case`): named by it
    kept = {t: [(c, k) for c, k in tables[t].items() if not pruned or decode_column(c) in names]
            for t in dict.fromkeys(matched)}  # fmt: skip
    if source is not None and any(decode_column(c) == source for cols in kept.values()
                                  for c, _ in cols):  # fmt: skip
        # Kusto.Language's union: the withsource column, then the inputs' columns, two
        # columns of one name; which one a later operator reads is not documented
        raise KqlRefused(f"union withsource={source} over a table that has a column {source}")
    width = sum(len(cols) for cols in kept.values())
    if not pruned and width > MAX_WILDCARD_COLUMNS:
        raise KqlRefused(
            f"a union of {len(matched)} tables ({width} columns in all) whose every column the "
            f"query may read: past the embedded engine's {MAX_WILDCARD_COLUMNS} columns"
        )
    types: dict[str, set[str]] = {}
    for cols in kept.values():
        for column, kind in cols:
            types.setdefault(decode_column(column), set()).add(kind)
    out = []
    for table in matched:
        items = [f"{quote_name(source)} = {_string(table)}"] if source is not None else []
        folded = [decode_column(c).casefold() for c, _ in kept[table]]
        for column, kind in kept[table]:
            spelling = decode_column(column)
            if len(types[spelling]) == 1:
                if spelling != column and folded.count(spelling.casefold()) == 1:
                    # stored encoded beside another spelling this leg does not carry: the
                    # leg names it as the query does (no other spelling to keep apart here)
                    items.append(f"{quote_name(spelling)} = {quote_name(column)}")
                else:
                    items.append(quote_name(column))
                continue
            kql = _kql_type(kind)
            if kql is None:
                raise KqlRefused(f"union *: a column {spelling!r} of the type {kind}")
            items.append(f"{quote_name(f'{spelling}_{kql}')} = {quote_name(column)}")
        if not items:  # the table's rows still count: a column no later operator reads
            items = ["queryeval_union_row = true"]
        out.append(f"({quote_name(table)} | project {', '.join(items)})")
    return "union " + ", ".join(out)


def _keeps_named_columns(query: str, union: Any) -> bool:
    """Whether the pipeline the union heads reaches a summarize, distinct, project or count
    (keeping only columns it names) through operators that neither read every column nor
    name columns as data."""
    pipe = _parent(union, "PipeExpression")
    if (
        pipe is None
        or not _rules(pipe)
        or _span(_rules(pipe)[0]) != _span(_parent(union, "BeforePipeExpression") or union)
    ):
        return False
    for piped in _rules(pipe)[1:]:
        operator = _operator(piped)
        kind = _kind(operator)
        text = query[slice(*_span(operator))]
        if kind == "SearchOperator":
            if re.fullmatch(r"search\s+\*", text.strip()):
                continue  # every row, no column read
            return False  # a term is matched in every column of every table's rows
        if _READS_ALL.search(text) or kind not in _CLOSING | _PASSING:
            return False
        if kind in _CLOSING:
            return True
    return False


_NAME_RE = r"(?:[A-Za-z_][A-Za-z_0-9]*|\['(?:[^'\\]|\\.)*'\])"
_ITEM = re.compile(rf"\s*({_NAME_RE})(?:\s*=\s*({_NAME_RE}|'(?:[^'\\]|\\.)*'|true))?\s*(?:,|$)")
_LEG_UNION = re.compile(r"union\s*(\(.*\))\s*\|\s*project\s+([^|()]*)", re.S)
_LEG_TABLE = re.compile(rf"({_NAME_RE})\s*\|\s*(project-rename|project)\s+([^|()]*)", re.S)


def _items(text: str) -> list[tuple[str, str | None]] | None:
    """`a, b = c, s = 'T'` as (name, source): the source a column name, "'" for a string
    literal, "!" for true; None when the list is of another form."""
    out: list[tuple[str, str | None]] = []
    pos = 0
    while pos < len(text):
        match = _ITEM.match(text, pos)
        if match is None or match.end() == pos:
            return None
        value = match.group(2)
        source: str | None = None
        if value is not None:
            source = "'" if value.startswith("'") else "!" if value == "true" else _word(value)
        out.append((_word(match.group(1)), source))
        pos = match.end()
    return out


def static_leg_columns(
    text: str, tables: dict[str, dict[str, str]]
) -> list[tuple[str, str]] | None:
    """The columns (name, DuckDB type) of a union leg of the forms `wildcard_unions` and
    `_kql_case.separate_case` write: `T`, `(T | project ...)`, `(T | project-rename ...)` and
    `(union (T | project-rename ...) | project ...)`, read from the catalog; None for any
    other leg (asked of the engine).

    >>> static_leg_columns("(T | project S = 'T', b_long = b)", {"T": {"b": "BIGINT"}})
    [('S', 'VARCHAR'), ('b_long', 'BIGINT')]
    """
    text = text.strip()
    if text in tables:
        return list(tables[text].items())
    if not (text.startswith("(") and text.endswith(")")):
        return None
    inner = text[1:-1].strip()
    nested = _LEG_UNION.fullmatch(inner)
    if nested is not None:
        base = static_leg_columns(nested.group(1), tables)
        return None if base is None else _projected(dict(base), nested.group(2))
    match = _LEG_TABLE.fullmatch(inner)
    if match is None or _word(match.group(1)) not in tables:
        return None
    columns = dict(tables[_word(match.group(1))])
    if match.group(2) == "project":
        return _projected(columns, match.group(3))
    renames = _items(match.group(3))
    if renames is None or any(s is None or s in "'!" or s not in columns for _, s in renames):
        return None
    moved = {old: new for new, old in renames}
    return [(moved.get(name, name), kind) for name, kind in columns.items()]


def _projected(columns: dict[str, str], text: str) -> list[tuple[str, str]] | None:
    """The columns of `| project <text>` over `columns` (None for an item it cannot type)."""
    items = _items(text)
    if items is None:
        return None
    out = []
    for name, source in items:
        if source == "'":
            out.append((name, "VARCHAR"))
        elif source == "!":
            out.append((name, "BOOLEAN"))
        elif (source or name) in columns:
            out.append((name, columns[source or name]))
        else:
            return None
    return out


def catalog(q: _Query) -> dict[str, dict[str, str]]:
    """The database's tables as the engine reads them, name -> {column: DuckDB type} ({}
    when the inspector does not say)."""
    schema = getattr(q.inspector, "cached_schema", None)
    if schema is None:
        return {}
    try:
        return dict(schema().get("tables", {}))
    except Exception:  # the catalog cannot be read: every leg asked of the engine
        return {}
