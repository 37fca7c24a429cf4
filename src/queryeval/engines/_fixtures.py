"""Fixture databases built by code from small seeds committed in the repo (CSV tables with an
optional `schema.sql`, or a graph YAML), content-addressed in the cache so each is built once.

A seed folder for SQL/KQL holds `schema.sql` (optional DDL) and one `<table>.csv` per table
(header row; empty cell = NULL). A graph seed is a YAML file, see `queryeval.engines._graph`.
"""

from __future__ import annotations

import csv
import hashlib
import os
import sqlite3
import uuid
from pathlib import Path

from queryeval.errors import InputError

BUILDER_VERSION = "1"  # bump when a builder changes what it builds


def seed_digest(seed: Path, kind: str) -> str:
    """SHA-256 of the builder version, the kind, and every seed file's name and bytes."""
    if not seed.exists():
        raise InputError("fixture seed not found", path=seed)
    digest = hashlib.sha256(f"{BUILDER_VERSION}:{kind}".encode())
    files = sorted(p for p in seed.rglob("*") if p.is_file()) if seed.is_dir() else [seed]
    for file in files:
        rel = file.relative_to(seed).as_posix() if seed.is_dir() else file.name
        digest.update(rel.encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()


def _tables(seed: Path) -> list[Path]:
    if not seed.is_dir():
        raise InputError("expected a folder of <table>.csv files (and optional schema.sql)",
                         path=seed)  # fmt: skip
    tables = sorted(seed.glob("*.csv"))
    if not tables:
        raise InputError("no <table>.csv file in the fixture folder", path=seed)
    return tables


def _publish(tmp: Path, target: Path) -> Path:
    os.replace(tmp, target)  # atomic: a concurrent builder's file is identical
    return target


def build_duckdb(seed: Path, cache_dir: Path) -> Path:
    """The DuckDB file built from `seed` (built on first use, then reused)."""
    target = cache_dir / "fixtures" / f"duckdb-{seed_digest(seed, 'duckdb')[:20]}.duckdb"
    if target.exists():
        return target
    import duckdb

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}")
    con = duckdb.connect(str(tmp))
    try:
        schema = seed / "schema.sql"
        if schema.exists():
            con.execute(schema.read_text(encoding="utf-8"))
        existing = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        for table in _tables(seed):
            name = table.stem.replace('"', '""')
            if table.stem in existing:
                con.execute(f"COPY \"{name}\" FROM '{table.as_posix()}' (HEADER)")
            else:
                con.execute(f'CREATE TABLE "{name}" AS SELECT * FROM read_csv_auto(?)',
                            [str(table)])  # fmt: skip
        con.execute("CHECKPOINT")
    except Exception as exc:
        con.close()
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot build the DuckDB fixture: {exc}", path=seed) from exc
    con.close()
    tmp.with_name(tmp.name + ".wal").unlink(missing_ok=True)
    return _publish(tmp, target)


def build_sqlite(seed: Path, cache_dir: Path) -> Path:
    """The SQLite file built from `seed` (types from schema.sql's column affinities)."""
    target = cache_dir / "fixtures" / f"sqlite-{seed_digest(seed, 'sqlite')[:20]}.sqlite"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}")
    con = sqlite3.connect(tmp)
    try:
        schema = seed / "schema.sql"
        if schema.exists():
            con.executescript(schema.read_text(encoding="utf-8"))
        for table in _tables(seed):
            with table.open(newline="", encoding="utf-8") as handle:
                reader = csv.reader(handle)
                header = next(reader)
                cols = ", ".join(f'"{c}"' for c in header)
                if not schema.exists():
                    con.execute(f'CREATE TABLE IF NOT EXISTS "{table.stem}" ({cols})')
                marks = ", ".join("?" for _ in header)
                con.executemany(
                    f'INSERT INTO "{table.stem}" ({cols}) VALUES ({marks})',
                    ([v if v != "" else None for v in row] for row in reader),
                )
        con.commit()
    except Exception as exc:
        con.close()
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot build the SQLite fixture: {exc}", path=seed) from exc
    con.close()
    return _publish(tmp, target)
