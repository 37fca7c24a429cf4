"""Copies of a DuckDB or SQLite database with every table's rows stored in another order
(reversed; shuffled from a seed): a gold whose result changes on them depends on row order.

The copy keeps the tables' columns and views (SQLite: the declared column types, without
constraints or indexes, so the rows are scanned in the order they were inserted; DuckDB:
`duckdb_tables().sql` as declared); the rows are the same, only their order differs."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

ORDERS = ("reversed", "shuffled")


def reorder(rows: list[Any], order: str, seed: int, table: str) -> list[Any]:
    """`rows` in `order` (`reversed`, or `shuffled` by a generator seeded from `seed` and
    the table's name).

    >>> reorder([1, 2, 3], "reversed", 0, "t")
    [3, 2, 1]
    >>> sorted(reorder([1, 2, 3], "shuffled", 0, "t"))
    [1, 2, 3]
    """
    if order == "reversed":
        return list(reversed(rows))
    out = list(rows)
    random.Random(f"{seed}:{table}").shuffle(out)
    return out


def permuted_copy(dialect: str, source: Path, target: Path, order: str, seed: int = 0) -> Path:
    """Write a copy of the database file `source` at `target` with rows in `order`."""
    if dialect == "sqlite":
        return _sqlite(source, target, order, seed)
    if dialect == "duckdb":
        return _duckdb(source, target, order, seed)
    raise ValueError(f"row order is permuted for SQLite and DuckDB files, not {dialect}")


def _sqlite(source: Path, target: Path, order: str, seed: int) -> Path:
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    try:
        objects = src.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE "
            "'sqlite_%' ORDER BY type = 'table' DESC, rowid"
        ).fetchall()
        dst = sqlite3.connect(target)
        try:
            dst.execute("PRAGMA foreign_keys = OFF")
            for kind, name, _sql in objects:
                if kind == "table":
                    # the declared columns without constraints: a rowid table whose scan
                    # order is the insertion order (an INTEGER PRIMARY KEY would keep the
                    # rows in key order whatever the order they are inserted in)
                    columns = src.execute(f'SELECT name, type FROM pragma_table_info("{name}")')
                    dst.execute(
                        f'CREATE TABLE "{name}" ('
                        + ", ".join(f'"{c}" {t}'.rstrip() for c, t in columns.fetchall())
                        + ")"
                    )
                    rows = src.execute(f'SELECT * FROM "{name}"').fetchall()
                    if rows:
                        marks = ", ".join("?" * len(rows[0]))
                        dst.executemany(
                            f'INSERT INTO "{name}" VALUES ({marks})',
                            reorder(rows, order, seed, name),
                        )
            for kind, _name, sql in objects:
                if kind == "view":  # indexes and triggers left out: only the order counts
                    dst.execute(sql)
            dst.commit()
        finally:
            dst.close()
    finally:
        src.close()
    return target


def _duckdb(source: Path, target: Path, order: str, seed: int) -> Path:
    import shutil

    import duckdb

    # a copy to read from: DuckDB refuses a second connection to a file this process
    # already has open with another configuration (the engine's)
    plain = target.with_name(target.stem + "-source.duckdb")
    shutil.copyfile(source, plain)
    try:
        src = duckdb.connect(str(plain), read_only=True, config={"threads": 1})
        try:
            tables = [
                (schema, name, sql, _count(src, schema, name))
                for schema, name, sql in src.execute(
                    "SELECT schema_name, table_name, sql FROM duckdb_tables() "
                    "WHERE NOT internal AND database_name = current_database()"
                ).fetchall()
            ]
            views = src.execute(
                "SELECT sql FROM duckdb_views() WHERE NOT internal AND NOT temporary "
                "AND database_name = current_database()"
            ).fetchall()
        finally:
            src.close()
        dst = duckdb.connect(str(target), config={"threads": 1})
        try:
            dst.execute(f"ATTACH '{_literal(plain)}' AS queryeval_source (READ_ONLY)")
            for schema, name, sql, count in tables:
                if schema != "main":
                    dst.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
                dst.execute(sql)
                if not count:
                    continue
                # one INSERT ... SELECT in the new order (executemany ran one statement a
                # row: seconds for a few hundred); the order is reorder's, by position
                position = [0] * count
                for k, i in enumerate(reorder(list(range(count)), order, seed, name)):
                    position[i] = k
                dst.execute(
                    f'INSERT INTO "{schema}"."{name}" SELECT * EXCLUDE (queryeval_rn) FROM '
                    f"(SELECT *, row_number() OVER () AS queryeval_rn FROM "
                    f'queryeval_source."{schema}"."{name}") ORDER BY ($1::BIGINT[])[queryeval_rn]',
                    [position],
                )
            dst.execute("DETACH queryeval_source")
            for (sql,) in views:
                dst.execute(sql)
            dst.execute("CHECKPOINT")
        finally:
            dst.close()
    finally:
        plain.unlink(missing_ok=True)
    return target


def _count(con: Any, schema: str, name: str) -> int:
    found = con.execute(f'SELECT count(*) FROM "{schema}"."{name}"').fetchone()
    return int(found[0]) if found else 0


def _literal(path: Path) -> str:
    return str(path).replace("'", "''")
