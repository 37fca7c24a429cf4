"""Shared by the PostgreSQL and task tests: a small club database as a fixture seed, an
engine of each kind on it, a scoring context of it, and a checksum of a database's content
(the user's database must stay unchanged)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from queryeval.config import DatabaseConfig
from queryeval.engines import Engine, build_engine
from queryeval.engines._disposable_python import wall_missing
from queryeval.engines._postgres_server import missing_reason
from queryeval.scorers import ScoringContext

MEMBERS = "id,name,country,score\n1,Ann,France,70\n2,Bo,Spain,90\n3,Ed,Spain,55\n4,Cy,Italy,80\n"
NO_POSTGRES = missing_reason()
needs_postgres = pytest.mark.skipif(NO_POSTGRES is not None, reason=str(NO_POSTGRES))
# a benchmark's Python test function runs only behind a file-system wall (Landlock): where
# the kernel has none it is unsupported (tests/test_task_python_wall.py checks that path)
NO_WALL = wall_missing()
needs_wall = pytest.mark.skipif(NO_WALL is not None, reason=f"Python test functions: {NO_WALL}")
KINDS = ["sqlite", "duckdb", pytest.param("postgres", marks=needs_postgres)]


class ClubContext(ScoringContext):
    """A scoring context whose one database, `club`, is `engine`."""

    def __init__(self, engine: Any) -> None:
        super().__init__()
        self._engine = engine

    def engine(self, database: str) -> Any:
        return self._engine

    def database_names(self) -> list[str]:
        return ["club"]


def club_seed(folder: Path) -> Path:
    """A seed folder holding member.csv."""
    seed = folder / "club"
    seed.mkdir(parents=True, exist_ok=True)
    (seed / "member.csv").write_text(MEMBERS)
    (seed / "schema.sql").write_text(
        "CREATE TABLE member (id INTEGER PRIMARY KEY, name TEXT, country TEXT, score INTEGER);\n"
    )
    return seed


def club_engine(kind: str, folder: Path, **options: Any) -> Engine:
    """An engine of `kind` on the club fixture (built under `folder`)."""
    seed = club_seed(folder)
    config = DatabaseConfig(engine=kind, fixture=str(seed), options={"timeout_s": 1, **options})
    return build_engine("club", config, folder, folder / "cache")


def checksum(engine: Any) -> str:
    """The content of the engine's database: the file's bytes (SQLite, DuckDB), or every
    table's rows and the catalog of user objects and roles (PostgreSQL)."""
    if getattr(engine, "server", None) is None:
        return hashlib.sha256(Path(engine.path).read_bytes()).hexdigest()
    digest = hashlib.sha256()
    with engine.server.admin(engine.database) as conn:
        tables = conn.execute(
            "SELECT format('%I.%I', schemaname, tablename) FROM pg_tables "
            "WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1"
        ).fetchall()
        for (table,) in tables:
            rows = conn.execute(f"SELECT t::text FROM {table} t ORDER BY 1").fetchall()
            digest.update(f"{table}:{rows}".encode())
        objects = conn.execute(
            "SELECT relname, relkind FROM pg_class c JOIN pg_namespace n ON n.oid = "
            "c.relnamespace WHERE nspname NOT IN ('pg_catalog', 'information_schema', "
            "'pg_toast') ORDER BY 1"
        ).fetchall()
        digest.update(repr(objects).encode())
        roles = conn.execute(
            "SELECT rolname, rolsuper, rolcreaterole, rolcreatedb FROM pg_roles "
            "WHERE rolname NOT LIKE 'task\\_%' ORDER BY 1"
        ).fetchall()
        digest.update(repr(roles).encode())
        databases = conn.execute("SELECT datname FROM pg_database ORDER BY 1").fetchall()
        digest.update(repr([d for d in databases if not d[0].startswith("task_")]).encode())
    return digest.hexdigest()
