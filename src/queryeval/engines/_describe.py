"""The schema of a database as a prompt shows it, read from the engine itself:

- SQL: the DDL (`CREATE TABLE ...` with keys, as DuckDB and SQLite store it; reflected and
  compiled by SQLAlchemy for server databases);
- KQL: one line per table, `Logs (Timestamp: datetime, Level: string)`, with Kusto's type
  names (duckdb-kql's DuckDB types mapped to the scalar types KQL declares);
- Cypher: the graph schema in the form the Text2Cypher datasets use (node properties,
  relationship properties, relationship patterns), property types sampled from the data.

Catalog queries go through the engine's sandbox (read-only, time-limited) where the engine
speaks SQL.
"""

from __future__ import annotations

import contextlib
from typing import Any

from queryeval.engines._base import Engine

# duckdb-kql stores KQL tables in DuckDB: its column types, as KQL names them
_KQL_TYPES = {
    "VARCHAR": "string",
    "TEXT": "string",
    "BOOLEAN": "bool",
    "TINYINT": "int",
    "SMALLINT": "int",
    "INTEGER": "int",
    "BIGINT": "long",
    "HUGEINT": "long",
    "UTINYINT": "int",
    "USMALLINT": "int",
    "UINTEGER": "long",
    "UBIGINT": "long",
    "FLOAT": "real",
    "DOUBLE": "real",
    "REAL": "real",
    "DATE": "datetime",
    "TIMESTAMP": "datetime",
    "TIMESTAMP WITH TIME ZONE": "datetime",
    "TIMESTAMP_NS": "datetime",
    "TIMESTAMP_MS": "datetime",
    "TIMESTAMP_S": "datetime",
    "INTERVAL": "timespan",
    "UUID": "guid",
    "JSON": "dynamic",
}
_SAMPLE = 100  # nodes / relationships per label or type read to tell property types


def describe_schema(engine: Engine) -> str:
    """The schema text of `engine`'s database for a prompt (see the module's docstring).
    An engine served by another process (a cluster's engine actor) describes itself there
    (`described_schema`), so its prompt is the same as in process."""
    described = getattr(engine, "described_schema", None)
    if callable(described):
        return str(described())
    from queryeval.engines._cypher import CypherEngine
    from queryeval.engines._duckdb import DuckDBEngine
    from queryeval.engines._sqlalchemy import SQLAlchemyEngine
    from queryeval.engines._sqlite import SQLiteEngine

    if isinstance(engine, DuckDBEngine):
        text = _catalog_ddl(
            engine,
            "SELECT sql FROM duckdb_tables() WHERE database_name = current_database() "
            "UNION ALL SELECT sql FROM duckdb_views() WHERE NOT internal "
            "AND database_name = current_database()",
        )
    elif isinstance(engine, SQLiteEngine):
        text = _catalog_ddl(
            engine,
            "SELECT sql || ';' FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite_%' AND sql IS NOT NULL ORDER BY type, name",
        )
    elif isinstance(engine, SQLAlchemyEngine):
        text = _sqlalchemy_ddl(engine)
    elif engine.language == "kql":
        return kql_schema(engine.schema())
    elif isinstance(engine, CypherEngine):
        return graph_schema(engine.schema(), _property_types(engine))
    else:
        text = None
    return text if text else ddl_from_columns(engine.schema())


def _catalog_ddl(engine: Engine, query: str) -> str | None:
    """The DDL statements a catalog query returns, one per line; None when it fails."""
    run = engine.execute(query)
    if not run.ok or run.result is None:
        return None
    return "\n".join(str(row[0]) for row in run.result.rows if row[0])


def _sqlalchemy_ddl(engine: Any) -> str | None:
    """Tables reflected by SQLAlchemy, compiled as CREATE TABLE in the server's dialect."""
    try:
        from sqlalchemy import MetaData
        from sqlalchemy.schema import CreateTable

        meta = MetaData()
        meta.reflect(bind=engine._engine)
        return "\n".join(
            f"{str(CreateTable(table).compile(dialect=engine._engine.dialect)).strip()};"
            for table in meta.sorted_tables
        )
    except Exception:  # reflection is best effort; the column list below always works
        return None


def ddl_from_columns(schema: dict[str, Any]) -> str:
    """`CREATE TABLE t (c TYPE, ...);` from a `{"tables": {t: {c: type}}}` schema.

    >>> ddl_from_columns({"tables": {"t": {"a": "INTEGER", "b": "VARCHAR"}}})
    'CREATE TABLE t (a INTEGER, b VARCHAR);'
    """
    lines = []
    for table, columns in (schema.get("tables") or {}).items():
        cols = ", ".join(f"{name} {kind}" for name, kind in columns.items())
        lines.append(f"CREATE TABLE {table} ({cols});")
    return "\n".join(lines)


def kql_type(kind: str) -> str:
    """The KQL scalar type of a column type (Kusto's own names pass through).

    >>> [kql_type(t) for t in ("VARCHAR", "BIGINT", "DECIMAL(10,2)", "TIMESTAMP", "string")]
    ['string', 'long', 'decimal', 'datetime', 'string']
    """
    upper = kind.upper()
    if upper in _KQL_TYPES:
        return _KQL_TYPES[upper]
    if upper.startswith(("DECIMAL", "NUMERIC")):
        return "decimal"
    if upper.endswith("[]") or upper.startswith(("STRUCT", "MAP", "LIST")):
        return "dynamic"
    return kind if kind.islower() else kind.lower()


def kql_schema(schema: dict[str, Any]) -> str:
    """One line per table: `Logs (Timestamp: datetime, Level: string)`; the pinned clock
    (`now`) follows, since `ago()` and `now()` answer relative to it.

    >>> kql_schema({"tables": {"Logs": {"Level": "VARCHAR"}}})
    'Logs (Level: string)'
    """
    lines = []
    for table, columns in (schema.get("tables") or {}).items():
        cols = ", ".join(f"{name}: {kql_type(str(kind))}" for name, kind in columns.items())
        lines.append(f"{table} ({cols})")
    if schema.get("now"):
        lines.append(f"// now() is {schema['now']}")
    return "\n".join(lines)


def _value_type(value: Any) -> str:
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "INTEGER"
    if isinstance(value, float):
        return "FLOAT"
    if isinstance(value, str):
        return "STRING"
    if isinstance(value, list | tuple):
        return "LIST"
    if isinstance(value, dict):
        return "MAP"
    name = type(value).__name__.upper()
    return {"DATETIME": "DATE_TIME", "TIME": "TIME", "DURATION": "DURATION"}.get(name, name)


def _property_types(engine: Engine) -> dict[tuple[str, str], str]:
    """(label or relationship type, property) -> type, from up to `_SAMPLE` items of each.
    Best effort: what a server does not answer stays untyped."""
    types: dict[tuple[str, str], str] = {}
    schema = engine.schema()
    reads = [
        (label, f"MATCH (n:`{label}`) WITH n LIMIT {_SAMPLE} RETURN properties(n) AS p")
        for label in schema.get("labels", {})
    ] + [
        (rel, f"MATCH ()-[r:`{rel}`]->() WITH r LIMIT {_SAMPLE} RETURN properties(r) AS p")
        for rel in schema.get("relationship_types", {})
    ]
    for owner, query in reads:
        with contextlib.suppress(Exception):
            run = engine.execute(query)
            if not run.ok or run.result is None:
                continue
            for (props,) in run.result.rows:
                for key, value in (props or {}).items():
                    if value is not None:
                        types.setdefault((owner, key), _value_type(value))
    return types


def graph_schema(schema: dict[str, Any], types: dict[tuple[str, str], str] | None = None) -> str:
    """The graph schema as the Text2Cypher datasets print it.

    >>> schema = {"labels": {"Person": ["name"]}, "relationship_types": {"KNOWS": []},
    ...           "patterns": [["Person", "KNOWS", "Person"]]}
    >>> print(graph_schema(schema, {("Person", "name"): "STRING"}))
    Node properties:
    Person {name: STRING}
    Relationship properties:
    The relationships:
    (:Person)-[:KNOWS]->(:Person)
    """
    types = types or {}

    def props(owner: str, keys: list[str]) -> str:
        shown = [f"{k}: {types[(owner, k)]}" if (owner, k) in types else k for k in keys]
        return f"{owner} {{{', '.join(shown)}}}"

    lines = ["Node properties:"]
    lines += [props(label, keys) for label, keys in schema.get("labels", {}).items()]
    lines.append("Relationship properties:")
    rels = schema.get("relationship_types", {})
    lines += [props(rel, keys) for rel, keys in rels.items() if keys]
    lines.append("The relationships:")
    lines += [f"(:{a})-[:{r}]->(:{b})" for a, r, b in schema.get("patterns", [])]
    return "\n".join(lines)
