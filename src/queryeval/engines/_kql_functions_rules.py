"""Rewrite rules for KQL functions that no row of duckdb-kql's function table can express
alone: each rewrites a call into KQL duckdb-kql runs, with Kusto's answer, or refuses it
(`KqlRefused`). The query rewriter (`_kql_rewrite_kusto.KUSTO_RULES`) runs `FUNCTION_RULES`
with its own rules.

- `extend (a, b, ...) = series_fit_2lines(s)` (and series_fit_line): one column per name,
  each from queryeval's row for that output (`_kql_functions_series`), in Kusto.Language's
  order; Kusto's docs: this form returns only the named columns. Unnamed, `project` and
  single-name forms are refused.
- `case()`/`iff()`/`iif()` mixing dynamic values with strings: the dynamic ones as their
  string form (Kusto.Language's result type, see `_case_dynamic_values`).
- `column_ifexists('name', default)`: the column when the operator's input has it (its name
  exactly, as Kusto's names are case-sensitive), else the default. Kusto.Language types the
  call as the default's type, so a column found is taken only when its type is the default
  literal's (string, long, real, bool). Unnamed, it is named after the column found, or
  after the default column (the docs' `project column_ifexists("Capital", State)` is State).
  A name found only in another case or spelling, a default that is not a literal with a
  column found, and an unnamed call with an absent column whose default is not a column are
  refused.

    >>> from queryeval.engines._kql_rewrite import _apply, parsed
    >>> text = "T | extend (r, s) = series_fit_2lines(y)"
    >>> _apply(text, _series_fits(_Query(text, parsed(text), None)))
    'T | extend r = queryeval_fit2_rsquare(y), s = queryeval_fit2_split_idx(y)'
"""

from __future__ import annotations

import re
from typing import Any

from queryeval.engines._kql_functions_series import LINE_OUTPUTS, OUTPUTS
from queryeval.engines._kql_rewrite import (
    Edit,
    KqlRefused,
    _as_column,
    _calls,
    _collapse,
    _kind,
    _name_of,
    _parent,
    _Query,
    _rules,
    _span,
    _whole_of,
)
from queryeval.languages.kql import quote_name

# a string literal without escapes: its text between the quotes is its value
_PLAIN_STRING = re.compile(r"'[^'\\\n]*'|\"[^\"\\\n]*\"")


# the functions returning several columns: their rows' prefix and outputs, in order
_TUPLES = {"series_fit_2lines": ("queryeval_fit2_", OUTPUTS),
           "series_fit_line": ("queryeval_fit1_", LINE_OUTPUTS)}  # fmt: skip


def _series_fits(q: _Query) -> list[Edit]:
    edits = []
    for call in _calls(q.tree):
        function = call.name.lower()
        if function not in _TUPLES:
            continue
        prefix, outputs = _TUPLES[function]
        whole = _whole_of(call.node)
        operator = getattr(whole, "parentCtx", None)
        clause = _rules(whole)[0] if whole is not None else None
        listed = next((c for c in _rules(clause) if _kind(c) == "NamedExpressionNameList"),
                      None) if clause is not None else None  # fmt: skip
        if _kind(operator) != "ExtendOperator" or listed is None:
            raise KqlRefused(f"{function}() other than as `extend (a, b, ...) = "
                             f"{function}(s)` (its columns' other names)")  # fmt: skip
        names = [_name_of(c) for c in _rules(listed)]
        if len(call.args) != 1 or not 1 <= len(names) <= len(outputs) or None in names:
            raise KqlRefused(f"{function}() with other than one series and 1-{len(outputs)} "
                             "names")  # fmt: skip
        series = q.source(call.arg_value(0))
        parts = [f"{quote_name(str(name))} = {prefix}{output}({series})"
                 for name, output in zip(names, outputs, strict=False)]  # fmt: skip
        edits.append(Edit(*_span(whole), ", ".join(parts)))
    return edits


# a default literal's node kind -> the DuckDB type a column must have to be taken as it
_DEFAULT_TYPES = {
    "StringLiteralExpression": "VARCHAR",
    "LongLiteralExpression": "BIGINT",
    "RealLiteralExpression": "DOUBLE",
    "BooleanLiteralExpression": "BOOLEAN",
}


def _column_ifexists(q: _Query) -> list[Edit]:
    edits = []
    for call in _calls(q.tree):
        if call.name.lower() not in ("column_ifexists", "columnifexists"):
            continue
        if len(call.args) != 2 or any(n is not None for n in call.arg_names()):
            raise KqlRefused("column_ifexists() with other than a name and a default")
        literal = q.source(call.arg_value(0)).strip()
        if not _PLAIN_STRING.fullmatch(literal):
            raise KqlRefused("column_ifexists() of a name other than a plain string literal")
        name = literal[1:-1]
        default = call.arg_value(1)
        piped = _parent(call.node, "PipedOperator")
        if piped is None:
            raise KqlRefused("column_ifexists() outside a piped operator")
        columns = dict(q.columns_before(call.node, "column_ifexists()"))
        if name not in columns:
            if any(c.lower() == name.lower() or c.startswith(name + "__qe") for c in columns):
                raise KqlRefused("column_ifexists() of a name the input has in another case "
                                 "or spelling")  # fmt: skip
            whole = _whole_of(call.node)
            operator = _kind(getattr(whole, "parentCtx", None)) or ""
            unnamed = (whole is not None and operator.endswith("Operator")
                       and _kind(_rules(whole)[0]) != "NamedExpressionNameClause")  # fmt: skip
            if unnamed and _as_column(default) is None:
                raise KqlRefused("column_ifexists() of an absent column, unnamed, with a default "
                                 "that is not a column (its result's name)")  # fmt: skip
            # the docs' example: `project column_ifexists("Capital", State)` is named State
            text = q.source(default)
            edits.append(Edit(*_span(call.node), text if unnamed else f"({text})"))
            continue
        wanted = _DEFAULT_TYPES.get(_kind(_collapse(default)))
        if wanted is None or columns[name] != wanted:
            raise KqlRefused(f"column_ifexists() of a column of type {columns[name]} with a "
                             "default of another or unknown type (Kusto.Language types the "
                             "call as its default)")  # fmt: skip
        edits.append(Edit(*_span(call.node), quote_name(name)))
    return edits


# calls whose result Kusto.Language types as dynamic, and as string (a plain literal aside)
_DYNAMIC_CALLS = {"split", "extract_all", "pack_array", "todynamic", "parse_json", "dynamic",
                  "array_concat", "array_slice", "bag_pack", "pack"}  # fmt: skip
_STRING_CALLS = {"strcat", "strcat_delim", "tostring", "tolower", "toupper", "substring",
                 "trim", "trim_start", "trim_end", "replace_string", "strrep"}  # fmt: skip


def _static_type(q: _Query, node: Any) -> str | None:
    """ "dynamic", "string" or None (not known from the text alone) for an expression."""
    node = _collapse(node)
    if _kind(node) == "StringLiteralExpression" or _PLAIN_STRING.fullmatch(q.source(node)):
        return "string"
    if _kind(node) in ("DynamicLiteralExpression", "ParenthesizedExpression"):
        return "dynamic" if _kind(node) == "DynamicLiteralExpression" else None
    calls = [c for c in _calls(node) if c.node is node]
    if calls and calls[0].name.lower() in _DYNAMIC_CALLS:
        return "dynamic"
    if calls and calls[0].name.lower() in _STRING_CALLS:
        return "string"
    return None


def _case_dynamic_values(q: _Query) -> list[Edit]:
    """`case()`/`iff()`/`iif()` whose values mix dynamic ones with strings: Kusto.Language
    types the call as the common type of its values that are not dynamic (ReturnTypeKind
    CommonNonDynamic), here string, so each dynamic value is taken as its string form
    (tostring), where duckdb-kql's CASE would not bind. Values of other or unknown types
    are left as they are."""
    edits = []
    for call in _calls(q.tree):
        name = call.name.lower()
        if name not in ("case", "iff", "iif") or len(call.args) < 3:
            continue
        values = [
            call.arg_value(i)
            for i in range(len(call.args))
            if i == len(call.args) - 1 or (i % 2 == 1 if name == "case" else i > 0)
        ]
        types = [_static_type(q, v) for v in values]
        if "dynamic" not in types or any(t is None for t in types) or "string" not in types:
            continue
        edits += [Edit(*_span(v), f"tostring({q.source(v)})")
                  for v, t in zip(values, types, strict=True) if t == "dynamic"]  # fmt: skip
    return edits


FUNCTION_RULES = (_series_fits, _column_ifexists, _case_dynamic_values)
