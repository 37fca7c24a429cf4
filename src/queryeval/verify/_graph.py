"""Verified verdicts on Cypher: the variants of a graph on ArcadeDB (the project's Cypher
engine), written into a scratch database of a separate embedded ArcadeDB
(`queryeval.engines.GraphScratch`); the user's graph is only read, through its own
read-only engine.

A graph is seen as tables, so the SQL variants and shrinking apply unchanged: one table a
label (its nodes: `__id` and their property keys), one a relationship type, named
`[:TYPE]` (`__id`, `__from`, `__to` and its property keys); a missing property is NULL. A
variant's nodes are created in their table order, each relationship between nodes the
variant holds (one whose end is gone is left out, as a row whose parent is missing). The
witness is one Cypher `CREATE` (with the original graph's names in a leading comment, so
a query checks the same labels, types and keys on it as on the graph): `replay` writes it
into a scratch database through ArcadeDB's Cypher and runs both queries there. `__id`s
are the variant's own and never visible to a query (`id()` aside).
"""

from __future__ import annotations

import json
import math
import re
import shutil
import tempfile
import threading
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path
from typing import Any

from queryeval.engines import Engine, Execution
from queryeval.verify._build import Data, Unrenderable
from queryeval.verify._check import Settings, Verifier, _Built
from queryeval.verify._hints import Hints
from queryeval.verify._schema import ForeignKey, Schema, Table
from queryeval.verify._variants import Observed

ID, FROM, TO = "__id", "__from", "__to"
_SPAN = 10**7  # each label's node ids in their own range: fresh ids never collide
_NAMES = "// queryeval graph names: "
TIE_ORDERS = 4  # seeded shuffles of a variant tried when its difference may be a tie


def rel_table(rel_type: str) -> str:
    """The table name of a relationship type.

    >>> rel_table("ACTED_IN")
    '[:ACTED_IN]'
    """
    return f"[:{rel_type}]"


class _OnGraph:
    """A variant as an engine: its graph loaded into the scratch database before a query."""

    def __init__(self, verifier: GraphVerifier, graph: dict[str, Any]) -> None:
        self.verifier = verifier
        self.graph = graph

    def execute(self, query: str) -> Execution:
        scratch = self.verifier.scratch
        with scratch.lock:
            scratch.load(self.graph)
            return self.verifier.on_scratch.execute(query)

    def close(self) -> None:
        """Nothing to drop: the scratch database holds one graph at a time."""


class GraphVerifier(Verifier):
    """The variants of a graph served by the embedded ArcadeDB, shared by every case on it."""

    def __init__(self, engine: Engine, settings: Settings, capacity: int = 64) -> None:
        from queryeval.engines import acquire_graph_scratch

        self.engine = engine
        self.settings = settings
        self.dialect = "cypher"
        self.limits = replace(engine.limits, threads=1)
        names = engine.graph_names() if hasattr(engine, "graph_names") else None
        if not names:
            raise RuntimeError("the graph's labels, relationship types and keys cannot be read")
        self.names = {k: sorted(v) for k, v in names.items()}
        self.schema, self._all = read_graph(engine, self.names, settings.rows)
        self._rows = self._all
        self._hints: dict[str, Hints] = {}
        self._built: OrderedDict[str, _Built] = OrderedDict()
        self._capacity = capacity
        self._folder = Path(tempfile.mkdtemp(prefix="queryeval-variants-"))
        self._scratch = None
        self.now = None
        self._lock = threading.RLock()
        self._count = 0
        self.scratch = acquire_graph_scratch(self.limits)
        self.on_scratch = self.scratch.engine(self.names)

    def hints(self, query: str) -> Hints:
        if query not in self._hints:
            self._hints[query] = analyse_cypher(query, self.schema)
        return self._hints[query]

    def tables_for(self, hints: Hints) -> list[str]:
        """Every table of the sample: a pattern without a label or type reaches them all."""
        return list(self.schema.tables)

    def base(self, tables: list[str]) -> Data:
        return {name: self._all[name] for name in tables}

    def script_of(self, tables: list[str], data: Data) -> str:
        return (
            _NAMES
            + json.dumps(self.names, sort_keys=True)
            + "\n"
            + cypher_script(self.schema, graph_of(self.schema, tables, data))
        )

    def replay_witness(self, text: str, queries: dict[str, str]) -> dict[str, Execution]:
        return replay_graph(text, queries, self.limits, self.scratch)

    def assumptions_of(self, data: Data, observed: Observed) -> list[dict[str, Any]]:
        found = super().assumptions_of(data, observed)
        return [a for a in found if not str(a["column"]).startswith("__")]

    def _build(self, tables: list[str], data: Data, *, keep: bool = True) -> _Built:
        kept = consistent_graph(self.schema, tables, data)
        graph = graph_of(self.schema, tables, kept)
        return _Built(_OnGraph(self, graph), kept)  # type: ignore[arg-type]

    def _drop(self, built: _Built) -> None:
        return None

    def execute_on(self, tables: list[str], data: Data, query: str) -> Execution:
        with self._lock, self.scratch.lock:
            return super().execute_on(tables, data, query)

    def _tie_explained(self, tables: list[str], kept: Data, gold: str, pred: str,
                       differs: Any) -> bool:  # fmt: skip
        """Whether the prediction's result on some order of the same nodes and
        relationships matches the gold's on some order (a tie broken differently, not a
        wrong query). ArcadeDB's scan and sort order is not the creation order (records
        spread over buckets), so reversing it alone does not show every tie: the graph is
        also created in `TIE_ORDERS` seeded shuffles."""
        from queryeval.verify._variants import rng_for

        orders = [{t: list(reversed(rows)) for t, rows in kept.items()}]
        for i in range(TIE_ORDERS):
            rng = rng_for(self.settings.seed, "ties", str(i))
            shuffled = {}
            for t, rows in kept.items():
                rows = list(rows)
                rng.shuffle(rows)
                shuffled[t] = rows
            orders.append(shuffled)
        golds: list[Execution] = []
        preds: list[Execution] = []
        for data in [kept, *orders]:
            engine = self._build(tables, data).engine
            g, p = engine.execute(gold), engine.execute(pred)
            if g.ok and p.ok:
                golds.append(g)
                preds.append(p)
        return any(differs(p, g) is None for p in preds for g in golds)

    def check(self, gold: str, pred: str, differs: Any) -> Any:
        with self._lock, self.scratch.lock:
            return self._check(gold, pred, differs)

    def close(self) -> None:
        from queryeval.engines import release_graph_scratch

        with self._lock:
            self._built.clear()
            if self.scratch is not None:
                release_graph_scratch(self.scratch)
                self.scratch = None  # type: ignore[assignment]
            shutil.rmtree(self._folder, ignore_errors=True)


# -- the graph as tables --------------------------------------------------------------------


def _name(text: str) -> str:
    return "`" + text.replace("`", "``") + "`"


def read_graph(engine: Engine, names: dict[str, Any], rows: int) -> tuple[Schema, Data]:
    """At most `rows` nodes of each label and `rows` relationships of each type between
    them, read through the graph's own engine, as tables (see the module docstring)."""
    tables: dict[str, Table] = {}
    data: Data = {}
    ids: dict[Any, tuple[str, int]] = {}
    for n, label in enumerate(sorted(names.get("labels") or [])):
        run = engine.execute(
            f"MATCH (n:{_name(label)}) RETURN id(n) AS id, properties(n) AS p LIMIT {int(rows)}"
        )
        if not run.ok or run.result is None:
            raise RuntimeError(f"cannot read the nodes of {label}: {run.outcome.message}")
        nodes = [(key, props) for key, props in run.result.rows if key not in ids]
        keys = sorted({k for _, props in nodes for k in (props or {})})
        for i, (key, _) in enumerate(nodes):
            ids[key] = (label, (n + 1) * _SPAN + i)
        tables[label] = Table(label, "", {ID: "INTEGER", **{k: _kind(nodes, k) for k in keys}},
                              not_null={ID}, keys=[(ID,)])  # fmt: skip
        data[label] = [(ids[key][1], *(_plain((props or {}).get(k)) for k in keys))
                       for key, props in nodes]  # fmt: skip
    for n, rel_type in enumerate(sorted(names.get("relationship_types") or [])):
        run = engine.execute(
            f"MATCH (a)-[r:{_name(rel_type)}]->(b) RETURN id(a) AS a, id(b) AS b, "
            f"properties(r) AS p LIMIT {int(rows) * 4}"
        )
        if not run.ok or run.result is None:
            raise RuntimeError(f"cannot read the relationships {rel_type}: {run.outcome.message}")
        rels = [(a, b, props) for a, b, props in run.result.rows if a in ids and b in ids][:rows]
        keys = sorted({k for *_, props in rels for k in (props or {})})
        name = rel_table(rel_type)
        starts = {ids[a][0] for a, _, _ in rels}
        ends = {ids[b][0] for _, b, _ in rels}
        fks = [ForeignKey((col,), next(iter(labels)), (ID,))
               for col, labels in ((FROM, starts), (TO, ends)) if len(labels) == 1]  # fmt: skip
        columns = {ID: "INTEGER", FROM: "INTEGER", TO: "INTEGER"}
        columns.update({k: _kind([(None, p) for *_, p in rels], k) for k in keys})
        tables[name] = Table(name, "", columns, not_null={ID, FROM, TO}, keys=[(ID,)],
                             foreign_keys=fks)  # fmt: skip
        data[name] = [(-((n + 1) * _SPAN + i), ids[a][1], ids[b][1],
                       *(_plain((props or {}).get(k)) for k in keys))
                      for i, (a, b, props) in enumerate(rels)]  # fmt: skip
    return Schema("cypher", tables), data


def _kind(items: list[tuple[Any, Any]], key: str) -> str:
    for _, props in items:
        value = (props or {}).get(key)
        if isinstance(value, bool):
            return "BOOLEAN"
        if isinstance(value, int):
            return "INTEGER"
        if isinstance(value, float):
            return "DOUBLE"
        if isinstance(value, str):
            return "VARCHAR"
        if isinstance(value, list):
            return "LIST"
    return ""


def _plain(value: Any) -> Any:
    """A property value a variant can hold: lists as tuples (hashable), the rest as is;
    values no Cypher literal of this builder writes (temporal, maps) are refused."""
    if isinstance(value, list):
        return tuple(_plain(v) for v in value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise Unrenderable(f"no Cypher literal for a {type(value).__name__} property value")


def consistent_graph(schema: Schema, tables: list[str], data: Data) -> Data:
    """`data` as a graph holds it: one node per id (the first), relationships between
    nodes it holds, one per id."""
    out: Data = {}
    nodes: set[Any] = set()
    for name in tables:
        if name.startswith("[:"):
            continue
        seen: set[Any] = set()
        rows = []
        for row in data.get(name) or []:
            if row[0] is None or row[0] in seen or row[0] in nodes:
                continue
            seen.add(row[0])
            rows.append(row)
        nodes |= seen
        out[name] = rows
    for name in tables:
        if not name.startswith("[:"):
            continue
        seen = set()
        rows = []
        for row in data.get(name) or []:
            if row[0] in seen or row[1] not in nodes or row[2] not in nodes:
                continue
            seen.add(row[0])
            rows.append(row)
        out[name] = rows
    return out


def graph_of(schema: Schema, tables: list[str], data: Data) -> dict[str, Any]:
    """The graph of `data` as the scratch server writes it: nodes [id, [label], {props}],
    relationships [type, from, to, {props}] (a NULL property is no property)."""
    nodes: list[Any] = []
    rels: list[Any] = []
    for name in tables:
        columns = list(schema.tables[name].columns)
        for row in data.get(name) or []:
            if name.startswith("[:"):
                props = _props(columns[3:], row[3:])
                rels.append([name[2:-1], row[1], row[2], props])
            else:
                nodes.append([row[0], [name], _props(columns[1:], row[1:])])
    return {"nodes": nodes, "rels": rels}


def _props(columns: list[str], values: tuple[Any, ...]) -> dict[str, Any]:
    return {c: _json(v) for c, v in zip(columns, values, strict=True) if v is not None}


def _json(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_json(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        raise Unrenderable("no Cypher literal for a NaN or infinite property value")
    return value


def cypher_literal(value: Any) -> str:
    """A Cypher literal for a property value.

    >>> cypher_literal("it's"), cypher_literal([1, 2.5, True]), cypher_literal(None)
    ("'it\\\\'s'", '[1, 2.5, true]', 'null')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise Unrenderable("no Cypher literal for a NaN or infinite value")
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(cypher_literal(v) for v in value) + "]"
    raise Unrenderable(f"no Cypher literal for a {type(value).__name__}")


def cypher_script(schema: Schema, graph: dict[str, Any]) -> str:
    """One CREATE of the graph's nodes and relationships ('' for an empty graph).

    >>> print(cypher_script(Schema("cypher", {}), {"nodes": [[1, ["A"], {"x": 1}],
    ...     [2, ["B"], {}]], "rels": [["R", 1, 2, {"w": 'a'}]]}), end="")
    CREATE (n1:`A` {`x`: 1}),
      (n2:`B`),
      (n1)-[:`R` {`w`: 'a'}]->(n2);
    """
    parts = []
    var = {}
    for i, (key, labels, props) in enumerate(graph["nodes"], 1):
        var[key] = f"n{i}"
        parts.append(f"(n{i}:{':'.join(_name(x) for x in labels)}{_map(props)})")
    for rel_type, start, end, props in graph["rels"]:
        parts.append(f"({var[start]})-[:{_name(rel_type)}{_map(props)}]->({var[end]})")
    return "CREATE " + ",\n  ".join(parts) + ";\n" if parts else ""


def _map(props: dict[str, Any]) -> str:
    if not props:
        return ""
    return " {" + ", ".join(f"{_name(k)}: {cypher_literal(v)}" for k, v in props.items()) + "}"


def replay_graph(text: str, queries: dict[str, str], limits: Any,
                 scratch: Any = None) -> dict[str, Execution]:  # fmt: skip
    """A Cypher witness: its CREATE written into a scratch graph by ArcadeDB's Cypher, both
    queries run there read-only, checked against the names in its leading comment."""
    from queryeval.engines import acquire_graph_scratch, release_graph_scratch

    names: dict[str, Any] = {}
    first = text.split("\n", 1)[0]
    if first.startswith(_NAMES):
        names = json.loads(first[len(_NAMES) :])
    own = scratch is None
    scratch = scratch or acquire_graph_scratch(limits)
    try:
        with scratch.lock:
            engine = scratch.engine(names)
            try:
                statement = (
                    "\n".join(line for line in text.splitlines() if not line.startswith("//"))
                    .strip()
                    .removesuffix(";")
                )
                scratch.load({"cypher": statement})
                return {name: engine.execute(query) for name, query in queries.items()}
            finally:
                scratch.forget(engine)
    finally:
        if own:
            release_graph_scratch(scratch)


# -- hints ----------------------------------------------------------------------------------

_IDENT = r"(?:`[^`]+`|[A-Za-z_]\w*)"
_ORDER_BY = re.compile(r"\bORDER\s+BY\b(.*?)(?=\bSKIP\b|\bLIMIT\b|$)", re.IGNORECASE | re.DOTALL)
_LIMITED = re.compile(r"\b(LIMIT|SKIP)\b|\bhead\s*\(", re.IGNORECASE)
# the operators of `literal_comparisons` as the hints write them
_HINT_OPS = {"<>": "!=", "=~": "like", "STARTS WITH": "like", "ENDS WITH": "like",
             "CONTAINS": "like", "IN": "="}  # fmt: skip


def _bare(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def analyse_cypher(query: str, schema: Schema) -> Hints:
    """The hints of a Cypher query over the graph's tables: the labels and types it names,
    the property keys it reads, `v.key op literal` (and `{key: literal}` in a pattern, `IN
    [...]`), `ORDER BY v.key` under a LIMIT; a variable's tables are its label's or type's,
    else every table with the key.

    >>> s = Schema("cypher", {"Movie": Table("Movie", "", {"__id": "", "released": ""}),
    ...     "Person": Table("Person", "", {"__id": "", "name": ""})})
    >>> h = analyse_cypher("MATCH (p:Person {name: 'Tom'})-->(m) WHERE m.released > 2000 "
    ...                    "RETURN m ORDER BY m.released LIMIT 1", s)
    >>> sorted(h.tables), sorted(h.literals), sorted(h.ordered), h.limited
    (['Person'], [('Movie', 'released', '>', 2000), ('Person', 'name', '=', 'Tom')], \
[('Movie', 'released')], True)
    """
    from queryeval.languages.cypher import (
        label_bindings,
        literal_comparisons,
        referenced_names,
        referenced_properties,
    )

    hints = Hints()
    try:
        named = referenced_names(query)
        keys = referenced_properties(query)
    except Exception:  # the lexer reads anything; be safe
        return hints
    for label in named["labels"]:
        if label in schema.tables:
            hints.tables.add(label)
    for rel_type in named["types"]:
        if rel_table(rel_type) in schema.tables:
            hints.tables.add(rel_table(rel_type))
    bound: dict[str, set[str]] = {}
    for var, word, _ in label_bindings(query):
        if var:
            table = word if word in schema.tables else rel_table(word)
            if table in schema.tables:
                bound.setdefault(var, set()).add(table)

    def tables_of(var: str | None, key: str) -> list[str]:
        own = bound.get(var or "", set())
        pool = own or set(schema.tables)
        return sorted(t for t in pool if key in schema.tables[t].columns)

    for key in keys:
        for table in tables_of(None, key):
            hints.columns.add((table, key))
    for comp in literal_comparisons(query):
        if comp.pattern is None:  # `v.key op literal`: the variable's tables
            op = _HINT_OPS.get(comp.op, comp.op)
            for table in tables_of(comp.var, comp.key):
                hints.literals.append((table, comp.key, op, comp.value))
            continue
        owner = {comp.label} if comp.label else set()
        owner = {t if t in schema.tables else rel_table(t) for t in owner}
        pool = [t for t in owner if t in schema.tables] or tables_of(comp.var, comp.key)
        for table in pool:
            if comp.key in schema.tables[table].columns:
                hints.literals.append((table, comp.key, "=", comp.value))
    hints.limited = bool(_LIMITED.search(query))
    if hints.limited:
        for m in _ORDER_BY.finditer(query):
            for ref in re.finditer(rf"({_IDENT})\s*\.\s*({_IDENT})", m.group(1)):
                for table in tables_of(_bare(ref.group(1)), _bare(ref.group(2))):
                    hints.ordered.add((table, _bare(ref.group(2))))
    literals: list[tuple[str, str, str, Any]] = []
    for lit in hints.literals:
        if lit not in literals:
            literals.append(lit)
    hints.literals = literals
    return hints
