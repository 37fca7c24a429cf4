"""An empty copy of an engine's database (same schema, no rows), for telling which golds a
query that ignores the data would match (`queryeval selftest`, `validate`)."""

from __future__ import annotations

from pathlib import Path

from queryeval.engines._base import Engine


def empty_twin(engine: Engine, folder: Path) -> Engine | None:
    """The engine on an empty copy of its database's schema, made in `folder` (DuckDB,
    SQLite, duckdb-kql with the same pinned `now`), or None for engines it cannot copy."""
    from queryeval.engines._duckdb import DuckDBEngine
    from queryeval.engines._kql import KqlEngine
    from queryeval.engines._sqlite import SQLiteEngine

    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(engine, SQLiteEngine):
        import sqlite3

        with engine._lock:
            ddl = [r[0] for r in engine._con.execute(
                "SELECT sql FROM sqlite_master WHERE type IN ('table', 'view') AND sql IS NOT NULL "
                "AND name NOT LIKE 'sqlite_%' ORDER BY type = 'view', rowid")]  # fmt: skip
        path = folder / "empty.sqlite"
        con = sqlite3.connect(path)
        for statement in ddl:
            con.execute(statement)
        con.commit()
        con.close()
        return SQLiteEngine(engine.name, path, engine.limits, f"empty:{engine.identity}")
    if isinstance(engine, DuckDBEngine | KqlEngine):
        import duckdb

        tables = engine.schema()["tables"]
        path = folder / "empty.duckdb"
        duck = duckdb.connect(str(path))
        for table, columns in tables.items():
            cols = ", ".join(
                f'"{c.replace(chr(34), chr(34) * 2)}" {kind}' for c, kind in columns.items()
            )
            duck.execute(f'CREATE TABLE "{table.replace(chr(34), chr(34) * 2)}" ({cols})')
        duck.close()
        if isinstance(engine, KqlEngine):
            return KqlEngine(
                engine.name, path, engine.limits, f"empty:{engine.identity}", engine.now,
                externaldata=engine.externaldata.emptied(),  # the same URLs, no rows
            )  # fmt: skip
        return DuckDBEngine(engine.name, path, engine.limits, f"empty:{engine.identity}")
    return None
