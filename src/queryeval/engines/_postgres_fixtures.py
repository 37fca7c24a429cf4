"""PostgreSQL fixtures and the `engine: postgres` builder.

A fixture is a seed as for DuckDB (a folder of `<table>.csv` with an optional `schema.sql`;
column types of a table without DDL as DuckDB's CSV reader sniffs them) or one `.sql` file
(a plain `pg_dump` too, run by psql). It becomes a database of the shared server, named by
the seed's digest, built once a server life. The reader role may read it; a disposable
copy's own role may read and write the copy (see `queryeval.engines._disposable`).

    databases:
      club: {engine: postgres, fixture: fixtures/club}        # or fixture: club.sql
      prod: {engine: postgres, url: "postgresql://reader@db.example/club",
             options: {password_env: PGPASSWORD}}
"""

from __future__ import annotations

import csv
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval.engines._fixtures import seed_digest
from queryeval.engines._postgres_server import READER, PostgresServer, shared_server
from queryeval.errors import InputError

if TYPE_CHECKING:
    from queryeval.engines._base import Engine
    from queryeval.engines._factory import EngineSpec

# DuckDB's sniffed types -> PostgreSQL's
_TYPES = {"BIGINT": "bigint", "INTEGER": "integer", "SMALLINT": "smallint", "DOUBLE": "double "
          "precision", "FLOAT": "real", "BOOLEAN": "boolean", "DATE": "date", "TIME": "time",
          "TIMESTAMP": "timestamp", "TIMESTAMP WITH TIME ZONE": "timestamptz",
          "VARCHAR": "text", "HUGEINT": "numeric", "UUID": "uuid"}  # fmt: skip


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sniffed_columns(table: Path) -> list[tuple[str, str]]:
    """(column, PostgreSQL type) of a CSV file, as DuckDB's reader sniffs them."""
    import duckdb

    con = duckdb.connect(":memory:")
    try:
        rows = con.execute("DESCRIBE SELECT * FROM read_csv_auto(?)", [str(table)]).fetchall()
    finally:
        con.close()
    return [(str(r[0]), _TYPES.get(str(r[1]).upper(), "text")) for r in rows]


def _load_folder(server: PostgresServer, database: str, seed: Path) -> None:
    tables = sorted(seed.glob("*.csv"))
    if not tables:
        raise InputError("no <table>.csv file in the fixture folder", path=seed)
    schema = seed / "schema.sql"
    if schema.exists():
        server.psql(database, schema)
    with server.admin(database) as conn:
        listed = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        )
        existing = {r[0] for r in listed}
        for table in tables:
            name = _quote(table.stem)
            with table.open(newline="", encoding="utf-8") as handle:
                header = next(csv.reader(handle), None)
            if not header:
                raise InputError("empty CSV file (a header row is expected)", path=table)
            if table.stem not in existing:
                columns = ", ".join(f"{_quote(c)} {t}" for c, t in _sniffed_columns(table))
                conn.execute(f"CREATE TABLE {name} ({columns})")
            cols = ", ".join(_quote(c) for c in header)
            try:
                with conn.cursor().copy(
                    f"COPY {name} ({cols}) FROM STDIN WITH (FORMAT csv, HEADER true)"
                ) as copy:
                    copy.write(table.read_bytes())
            except Exception as exc:
                raise InputError(f"cannot load the table: {exc}", path=table) from exc


def _schemas(conn: Any) -> list[str]:
    listed = conn.execute(
        "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' "
        "AND nspname <> 'information_schema'"
    )
    return [_quote(r[0]) for r in listed]


def _grant(server: PostgresServer, database: str) -> None:
    """The reader may connect to the database and read every table; no one else may
    connect (the task role is given its copies only: `grant_task`)."""
    with server.admin(database) as conn:
        conn.execute(f"REVOKE CONNECT, TEMPORARY ON DATABASE {_quote(database)} FROM PUBLIC")
        conn.execute(f"GRANT CONNECT ON DATABASE {_quote(database)} TO {READER}")
        for schema in _schemas(conn):
            conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {READER}")
            conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {READER}")


def grant_task(server: PostgresServer, database: str, role: str) -> None:
    """On a disposable copy: `role` may connect, read and write every table and sequence,
    run the functions and create objects in the schemas (not the database's: no
    extension, no schema)."""
    who = _quote(role)
    with server.admin(database) as conn:
        conn.execute(f"GRANT CONNECT ON DATABASE {_quote(database)} TO {who}")
        for schema in _schemas(conn):
            conn.execute(f"GRANT USAGE, CREATE ON SCHEMA {schema} TO {who}")
            conn.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA {schema} TO {who}")
            conn.execute(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA {schema} TO {who}")
            conn.execute(f"GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {schema} TO {who}")


def build_postgres_fixture(seed: Path, server: PostgresServer) -> str:
    """The name of the server's database built from `seed` (built once a server life)."""
    name = f"fx_{seed_digest(seed, 'postgres')[:20]}"
    with server.lock:
        if server.database_exists(name):
            return name
        tmp = f"build_{uuid.uuid4().hex[:16]}"
        with server.admin() as conn:
            conn.execute(f"CREATE DATABASE {tmp} TEMPLATE template0 ENCODING 'UTF8'")
        try:
            if seed.is_dir():
                _load_folder(server, tmp, seed)
            elif seed.suffix.lower() == ".sql":
                server.psql(tmp, seed)
            else:
                raise InputError("expected a folder of <table>.csv files (and optional "
                                 "schema.sql) or a .sql file", path=seed)  # fmt: skip
            with server.admin() as conn:
                conn.execute(f"ALTER DATABASE {tmp} RENAME TO {name}")
        except BaseException:
            with server.admin() as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {tmp} WITH (FORCE)")
            raise
        _grant(server, name)
    return name


def build_postgres(spec: EngineSpec) -> Engine:
    """`engine: postgres`: a fixture on the server queryeval starts, or a user's URL."""
    from queryeval.engines._factory import _secret, _url_identity
    from queryeval.engines._postgres import PostgresEngine

    spec.need("fixture", "url")
    if spec.config.url:
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        url = str(spec.config.url).replace("postgresql+psycopg://", "postgresql://", 1)
        extra: dict[str, Any] = {}
        for key in ("user", "password"):
            value = _secret(spec.options, key)
            if value is not None:
                extra[key] = value
        if spec.options.get("database"):
            extra["dbname"] = str(spec.options["database"])
        try:
            conninfo = make_conninfo(url, **extra)
            conninfo_to_dict(conninfo)
        except Exception as exc:
            raise InputError(f"not a PostgreSQL URL: {exc}", where=f"{spec.where}.url") from None
        identity = f"postgres:{_url_identity(url)}/{extra.get('dbname', '')}"
        return PostgresEngine(spec.name, spec.limits, identity, conninfo)
    seed = spec.resolve(str(spec.config.fixture))
    server = shared_server(spec.limits.memory_limit)
    database = build_postgres_fixture(seed, server)
    return PostgresEngine(spec.name, spec.limits, f"postgres:fixture:{database}",
                          server.conninfo(database), server=server, database=database)  # fmt: skip
