"""A variant database built from a script (the tables' own DDL, then INSERTs): the script is
what runs, so a stored witness replays to the same database. The engine enforces the
declared constraints while it builds (a row it refuses is left out: a primary or unique
key repeated, a NULL in a NOT NULL column, a CHECK, a value of the wrong type); foreign keys
are kept by leaving out rows whose parent is missing (SQLite's declared keys are often
unenforceable: a missing parent table)."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import sqlite3
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from queryeval.verify._schema import Schema, quote

Data = dict[str, list[tuple[Any, ...]]]


class Unrenderable(ValueError):
    """A value no SQL literal of this builder writes (a nested DuckDB value)."""


def literal(value: Any, dialect: str) -> str:
    """A SQL literal for `value` in `dialect`.

    >>> literal("it's", "sqlite"), literal(None, "duckdb"), literal(2.5, "sqlite")
    ("'it''s'", 'NULL', '2.5')
    """
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return ("TRUE" if value else "FALSE") if dialect == "duckdb" else str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "CAST('NaN' AS DOUBLE)" if dialect == "duckdb" else "NULL"
        if math.isinf(value):
            sign = "-" if value < 0 else ""
            return f"CAST('{sign}inf' AS DOUBLE)" if dialect == "duckdb" else f"{sign}9e999"
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bytes | bytearray | memoryview):
        return "X'" + bytes(value).hex() + "'"
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, dt.timedelta):
        micro = (value.days * 86400 + value.seconds) * 10**6 + value.microseconds
        return f"INTERVAL '{micro} microseconds'"
    if isinstance(value, dt.date | dt.time | uuid.UUID):
        text = value.isoformat() if not isinstance(value, uuid.UUID) else str(value)
        return "'" + text + "'"
    raise Unrenderable(f"no SQL literal for a {type(value).__name__}")


def insert_statement(table: str, rows: Iterable[tuple[Any, ...]], dialect: str) -> str:
    """One INSERT of `rows` into `table`.

    >>> insert_statement("t", [(1, "a"), (2, None)], "sqlite")
    'INSERT INTO "t" VALUES\\n  (1, \\'a\\'),\\n  (2, NULL);'
    """
    values = ",\n  ".join("(" + ", ".join(literal(v, dialect) for v in row) + ")" for row in rows)
    return f"INSERT INTO {quote(table)} VALUES\n  {values};"


def needed_tables(schema: Schema, wanted: Iterable[str]) -> list[str]:
    """`wanted` and every table they refer to, in the schema's order (parents first)."""
    keep = set(wanted)
    changed = True
    while changed:
        changed = False
        for name in list(keep):
            for fk in schema.tables[name].foreign_keys:
                parent = schema.table(fk.parent)
                if parent is not None and parent.name not in keep:
                    keep.add(parent.name)
                    changed = True
    return [n for n in schema.tables if n in keep]


def ddl(schema: Schema, tables: Iterable[str]) -> list[str]:
    """The CREATE statements of `tables` as the database declares them."""
    out = []
    for name in tables:
        table = schema.tables[name]
        text = table.ddl.strip()
        out.append(text if text.endswith(";") else text + ";")
        out.extend(s.strip().rstrip(";") + ";" for s in table.extra_ddl)
    return out


def script(schema: Schema, tables: list[str], data: Data) -> str:
    """The replayable script: CREATE statements, then the rows, parents first."""
    parts = ddl(schema, tables)
    for name in tables:
        rows = data.get(name) or []
        if rows:
            parts.append(insert_statement(name, rows, schema.dialect))
    return "\n".join(parts) + "\n"


def consistent(schema: Schema, tables: list[str], data: Data) -> Data:
    """`data` without the rows whose foreign key names a parent row that is not there (and,
    in turn, their children), parents first; NULL in a key column refers to nothing."""
    out: Data = {}
    for name in tables:
        table = schema.tables[name]
        rows = list(data.get(name) or [])
        columns = list(table.columns)
        for fk in table.foreign_keys:
            parent = schema.table(fk.parent)
            if parent is None:
                continue
            parent_rows = rows if parent.name == name else out.get(parent.name) or []
            if parent.name not in tables:
                continue
            pcols = list(parent.columns)
            try:
                pidx = [pcols.index(c) for c in fk.parent_columns]
                cidx = [columns.index(c) for c in fk.columns]
            except ValueError:
                continue
            present = {_key(tuple(r[i] for i in pidx)) for r in parent_rows}
            rows = [r for r in rows if any(r[i] is None for i in cidx)
                    or _key(tuple(r[i] for i in cidx)) in present]  # fmt: skip
        out[name] = rows
    return out


def _key(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """A foreign key's values as compared: text and numbers apart, 1 and 1.0 alike."""
    return tuple((type(v) is str, v) for v in values)


def build(schema: Schema, tables: list[str], data: Data, run: Callable[[str], Any]) -> Data:
    """Build the tables and their rows with `run` (executes one statement on the new
    database); the rows the engine accepted, parents first."""
    data = consistent(schema, tables, data)
    for statement in ddl(schema, tables):
        run(statement)
    kept: Data = {}
    for name in tables:
        rows = consistent(schema, tables, {**kept, name: data.get(name) or []})[name]
        kept[name] = _insert(run, name, rows, schema.dialect)
    return kept


def build_sqlite(schema: Schema, tables: list[str], data: Data, path: Path) -> Data:
    """`build` into a new SQLite file at `path`."""
    con = sqlite3.connect(path)
    try:
        con.execute("PRAGMA journal_mode = OFF")
        con.execute("PRAGMA synchronous = OFF")
        kept = build(schema, tables, data, con.execute)
        con.commit()
    finally:
        con.close()
    return kept


def _insert(run: Any, table: str, rows: list[tuple[Any, ...]], dialect: str
            ) -> list[tuple[Any, ...]]:  # fmt: skip
    """Insert all rows at once; where the engine refuses, row by row, keeping the
    accepted ones."""
    if not rows:
        return []
    try:
        run(insert_statement(table, rows, dialect))
        return rows
    except Unrenderable:
        raise
    except Exception:  # a constraint refused a row: find which, one at a time
        pass
    kept = []
    for row in rows:
        try:
            run(insert_statement(table, [row], dialect))
        except Unrenderable:
            raise
        except Exception:
            continue
        kept.append(row)
    return kept
