"""Spider's exact-set-match, per-clause scores and hardness, on a sqlglot parse.

The official scorer (``taoyds/test-suite-sql-eval`` ``evaluation.py`` with
``process_sql.py``) parses a query with a hand-written tokenizer into a nested structure
and compares the structures clause by clause. This module builds the *same* structure from
sqlglot's parse (any query sqlglot reads, not only the subset the original tokenizer
accepts), then applies the official rules as written there:

- values are ignored (the official default ``DISABLE_VALUE``), nested queries are not;
- ``DISTINCT`` is ignored in columns and SELECT (``DISABLE_DISTINCT``) except inside nested
  queries of conditions, which the official rebuild does not visit;
- a column that is a foreign key is replaced by the key it references (``tables.json``'s
  ``foreign_keys``) when its table is in the FROM clause;
- a clause matches when its items match as a multiset (select, where, group by columns
  without their table), having with group by, order by with the presence of LIMIT, the set
  of AND/OR connectors, each of INTERSECT/UNION/EXCEPT recursively, and the keyword set;
  the query matches when every clause has F1 = 1 and the FROM tables agree as a multiset;
- hardness counts components as ``eval_hardness`` does, its quirks included (in WHERE and
  HAVING a NOT condition, and in HAVING each AND/OR, counts as an aggregation).

Where sqlglot and the original tokenizer would read a query differently (the original
fails on parenthesised conditions, ``<>``, ``IS NOT NULL``; it always reads LIMIT as 1),
the structure is the one the query means; see docs/benchmarks.md.

>>> schema = {"singer": ["singer_id", "name", "age"], "concert": ["concert_id", "singer_id"]}
>>> r = spider_exact_match("SELECT name FROM singer WHERE age > 30",
...                        "SELECT T1.name FROM singer AS T1 WHERE T1.age > 20", schema=schema)
>>> r.exact, r.hardness
(True, 'easy')
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WHERE_OPS = ("not", "between", "=", ">", "<", ">=", "<=", "!=", "in", "like", "is", "exists")
UNIT_OPS = ("none", "-", "+", "*", "/")
AGG_OPS = ("none", "max", "min", "count", "sum", "avg")
PARTS = (
    "select",
    "select(no AGG)",
    "where",
    "where(no OP)",
    "group(no Having)",
    "group",
    "order",
    "and/or",
    "IUEN",
    "keywords",
)
HARDNESS = ("easy", "medium", "hard", "extra")

Schema = Mapping[str, Sequence[str]]
SQL = dict[str, Any]


def _check_spider(prediction: Any, reference: Any, schema: Any) -> None:
    """A TypeError unless both queries are texts and the schema maps tables to columns."""
    for side, query in (("prediction", prediction), ("reference", reference)):
        if not isinstance(query, str):
            raise TypeError(f"{side} must be a SQL text, not {type(query).__name__}")
    if not isinstance(schema, Mapping):
        raise TypeError(f"schema must map tables to their columns, not {type(schema).__name__}")


class SpiderParseError(ValueError):
    """The query cannot be read into Spider's structure (unknown column, unsupported form)."""


@dataclass(frozen=True)
class ClauseScore:
    """One clause: accuracy, recall, F1 (each 0 or 1) and how many items each side had."""

    acc: int
    rec: int
    f1: int
    pred_total: int
    label_total: int


@dataclass(frozen=True)
class ExactMatchResult:
    """Spider's exact-set-match of one prediction, its clauses and the gold's hardness."""

    exact: bool
    partial: dict[str, ClauseScore]
    hardness: str
    pred_parsed: bool  # False: the prediction was scored as an empty query (as officially)


def sqlite_schema(path: Path) -> dict[str, list[str]]:
    """Tables and columns of a SQLite file, lower-cased (as ``process_sql.get_schema``).

    >>> import sqlite3, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "db.sqlite"
    >>> sqlite3.connect(path).execute("CREATE TABLE Singer (Name TEXT, Age INT)").connection.close()
    >>> sqlite_schema(path)
    {'singer': ['name', 'age']}
    """
    uri = f"{path.resolve().as_uri()}?mode=ro"
    con = sqlite3.connect(uri, uri=True)
    try:
        tables = [
            str(r[0]).lower()
            for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")
        ]
        return {
            t: [str(c[1]).lower() for c in con.execute("SELECT * FROM pragma_table_info(?)", (t,))]
            for t in tables
        }
    finally:
        con.close()


def foreign_key_map(entry: Mapping[str, Any]) -> dict[str, str]:
    """``tables.json`` foreign keys as ``{column id: representative column id}``: columns
    linked by keys form groups, each represented by its lowest column index.

    >>> foreign_key_map({"table_names_original": ["singer", "concert"],
    ...                  "column_names_original": [[-1, "*"], [0, "id"], [1, "singer_id"]],
    ...                  "foreign_keys": [[2, 1]]})
    {'__singer.id__': '__singer.id__', '__concert.singer_id__': '__singer.id__'}
    """
    tables = entry["table_names_original"]
    ids = [
        f"__{tables[t].lower()}.{c.lower()}__" if t >= 0 else "__all__"
        for t, c in entry["column_names_original"]
    ]
    groups: list[set[int]] = []
    for a, b in entry.get("foreign_keys", []):
        group = next((g for g in groups if a in g or b in g), None)
        if group is None:
            group = set()
            groups.append(group)
        group.update((a, b))
    mapping: dict[str, str] = {}
    for group in groups:
        first = min(group)
        for index in sorted(group):
            mapping[ids[index]] = ids[first]
    return mapping


def spider_sql(query: str, schema: Schema) -> SQL:
    """The official nested structure of ``query`` (raises SpiderParseError)."""
    import sqlglot
    from sqlglot import exp

    # the original's tokenizer joins "! =", "> =", "< =" into one operator
    query = re.sub(r"([!<>])\s+=", r"\1=", query)
    try:
        tree = sqlglot.parse_one(query, read="sqlite")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as error:
        raise SpiderParseError(str(error).splitlines()[0]) from None
    if not isinstance(tree, exp.Query):
        raise SpiderParseError("not a query")
    lowered = {t.lower(): [c.lower() for c in cols] for t, cols in schema.items()}
    return _Builder(lowered).query(tree)


def spider_hardness(query: str, schema: Schema) -> str:
    """Spider's hardness bucket of a (gold) query: easy, medium, hard or extra.

    >>> spider_hardness("SELECT count(*) FROM singer", {"singer": ["singer_id"]})
    'easy'
    """
    return hardness_of(spider_sql(query, schema))


def spider_exact_match(
    prediction: str,
    reference: str,
    *,
    schema: Schema,
    foreign_keys: Mapping[str, str] | None = None,
    legacy: bool = False,
) -> ExactMatchResult:
    """Exact-set-match of the predicted query against the gold one, with the per-clause
    scores and the gold's hardness; `schema` maps each table to its columns,
    `foreign_keys` is `foreign_key_map` of the database's ``tables.json`` entry.

    A prediction Spider's structure cannot hold is scored as the empty query (as the
    official script does); a gold that cannot be read raises SpiderParseError.
    ``legacy=True`` reads both queries with the official reader (`_spider_legacy`), its
    failures included, for the official verdict.

    >>> schema = {"singer": ["singer_id", "name", "age"]}
    >>> r = spider_exact_match("SELECT name FROM singer ORDER BY age",
    ...                        "SELECT name FROM singer", schema=schema)
    >>> r.exact, r.partial["order"].f1
    (False, 0)
    >>> pred = "SELECT s.name FROM singer s"  # an alias without AS: the original fails
    >>> spider_exact_match(pred, "SELECT name FROM singer", schema=schema, legacy=True).exact
    False
    """
    _check_spider(prediction, reference, schema)
    kmap = dict(foreign_keys or {})
    read = spider_sql
    if legacy:
        from queryeval.metrics.benchmarks._spider_legacy import (
            legacy_spider_sql,
            official_prediction_text,
        )

        read = legacy_spider_sql
        prediction, reference = official_prediction_text(prediction), reference.strip()
    g = read(reference, schema)
    hardness = hardness_of(g)
    try:
        p = read(prediction, schema)
        parsed = True
    except SpiderParseError:
        p, parsed = _empty_sql(), False
    lowered = {t.lower(): [c.lower() for c in cols] for t, cols in schema.items()}
    g = _rebuild(g, lowered, kmap)
    p = _rebuild(p, lowered, kmap)
    try:
        partial = _partial(p, g, strict=legacy)
        exact = _exact(p, g, partial, strict=legacy)
    except TypeError:  # strict: sorting two nested queries of FROM, as the original does
        raise SpiderParseError(
            "the official script fails comparing two nested queries in FROM"
        ) from None
    return ExactMatchResult(exact, partial, hardness, parsed)


# -- building the structure from sqlglot --------------------------------------------------


def _empty_sql() -> SQL:
    return {
        "select": (False, []),
        "from": {"table_units": [], "conds": []},
        "where": [],
        "groupBy": [],
        "having": [],
        "orderBy": [],
        "limit": None,
        "intersect": None,
        "except": None,
        "union": None,
    }


_AGGS = {"Max": 1, "Min": 2, "Count": 3, "Sum": 4, "Avg": 5}
_UNITS = {"Sub": 1, "Add": 2, "Mul": 3, "Div": 4}
_COMPARE = {
    "EQ": "=",
    "GT": ">",
    "LT": "<",
    "GTE": ">=",
    "LTE": "<=",
    "NEQ": "!=",
    "In": "in",
    "Like": "like",
    "ILike": "like",
    "Is": "is",
    "Between": "between",
    "Exists": "exists",
}


class _Builder:
    def __init__(self, schema: dict[str, list[str]]) -> None:
        self.schema = schema
        self.outer: dict[str, str] = {}  # aliases of enclosing queries (correlated columns)

    def query(self, node: Any) -> SQL:
        from sqlglot import exp

        if isinstance(node, exp.Subquery):
            return self.query(node.this)
        if isinstance(node, exp.SetOperation):
            left = self.query(node.this)
            kind = {"Union": "union", "Intersect": "intersect", "Except": "except"}[
                type(node).__name__
            ]
            left[kind] = self.query(node.expression)
            return left
        if not isinstance(node, exp.Select):
            raise SpiderParseError(f"unsupported query form: {type(node).__name__}")
        return self.select(node)

    def select(self, node: Any) -> SQL:
        from sqlglot import exp

        aliases: dict[str, str] = dict(self.outer)
        default_tables: list[str] = []
        table_units: list[tuple[str, Any]] = []
        sources = []
        if node.args.get("from_") is not None:
            sources.append(node.args["from_"].this)
        joins = node.args.get("joins") or []
        sources.extend(j.this for j in joins)
        for source in sources:
            if isinstance(source, exp.Table):
                name = source.name.lower()
                if name not in self.schema:
                    raise SpiderParseError(f"unknown table {source.name}")
                if source.alias:
                    aliases[source.alias.lower()] = name
                aliases[name] = name
                default_tables.append(name)
                table_units.append(("table_unit", f"__{name}__"))
            elif isinstance(source, exp.Subquery):
                table_units.append(("sql", self.query(source.this)))
            else:
                raise SpiderParseError(f"unsupported FROM item: {type(source).__name__}")
        scope = _Scope(self.schema, aliases, default_tables)
        saved, self.outer = self.outer, aliases
        try:
            return self._clauses(node, scope, table_units, joins)
        finally:
            self.outer = saved

    def _clauses(self, node: Any, scope: _Scope, table_units: list[Any], joins: list[Any]) -> SQL:
        from sqlglot import exp

        conds: list[Any] = []
        for join in joins:
            on = join.args.get("on")
            # sqlglot reads a JOIN without ON as ``ON TRUE``; the original accepts it (no
            # condition), so does this reading (an explicit ON TRUE with it)
            if on is not None and not (isinstance(on, exp.Boolean) and on.this is True):
                if conds:
                    conds.append("and")
                conds.extend(self.condition(on, scope))
        distinct = node.args.get("distinct") is not None
        items = [self.select_item(e, scope) for e in node.expressions]
        where = node.args.get("where")
        group = node.args.get("group")
        having = node.args.get("having")
        order = node.args.get("order")
        sql: SQL = {
            "select": (distinct, items),
            "from": {"table_units": table_units, "conds": conds},
            "where": self.condition(where.this, scope) if where is not None else [],
            "groupBy": [self.col_unit(e, scope) for e in group.expressions] if group else [],
            "having": self.condition(having.this, scope) if having is not None else [],
            "orderBy": self.order(order, scope) if order is not None else [],
            "limit": 1 if node.args.get("limit") is not None else None,
            "intersect": None,
            "except": None,
            "union": None,
        }
        return sql

    def select_item(self, node: Any, scope: _Scope) -> tuple[int, Any]:
        from sqlglot import exp

        if isinstance(node, exp.Alias):
            node = node.this
        agg = _AGGS.get(type(node).__name__, 0)
        if agg:  # the official parser keeps a SELECT aggregate outside the value unit
            inner = node.this
            if isinstance(inner, exp.Distinct):
                unit = self.col_unit(inner.expressions[0], scope)
                return agg, (0, (unit[0], unit[1], True), None)
            return agg, self.val_unit(inner, scope)
        return 0, self.val_unit(node, scope)

    def val_unit(self, node: Any, scope: _Scope) -> tuple[int, Any, Any]:
        from sqlglot import exp

        while isinstance(node, exp.Paren):
            node = node.this
        op = _UNITS.get(type(node).__name__)
        if op is not None:
            return op, self.col_unit(node.this, scope), self.col_unit(node.expression, scope)
        return 0, self.col_unit(node, scope), None

    def col_unit(self, node: Any, scope: _Scope) -> tuple[int, str, bool]:
        from sqlglot import exp

        while isinstance(node, exp.Paren):
            node = node.this
        distinct = False
        if isinstance(node, exp.Distinct):
            node, distinct = node.expressions[0], True
        agg = _AGGS.get(type(node).__name__, 0)
        if agg:
            inner = node.this
            if isinstance(inner, exp.Distinct):
                inner, distinct = inner.expressions[0], True
            return agg, scope.column(inner), distinct
        return 0, scope.column(node), distinct

    def order(self, node: Any, scope: _Scope) -> tuple[str, list[Any]]:
        direction = "asc"
        units = []
        for item in node.expressions:
            units.append(self.val_unit(item.this, scope))
            if item.args.get("desc"):
                direction = "desc"
            elif item.args.get("desc") is False and _explicit_asc(item):
                direction = "asc"
        return direction, units

    def condition(self, node: Any, scope: _Scope) -> list[Any]:
        """The condition as the official flat list ``[unit, "and"/"or", unit, ...]``.

        The original reads a right-hand side that is neither a literal nor a nested query
        (a column, ``T2.b``) up to the next ``and``, ``,``, ``)`` or clause keyword, so the
        ``or`` branches after it vanish from its structure; they vanish here too.
        """
        flat = self._flatten(node)
        out: list[Any] = []
        i = 0
        while i < len(flat):
            unit_node = flat[i]
            if i:
                out.append(flat[i - 1])
            out.append(self.cond_unit(unit_node, scope))
            i += 2
            if _swallows(unit_node):
                while i < len(flat) and flat[i - 1] == "or":
                    i += 2
        return out

    def _flatten(self, node: Any) -> list[Any]:
        from sqlglot import exp

        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.And | exp.Or):
            word = "and" if isinstance(node, exp.And) else "or"
            return [*self._flatten(node.this), word, *self._flatten(node.expression)]
        return [node]

    def cond_unit(self, node: Any, scope: _Scope) -> tuple[Any, ...]:
        from sqlglot import exp

        negated = False
        if isinstance(node, exp.Not):
            node, negated = node.this, True
            while isinstance(node, exp.Paren):
                node = node.this
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Not):
            negated = True  # IS NOT NULL
        name = type(node).__name__
        if name not in _COMPARE:
            raise SpiderParseError(f"unsupported condition: {node.sql()[:60]}")
        op = WHERE_OPS.index(_COMPARE[name])
        if isinstance(node, exp.Exists):
            return negated, op, (0, (0, "__all__", False), None), self.value(node.this), None
        left = self.val_unit(node.this, scope)
        if isinstance(node, exp.Between):
            return negated, op, left, self.value(node.args["low"]), self.value(node.args["high"])
        if isinstance(node, exp.In):
            query = node.args.get("query")
            return negated, op, left, self.value(query) if query is not None else None, None
        return negated, op, left, self.value(node.expression), None

    def value(self, node: Any) -> Any:
        """A nested query as its structure; any other value is ignored (``None``)."""
        from sqlglot import exp

        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Subquery | exp.Query):
            return self.query(node.this if isinstance(node, exp.Subquery) else node)
        return None


def _swallows(node: Any) -> bool:
    """Whether the original's value reader runs on past this condition (see condition)."""
    from sqlglot import exp

    if isinstance(node, exp.Not):
        node = node.this
    if isinstance(node, exp.Between | exp.In | exp.Exists) or not isinstance(node, exp.Binary):
        return False
    value = node.expression
    while isinstance(value, exp.Paren):
        value = value.this
    return not isinstance(
        value, exp.Literal | exp.Null | exp.Subquery | exp.Query | exp.Neg
    ) and not (isinstance(value, exp.Column) and value.this.quoted and not value.table)


def _explicit_asc(item: Any) -> bool:
    return "ASC" in item.sql().upper().split()


@dataclass
class _Scope:
    schema: dict[str, list[str]]
    aliases: dict[str, str]
    default_tables: list[str]

    def column(self, node: Any) -> str:
        from sqlglot import exp

        if isinstance(node, exp.Star):
            return "__all__"
        if isinstance(node, exp.Column):
            if isinstance(node.this, exp.Star):
                return "__all__"
            name = node.name.lower()
            table = node.table.lower()
            if table:
                real = self.aliases.get(table, table)
                if real not in self.schema or name not in self.schema[real]:
                    raise SpiderParseError(f"unknown column {node.sql()}")
                return f"__{real}.{name}__"
            for candidate in self.default_tables:
                if name in self.schema[candidate]:
                    return f"__{candidate}.{name}__"
            raise SpiderParseError(f"unknown column {node.sql()}")
        raise SpiderParseError(f"unsupported expression: {node.sql()[:60]}")


# -- the official rebuild (values dropped, DISTINCT dropped, foreign keys folded) ----------


def _rebuild(sql: SQL, schema: dict[str, list[str]], kmap: dict[str, str]) -> SQL:
    sql = _drop_values(sql)
    prefixes = {unit[1][:-2] for unit in sql["from"]["table_units"] if unit[0] == "table_unit"}
    valid = {f"__{t}.{c}__" for t, cols in schema.items() for c in cols if f"__{t}" in prefixes}
    return _fold_columns(sql, valid, kmap)


def _drop_values(sql: SQL | None) -> Any:
    if sql is None:
        return None

    def cond(condition: list[Any]) -> list[Any]:
        out = []
        for i, item in enumerate(condition):
            if i % 2 == 0:
                not_op, op, unit, v1, v2 = item
                v1 = _drop_values(v1) if isinstance(v1, dict) else None
                v2 = _drop_values(v2) if isinstance(v2, dict) else None
                item = (not_op, op, unit, v1, v2)
            out.append(item)
        return out

    out = dict(sql)
    out["from"] = {"table_units": sql["from"]["table_units"], "conds": cond(sql["from"]["conds"])}
    out["having"] = cond(sql["having"])
    out["where"] = cond(sql["where"])
    for key in ("intersect", "except", "union"):
        out[key] = _drop_values(sql[key])
    return out


def _fold_columns(sql: SQL | None, valid: set[str], kmap: dict[str, str]) -> Any:
    if sql is None:
        return None

    def col(unit: Any) -> Any:
        if unit is None:
            return None
        agg, column, _ = unit
        if column in kmap and column in valid:
            column = kmap[column]
        return agg, column, None

    def val(unit: Any) -> Any:
        return None if unit is None else (unit[0], col(unit[1]), col(unit[2]))

    def cond(condition: list[Any]) -> list[Any]:
        return [
            (c[0], c[1], val(c[2]), c[3], c[4]) if i % 2 == 0 else c
            for i, c in enumerate(condition)
        ]

    out = dict(sql)
    out["select"] = (None, [(agg, val(unit)) for agg, unit in sql["select"][1]])
    out["from"] = {
        "table_units": list(sql["from"]["table_units"]),
        "conds": cond(sql["from"]["conds"]),
    }
    out["where"] = cond(sql["where"])
    out["groupBy"] = [col(u) for u in sql["groupBy"]]
    order = sql["orderBy"]
    out["orderBy"] = (order[0], [val(u) for u in order[1]]) if order else order
    out["having"] = cond(sql["having"])
    for key in ("intersect", "except", "union"):
        out[key] = _fold_columns(sql[key], valid, kmap)
    return out


# -- the official comparison ------------------------------------------------------------------


def _scores(count: int, pred_total: int, label_total: int) -> tuple[int, int, int]:
    if pred_total != label_total:
        return 0, 0, 0
    return (1, 1, 1) if count == pred_total else (0, 0, 0)


def _multiset_count(pred: list[Any], label: list[Any]) -> int:
    remaining = list(label)
    count = 0
    for item in pred:
        if item in remaining:
            count += 1
            remaining.remove(item)
    return count


def _partial(p: SQL, g: SQL, strict: bool = False) -> dict[str, ClauseScore]:
    def score(count: int, pred_total: int, label_total: int) -> ClauseScore:
        return ClauseScore(*_scores(count, pred_total, label_total), pred_total, label_total)

    res: dict[str, ClauseScore] = {}
    ps, gs = p["select"][1], g["select"][1]
    res["select"] = score(_multiset_count(ps, gs), len(ps), len(gs))
    res["select(no AGG)"] = score(
        _multiset_count([u[1] for u in ps], [u[1] for u in gs]), len(ps), len(gs)
    )
    pw, gw = p["where"][::2], g["where"][::2]
    res["where"] = score(_multiset_count(pw, gw), len(pw), len(gw))
    res["where(no OP)"] = score(
        _multiset_count([u[2] for u in pw], [u[2] for u in gw]), len(pw), len(gw)
    )

    def short(column: str) -> str:
        return column.split(".")[1] if "." in column else column

    pg = [u[1] for u in p["groupBy"]]
    gg = [u[1] for u in g["groupBy"]]
    res["group(no Having)"] = score(
        _multiset_count([short(c) for c in pg], [short(c) for c in gg]), len(pg), len(gg)
    )
    ph, gh = int(bool(p["groupBy"])), int(bool(g["groupBy"]))
    having_ok = ph == gh == 1 and pg == gg and p["having"] == g["having"]
    res["group"] = score(int(having_ok), ph, gh)
    po, go = int(bool(p["orderBy"])), int(bool(g["orderBy"]))
    order_ok = (
        bool(g["orderBy"])
        and p["orderBy"] == g["orderBy"]
        and ((p["limit"] is None) == (g["limit"] is None))
    )
    res["order"] = score(int(order_ok), po, go)
    pao, gao = set(p["where"][1::2]), set(g["where"][1::2])
    # the original returns (1, 1, 1) as the totals when the sets agree, and the two sizes
    # the other way round when they do not
    res["and/or"] = (
        ClauseScore(1, 1, 1, 1, 1) if pao == gao else ClauseScore(0, 0, 0, len(gao), len(pao))
    )
    lt = pt = cnt = 0
    for key in ("intersect", "except", "union"):
        pn, gn = p[key], g[key]
        pt += pn is not None
        lt += gn is not None
        if pn is not None and gn is not None:
            cnt += int(_exact(pn, gn, _partial(pn, gn, strict), strict))
    res["IUEN"] = score(cnt, pt, lt)
    pk, gk = _keywords(p), _keywords(g)
    res["keywords"] = score(len(pk & gk), len(pk), len(gk))
    return res


def _exact(p: SQL, g: SQL, partial: dict[str, ClauseScore], strict: bool = False) -> bool:
    if any(s.f1 != 1 for s in partial.values()):
        return False
    if g["from"]["table_units"]:
        order = sorted if strict else _sorted  # strict: TypeError where the original raises
        return bool(order(g["from"]["table_units"]) == order(p["from"]["table_units"]))
    return True


def _sorted(units: list[Any]) -> list[Any]:
    try:
        return sorted(units)
    except TypeError:  # a nested query beside a table: the original would fail; compare as is
        return sorted(units, key=repr)


def _keywords(sql: SQL) -> set[str]:
    found = set()
    if sql["where"]:
        found.add("where")
    if sql["groupBy"]:
        found.add("group")
    if sql["having"]:
        found.add("having")
    if sql["orderBy"]:
        found.add(sql["orderBy"][0])
        found.add("order")
    for key in ("limit", "except", "union", "intersect"):
        if sql[key] is not None:
            found.add(key)
    connectors = sql["from"]["conds"][1::2] + sql["where"][1::2] + sql["having"][1::2]
    if "or" in connectors:
        found.add("or")
    units = sql["from"]["conds"][::2] + sql["where"][::2] + sql["having"][::2]
    if any(u[0] for u in units):
        found.add("not")
    if any(u[1] == WHERE_OPS.index("in") for u in units):
        found.add("in")
    if any(u[1] == WHERE_OPS.index("like") for u in units):
        found.add("like")
    return found


# -- hardness (eval_hardness, its counting included) -------------------------------------------


def hardness_of(sql: SQL) -> str:
    """The hardness bucket of a parsed (gold) query."""
    c1, c2, others = _component1(sql), len(_nested(sql)), _others(sql)
    if c1 <= 1 and others == 0 and c2 == 0:
        return "easy"
    if (others <= 2 and c1 <= 1 and c2 == 0) or (c1 <= 2 and others < 2 and c2 == 0):
        return "medium"
    if (
        (others > 2 and c1 <= 2 and c2 == 0)
        or (2 < c1 <= 3 and others <= 2 and c2 == 0)
        or (c1 <= 1 and others == 0 and c2 <= 1)
    ):
        return "hard"
    return "extra"


def _component1(sql: SQL) -> int:
    count = sum(bool(sql[k]) for k in ("where", "groupBy", "orderBy"))
    count += sql["limit"] is not None
    if sql["from"]["table_units"]:
        count += len(sql["from"]["table_units"]) - 1
    connectors = sql["from"]["conds"][1::2] + sql["where"][1::2] + sql["having"][1::2]
    count += connectors.count("or")
    units = sql["from"]["conds"][::2] + sql["where"][::2] + sql["having"][::2]
    count += sum(1 for u in units if u[1] == WHERE_OPS.index("like"))
    return count


def _nested(sql: SQL) -> list[SQL]:
    nested: list[SQL] = []
    for unit in sql["from"]["conds"][::2] + sql["where"][::2] + sql["having"][::2]:
        nested.extend(v for v in (unit[3], unit[4]) if isinstance(v, dict))
    nested.extend(sql[k] for k in ("intersect", "except", "union") if sql[k] is not None)
    return nested


def _has_agg(unit: Any) -> bool:
    # the original tests unit[0] != 0 on whatever it is given: a select item's aggregate, a
    # column unit's aggregate, a condition's NOT flag, or the first letter of "and"/"or"
    return bool(unit[0] != 0)


def _others(sql: SQL) -> int:
    aggs = sum(_has_agg(u) for u in sql["select"][1])
    aggs += sum(_has_agg(u) for u in sql["where"][::2])
    aggs += sum(_has_agg(u) for u in sql["groupBy"])
    if sql["orderBy"]:
        units = [u[1] for u in sql["orderBy"][1] if u[1]] + [
            u[2] for u in sql["orderBy"][1] if u[2]
        ]
        aggs += sum(_has_agg(u) for u in units)
    aggs += sum(_has_agg(u) for u in sql["having"])
    count = int(aggs > 1)
    count += len(sql["select"][1]) > 1
    count += len(sql["where"]) > 1
    count += len(sql["groupBy"]) > 1
    return count
