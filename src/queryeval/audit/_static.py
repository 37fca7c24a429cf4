"""What a gold's SQL text shows (sqlglot): row-order patterns (LIMIT without ORDER BY,
ORDER BY ... LIMIT, SQLite's bare columns) and literals compared with a column."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_AGGREGATES = ("count", "sum", "avg", "min", "max", "group_concat", "string_agg", "total")


@dataclass(frozen=True)
class Comparison:
    """A string literal compared with a column: `column` of `table` (as the database names
    it), the operator (`eq`, `neq`, `in`, `like`, `ilike`) and the literal."""

    table: str
    column: str
    op: str
    literal: str


def parse(query: str, dialect: str) -> Any:
    """The query's sqlglot tree, or None when sqlglot cannot read it."""
    import sqlglot

    try:
        return sqlglot.parse_one(query, read=dialect)
    except Exception:  # sqlglot's errors vary by version: no tree, no static check
        return None


def order_patterns(query: str, dialect: str) -> list[str]:
    """The row-order patterns of `query`: `limit without order by`, `order by ... limit`,
    `bare column` (a column neither grouped nor aggregated next to an aggregate; SQLite
    picks its row).

    >>> order_patterns("SELECT name FROM t LIMIT 3", "sqlite")
    ['limit without order by']
    >>> order_patterns("SELECT name, max(age) FROM t", "sqlite")
    ['bare column']
    >>> order_patterns("SELECT a, count(*) FROM t GROUP BY a ORDER BY 2 DESC LIMIT 1", "sqlite")
    ['order by ... limit']
    """
    from sqlglot import exp

    tree = parse(query, dialect)
    if tree is None:
        return []
    found: list[str] = []
    for select in tree.find_all(exp.Select):
        limit = select.args.get("limit")
        order = select.args.get("order")
        if limit is not None:
            found.append("order by ... limit" if order is not None else "limit without order by")
        if _bare(select):
            found.append("bare column")
    return sorted(set(found), key=found.index)


def _bare(select: Any) -> bool:
    """Whether `select` lists a plain column beside an aggregate, not grouped by."""
    from sqlglot import exp

    items = select.expressions
    has_agg = any(_aggregated(e) for e in items)
    if not has_agg:
        return False
    group = select.args.get("group")
    grouped = {g.sql().lower() for g in group.expressions} if group is not None else set()
    grouped_names = {
        g.name.lower()
        for g in (group.expressions if group is not None else [])
        if isinstance(g, exp.Column)
    }
    for item in items:
        inner = item.this if isinstance(item, exp.Alias) else item
        if _aggregated(inner) or isinstance(inner, exp.Star | exp.Literal):
            continue
        columns = list(inner.find_all(exp.Column))
        if not columns:
            continue
        for column in columns:
            if column.sql().lower() not in grouped and column.name.lower() not in grouped_names:
                return True
    return False


def _aggregated(node: Any) -> bool:
    from sqlglot import exp

    if isinstance(node, exp.AggFunc):
        return True
    return any(isinstance(n, exp.AggFunc) for n in node.find_all(exp.AggFunc))


def comparisons(query: str, dialect: str, schema: dict[str, list[str]]) -> list[Comparison]:
    """The string literals `query` compares with a column (`=`, `!=`, `IN`, `LIKE`), the
    column resolved to a table of `schema` ({table: columns}, names as the database has
    them) through the FROM clause of its SELECT.

    >>> comparisons("SELECT * FROM emp e WHERE e.city = 'Paris'", "sqlite",
    ...             {"emp": ["id", "city"]})
    [Comparison(table='emp', column='city', op='eq', literal='Paris')]
    """
    from sqlglot import exp

    tree = parse(query, dialect)
    if tree is None:
        return []
    lower = {t.lower(): (t, {c.lower(): c for c in cols}) for t, cols in schema.items()}
    out: list[Comparison] = []
    ops: list[tuple[type, str]] = [
        (exp.EQ, "eq"),
        (exp.NEQ, "neq"),
        (exp.Like, "like"),
        (exp.ILike, "ilike"),
    ]
    for kind, op in ops:
        for node in tree.find_all(kind):
            pair = _column_literal(node.this, node.expression)
            if pair is None:
                continue
            resolved = _resolve(pair[0], lower)
            if resolved is not None:
                out.append(Comparison(resolved[0], resolved[1], op, pair[1]))
    for node in tree.find_all(exp.In):
        if not isinstance(node.this, exp.Column):
            continue
        resolved = _resolve(node.this, lower)
        if resolved is None:
            continue
        for item in node.expressions:
            if isinstance(item, exp.Literal) and item.is_string:
                out.append(Comparison(resolved[0], resolved[1], "in", item.this))
    seen: set[Comparison] = set()
    return [c for c in out if not (c in seen or seen.add(c))]  # type: ignore[func-returns-value]


def _column_literal(left: Any, right: Any) -> tuple[Any, str] | None:
    from sqlglot import exp

    if isinstance(left, exp.Literal) and isinstance(right, exp.Column):
        left, right = right, left
    if isinstance(left, exp.Column) and isinstance(right, exp.Literal) and right.is_string:
        return left, right.this
    return None


def _resolve(column: Any, schema: dict[str, tuple[str, dict[str, str]]]) -> tuple[str, str] | None:
    """(table, column) as the database names them, through the FROM of the column's SELECT."""
    from sqlglot import exp

    select = column.find_ancestor(exp.Select)
    if select is None:
        return None
    aliases: dict[str, str] = {}
    for table in select.find_all(exp.Table):
        if table.find_ancestor(exp.Select) is not select:
            continue
        name = table.name.lower()
        aliases[(table.alias or table.name).lower()] = name
        aliases.setdefault(name, name)
    name = column.name.lower()
    qualifier = column.table.lower()
    if qualifier:
        candidates = [aliases[qualifier]] if qualifier in aliases else []
    else:
        candidates = sorted(set(aliases.values()))
    hits = [t for t in candidates if t in schema and name in schema[t][1]]
    if len(hits) != 1:
        return None
    table, columns = schema[hits[0]]
    return table, columns[name]
