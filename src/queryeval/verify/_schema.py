"""The declared schema of a SQL database as variants must respect it: each table's DDL (as
the engine stores it), columns, primary and unique keys, NOT NULL and foreign keys; and a
sample of its rows. Read through the engine's own sandbox (DuckDB) or a separate read-only
connection (SQLite's PRAGMA functions are refused by the sandbox's authorizer); the user's
database is never written."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from queryeval.engines import Engine


@dataclass
class ForeignKey:
    """`columns` of a table refer to `parent_columns` of `parent`."""

    columns: tuple[str, ...]
    parent: str
    parent_columns: tuple[str, ...]


@dataclass
class Table:
    """One table: its DDL, columns (name -> declared type), keys and constraints."""

    name: str
    ddl: str
    columns: dict[str, str]
    not_null: set[str] = field(default_factory=set)
    keys: list[tuple[str, ...]] = field(default_factory=list)  # primary and unique keys
    foreign_keys: list[ForeignKey] = field(default_factory=list)
    extra_ddl: list[str] = field(default_factory=list)  # CREATE UNIQUE INDEX ...

    def column(self, name: str) -> str | None:
        """The column's declared spelling, matched case-insensitively (None if absent)."""
        low = name.lower()
        return next((c for c in self.columns if c.lower() == low), None)


@dataclass
class Schema:
    """Tables by name, in an order where a table comes after the tables it refers to."""

    dialect: str
    tables: dict[str, Table]

    def table(self, name: str) -> Table | None:
        """The table named `name`, case-insensitively."""
        low = name.lower()
        return next((t for n, t in self.tables.items() if n.lower() == low), None)


def quote(name: str) -> str:
    """A SQL identifier in double quotes.

    >>> quote('a"b')
    '"a""b"'
    """
    return '"' + name.replace('"', '""') + '"'


def supported(engine: Engine) -> str | None:
    """Why variants cannot be built for `engine` (None: a DuckDB or SQLite file, the
    embedded KQL engine's DuckDB file, a graph on the embedded ArcadeDB, or a database
    reached by a SQLAlchemy URL)."""
    if engine.language == "kql":  # the embedded engine: a DuckDB file, its own preparation
        if not all(hasattr(engine, a) for a in ("prepare", "now", "translate")):
            return "variants are built for KQL on the embedded engine (duckdb-kql) only"
        if getattr(engine, "path", None) is None:
            return "the engine has no database file to read"
        return None
    if engine.language == "cypher":  # the embedded ArcadeDB: variants on a scratch ArcadeDB
        if getattr(engine, "server", None) is None or not hasattr(engine, "graph_names"):
            return ("variants of a graph are built for the embedded ArcadeDB only (a Neo4j "
                    "server's semantics are not ArcadeDB's)")  # fmt: skip
        return None
    if engine.language == "sql" and hasattr(engine, "url") and hasattr(engine, "backend"):
        return None  # a server: a sample of its tables copied (queryeval.verify._sampled)
    if engine.language != "sql" or engine.dialect not in ("duckdb", "sqlite"):
        return (f"variants are built for SQL on DuckDB and SQLite and KQL on the embedded "
                f"engine, not {engine.dialect}")  # fmt: skip
    if getattr(engine, "path", None) is None:
        return "the engine has no database file to read"
    return None


def read_schema(engine: Engine) -> Schema:
    """The declared schema of a DuckDB or SQLite engine's database; for the embedded KQL
    engine, its DuckDB tables (`_kql_tables`)."""
    if engine.language == "kql":
        return Schema("duckdb", _kql_tables(engine))
    tables = _sqlite_tables(engine) if engine.dialect == "sqlite" else _duckdb_tables(engine)
    return Schema(engine.dialect, _ordered(tables))


def read_rows(engine: Engine, table: str, limit: int) -> tuple[list[str], list[tuple[Any, ...]]]:
    """At most `limit` rows of `table` in storage order, read through the engine's sandbox
    (in KQL on a KQL engine: `['table'] | take limit`)."""
    if engine.language == "kql":
        name = "['" + table.replace("\\", "\\\\").replace("'", "\\'") + "']"
        execution = engine.execute(f"{name} | take {int(limit)}")
    else:
        execution = engine.execute(f"SELECT * FROM {quote(table)} LIMIT {int(limit)}")
    if not execution.ok or execution.result is None:
        raise RuntimeError(f"cannot read {table}: {execution.outcome.message}")
    return list(execution.result.columns), [tuple(r) for r in execution.result.rows]


def _rows(engine: Engine, query: str) -> list[tuple[Any, ...]]:
    execution = engine.execute(query)
    if not execution.ok or execution.result is None:
        raise RuntimeError(f"cannot read the catalog: {execution.outcome.message}")
    return [tuple(r) for r in execution.result.rows]


def _duckdb_tables(engine: Engine) -> dict[str, Table]:
    tables: dict[str, Table] = {}
    for name, ddl in _rows(engine, "SELECT table_name, sql FROM duckdb_tables() "
                           "WHERE database_name = current_database() AND NOT internal "
                           "ORDER BY table_oid"):  # fmt: skip
        tables[name] = Table(name, ddl, {})
    for name, column, kind, nullable in _rows(
        engine,
        "SELECT table_name, column_name, data_type, is_nullable FROM duckdb_columns() "
        "WHERE database_name = current_database() AND NOT internal "
        "ORDER BY table_oid, column_index",
    ):
        if name in tables:
            tables[name].columns[column] = kind
            if not nullable:
                tables[name].not_null.add(column)
    for name, kind, cols, parent, parent_cols in _rows(
        engine,
        "SELECT table_name, constraint_type, constraint_column_names, referenced_table, "
        "referenced_column_names FROM duckdb_constraints() "
        "WHERE database_name = current_database() ORDER BY table_oid, constraint_index",
    ):
        if name not in tables:
            continue
        if kind in ("PRIMARY KEY", "UNIQUE"):
            tables[name].keys.append(tuple(cols))
        elif kind == "FOREIGN KEY" and parent:
            tables[name].foreign_keys.append(ForeignKey(tuple(cols), parent, tuple(parent_cols)))
    return tables


def _kql_tables(engine: Engine) -> dict[str, Table]:
    """The KQL engine's tables as DuckDB declares their columns (its public `schema()`):
    a CREATE TABLE of the columns and their types. Kusto tables declare no keys or
    constraints, so none are kept; nested (dynamic) values make a table unrenderable."""
    tables: dict[str, Table] = {}
    for name, columns in sorted((engine.schema().get("tables") or {}).items()):
        body = ", ".join(f"{quote(c)} {kind}" for c, kind in columns.items())
        tables[name] = Table(name, f"CREATE TABLE {quote(name)} ({body});", dict(columns))
    return tables


def _sqlite_tables(engine: Engine) -> dict[str, Table]:
    path = engine.path  # type: ignore[attr-defined]
    con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    con.text_factory = lambda b: b.decode(errors="replace")
    try:
        con.execute("PRAGMA query_only = ON")
        tables: dict[str, Table] = {}
        for name, ddl in con.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL "
            "AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
        ):
            table = Table(name, ddl, {})
            for _, column, kind, notnull, _default, _pk in con.execute(
                "SELECT * FROM pragma_table_info(?)", (name,)
            ):
                table.columns[column] = kind or ""
                if notnull:
                    table.not_null.add(column)
            pk_cols = [
                r[1]
                for r in con.execute(
                    "SELECT * FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk", (name,)
                )
            ]
            if pk_cols:
                table.keys.append(tuple(pk_cols))
            for _seq, index, unique, origin, _partial in con.execute(
                "SELECT * FROM pragma_index_list(?)", (name,)
            ):
                if not unique or origin == "pk":
                    continue
                cols = [r[2] for r in con.execute("SELECT * FROM pragma_index_info(?)", (index,))]
                if cols and all(c is not None for c in cols):
                    table.keys.append(tuple(cols))
            fks: dict[int, list[tuple[str, str, str | None]]] = {}
            for row in con.execute("SELECT * FROM pragma_foreign_key_list(?)", (name,)):
                fks.setdefault(row[0], []).append((row[2], row[3], row[4]))
            for parts in fks.values():
                parent = parts[0][0]
                columns = tuple(p[1] for p in parts)
                parent_columns = tuple(p[2] or "" for p in parts)
                table.foreign_keys.append(ForeignKey(columns, parent, parent_columns))
            tables[name] = table
        for tbl, ddl in con.execute(
            "SELECT tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
        ):
            if tbl in tables and "unique" in ddl.lower().split("index")[0]:
                tables[tbl].extra_ddl.append(ddl)
    finally:
        con.close()
    _resolve_sqlite_keys(tables)
    return tables


def _resolve_sqlite_keys(tables: dict[str, Table]) -> None:
    """SQLite's foreign keys as declared may name a missing table, or no parent column
    (the parent's primary key): kept only where the parent and its columns exist."""
    low = {n.lower(): t for n, t in tables.items()}
    for table in tables.values():
        kept = []
        for fk in table.foreign_keys:
            parent = low.get(fk.parent.lower())
            if parent is None:
                continue
            cols = fk.parent_columns
            if not all(cols):
                primary = parent.keys[0] if parent.keys else ()
                if len(primary) != len(fk.columns):
                    continue
                cols = primary
            resolved = tuple(parent.column(c) for c in cols)
            if all(resolved) and all(table.column(c) for c in fk.columns):
                kept.append(ForeignKey(
                    tuple(str(table.column(c)) for c in fk.columns), parent.name,
                    tuple(str(c) for c in resolved)))  # fmt: skip
        table.foreign_keys = kept


def _ordered(tables: dict[str, Table]) -> dict[str, Table]:
    """Tables with parents first (a cycle is broken where it closes)."""
    out: dict[str, Table] = {}
    visiting: set[str] = set()
    low = {n.lower(): n for n in tables}

    def visit(name: str) -> None:
        if name in out or name in visiting:
            return
        visiting.add(name)
        for fk in tables[name].foreign_keys:
            parent = low.get(fk.parent.lower())
            if parent is not None and parent != name:
                visit(parent)
        visiting.discard(name)
        out[name] = tables[name]

    for name in tables:
        visit(name)
    return out
