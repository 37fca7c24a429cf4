"""What two queries say about the data worth varying, found with sqlglot: the tables and
columns they read, the literals their columns are compared with (`> 30` beside `>= 30`),
the columns they order by under a LIMIT, the columns they count."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from queryeval.verify._schema import Schema


@dataclass
class Hints:
    """Columns are (table, column) as the schema spells them."""

    tables: set[str] = field(default_factory=set)
    columns: set[tuple[str, str]] = field(default_factory=set)
    literals: list[tuple[str, str, str, Any]] = field(default_factory=list)  # t, c, op, v
    ordered: set[tuple[str, str]] = field(default_factory=set)  # ORDER BY ... LIMIT
    limited: bool = False  # a LIMIT anywhere (row order may decide the result)

    def merge(self, other: Hints) -> Hints:
        """Both queries' hints."""
        literals = list(self.literals)
        literals += [lit for lit in other.literals if lit not in literals]
        return Hints(self.tables | other.tables, self.columns | other.columns, literals,
                     self.ordered | other.ordered, self.limited or other.limited)  # fmt: skip


def analyse(query: str, dialect: str, schema: Schema) -> Hints:
    """The hints of one query (empty where sqlglot cannot parse it).

    >>> from queryeval.verify._schema import Schema, Table
    >>> s = Schema("sqlite", {"t": Table("t", "", {"a": "INT", "b": "TEXT"})})
    >>> h = analyse("SELECT b FROM t AS x WHERE x.a > 30 ORDER BY a LIMIT 1", "sqlite", s)
    >>> sorted(h.tables), h.literals, sorted(h.ordered)
    (['t'], [('t', 'a', '>', 30)], [('t', 'a')])
    """
    import sqlglot
    from sqlglot import exp

    hints = Hints()
    try:
        tree = sqlglot.parse_one(query, read=dialect)
    except Exception:  # an unparsable query: no hints, the random variants still apply
        return hints
    if tree is None:
        return hints
    aliases: dict[str, str] = {}
    for found in tree.find_all(exp.Table):
        table = schema.table(found.name)
        if table is None:
            continue
        hints.tables.add(table.name)
        aliases[(found.alias_or_name or found.name).lower()] = table.name
        aliases[found.name.lower()] = table.name

    def resolve(column: exp.Column) -> list[tuple[str, str]]:
        qualifier = column.table.lower() if column.table else ""
        names = [aliases[qualifier]] if qualifier in aliases else sorted(hints.tables)
        found = []
        for name in names:
            table = schema.tables[name]
            spelled = table.column(column.name)
            if spelled is not None:
                found.append((name, spelled))
        return found

    for column in tree.find_all(exp.Column):
        hints.columns.update(resolve(column))

    ops: dict[type[exp.Expression], str] = {
        exp.EQ: "=", exp.NEQ: "<>", exp.GT: ">", exp.GTE: ">=", exp.LT: "<",
        exp.LTE: "<=", exp.Like: "like", exp.ILike: "ilike",
    }  # fmt: skip
    node: Any
    for node in tree.walk():
        op = ops.get(type(node))
        if op is not None:
            left, right = node.args.get("this"), node.args.get("expression")
            if isinstance(right, exp.Column):
                left, right = right, left
            if isinstance(left, exp.Column):
                value = _literal(right)
                if value is not _NONE:
                    for t, c in resolve(left):
                        hints.literals.append((t, c, op, value))
        elif isinstance(node, exp.Between) and isinstance(node.this, exp.Column):
            for bound, op in ((node.args.get("low"), ">="), (node.args.get("high"), "<=")):
                value = _literal(bound)
                if value is not _NONE:
                    for t, c in resolve(node.this):
                        hints.literals.append((t, c, op, value))
        elif isinstance(node, exp.In) and isinstance(node.this, exp.Column):
            for item in node.expressions:
                value = _literal(item)
                if value is not _NONE:
                    for t, c in resolve(node.this):
                        hints.literals.append((t, c, "=", value))
    for select in tree.find_all(exp.Select):
        if select.args.get("limit") is None:
            continue
        hints.limited = True
        order = select.args.get("order")
        if order is None:
            continue
        for ordered in order.expressions:
            for column in ordered.find_all(exp.Column):
                hints.ordered.update(resolve(column))
    if not hints.limited and tree.find(exp.Limit) is not None:
        hints.limited = True
    unique = []
    for lit in hints.literals:
        if lit not in unique:
            unique.append(lit)
    hints.literals = unique
    return hints


_NONE = object()

# KQL: `col op literal` (op: comparisons, string operators), `col in (literals)`, and the
# operators whose result depends on row order (`take`, `limit`, `top`, `sample`)
_KQL_OPS = {"==": "=", "!=": "<>", ">": ">", ">=": ">=", "<": "<", "<=": "<=", "=~": "=",
            "has": "=", "has_cs": "=", "contains": "like", "contains_cs": "like",
            "startswith": "like", "endswith": "like"}  # fmt: skip
_KQL_VALUE = r"""(-?\d+(?:\.\d+)?|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')"""
_KQL_COMPARE = re.compile(
    r"(?<![\w.])([A-Za-z_]\w*|\['[^']+'\])\s*(==|!=|>=|<=|=~|>|<|\bhas_cs\b|\bhas\b|"
    r"\bcontains_cs\b|\bcontains\b|\bstartswith\b|\bendswith\b)\s*" + _KQL_VALUE
)
_KQL_IN = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s+in\s*\(([^()]*)\)")
_KQL_ORDERED = re.compile(r"\b(?:take|limit|top|sample|top-nested)\b")
_KQL_TOP_BY = re.compile(r"\btop\s+\d+\s+by\s+([A-Za-z_]\w*)")


def analyse_kql(query: str, schema: Schema, translate: Any = None) -> Hints:
    """The hints of a KQL query: those of its translation to DuckDB SQL (`translate`, the
    engine's own), merged with a light reading of the KQL text (`col op literal`, `in`,
    `top N by col`, `take`), which sees what a translation hides (`has "x"` as a regex).

    >>> from queryeval.verify._schema import Schema, Table
    >>> s = Schema("duckdb", {"T": Table("T", "", {"a": "INT", "b": "VARCHAR"})})
    >>> h = analyse_kql('T | where a > 30 and b has "x" | top 1 by a', s)
    >>> sorted(h.literals), sorted(h.ordered), h.limited
    ([('T', 'a', '>', 30), ('T', 'b', '=', 'x')], [('T', 'a')], True)
    """
    hints = Hints()
    if translate is not None:
        try:
            hints = analyse(str(translate(query)), "duckdb", schema)
        except Exception:  # a query the engine cannot translate: the light reading only
            hints = Hints()
    light = Hints()
    words = set(re.findall(r"\w+", query))
    for name in schema.tables:
        if name in words:
            light.tables.add(name)
    tables = sorted(light.tables | hints.tables)

    def columns(word: str) -> list[tuple[str, str]]:
        word = word[2:-2] if word.startswith("['") else word
        return [(t, c) for t in tables for c in schema.tables[t].columns if c == word]

    for match in _KQL_COMPARE.finditer(query):
        value = _kql_value(match.group(3))
        for t, c in columns(match.group(1)):
            light.literals.append((t, c, _KQL_OPS[match.group(2)], value))
    for match in _KQL_IN.finditer(query):
        for item in re.finditer(_KQL_VALUE, match.group(2)):
            for t, c in columns(match.group(1)):
                light.literals.append((t, c, "=", _kql_value(item.group(1))))
    for match in _KQL_TOP_BY.finditer(query):
        light.ordered.update(columns(match.group(1)))
    light.limited = bool(_KQL_ORDERED.search(query))
    for word in words:
        light.columns.update(columns(word))
    return hints.merge(light)


def _kql_value(text: str) -> Any:
    if text[0] in "\"'":
        return text[1:-1].encode().decode("unicode_escape")
    return float(text) if "." in text else int(text)


def _literal(node: Any) -> Any:
    """The Python value of a literal (a string, an int, a float), else `_NONE`."""
    from sqlglot import exp

    negative = False
    while isinstance(node, exp.Cast | exp.Paren):  # CAST(30 AS BIGINT), as KQL translates
        node = node.this
    if isinstance(node, exp.Neg):
        negative, node = True, node.this
    if isinstance(node, exp.Paren):
        node = node.this
    if not isinstance(node, exp.Literal):
        return _NONE
    if node.is_string:
        return _NONE if negative else node.this
    try:
        number: int | float = int(node.this)
    except ValueError:
        try:
            number = float(node.this)
        except ValueError:
            return _NONE
    return -number if negative else number
