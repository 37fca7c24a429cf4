"""Rewrite rules for KQL functions that no row of duckdb-kql's function table can express
alone: each rewrites a call into KQL duckdb-kql runs, with Kusto's answer, or refuses it
(`KqlRefused`). The query rewriter (`_kql_rewrite_kusto.KUSTO_RULES`) runs `FUNCTION_RULES`
with its own rules.

- `extend (a, b, ...) = series_fit_2lines(s)`: one column per name, each from queryeval's
  row for that output (`_kql_functions_series`), in the docs' order; Kusto's docs: this form
  returns only the named columns. Unnamed, `project` and single-name forms are refused.
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
    >>> _apply(text, _series_fit_2lines(_Query(text, parsed(text), None)))
    'T | extend r = queryeval_fit2_rsquare(y), s = queryeval_fit2_split_idx(y)'
"""

from __future__ import annotations

import re

from queryeval.engines._kql_functions_series import OUTPUTS
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


def _series_fit_2lines(q: _Query) -> list[Edit]:
    edits = []
    for call in _calls(q.tree):
        if call.name.lower() != "series_fit_2lines":
            continue
        whole = _whole_of(call.node)
        operator = getattr(whole, "parentCtx", None)
        clause = _rules(whole)[0] if whole is not None else None
        listed = next((c for c in _rules(clause) if _kind(c) == "NamedExpressionNameList"),
                      None) if clause is not None else None  # fmt: skip
        if _kind(operator) != "ExtendOperator" or listed is None:
            raise KqlRefused("series_fit_2lines() other than as `extend (a, b, ...) = "
                             "series_fit_2lines(s)` (its columns' other names)")  # fmt: skip
        names = [_name_of(c) for c in _rules(listed)]
        if len(call.args) != 1 or not 1 <= len(names) <= len(OUTPUTS) or None in names:
            raise KqlRefused("series_fit_2lines() with other than one series and 1-15 names")
        series = q.source(call.arg_value(0))
        parts = [f"{quote_name(str(name))} = queryeval_fit2_{output}({series})"
                 for name, output in zip(names, OUTPUTS, strict=False)]  # fmt: skip
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


FUNCTION_RULES = (_series_fit_2lines, _column_ifexists)
