"""Engines from a suite's `databases:` entries, built once per run (`RunResources`).

    databases:
      sales:  {engine: duckdb, fixture: fixtures/sales}        # or path: data/sales.duckdb
      shop:   {engine: sqlite, path: data/shop.sqlite}
      pg:     {engine: sqlalchemy, url: "postgresql+psycopg://user@host/db"}
      logs:   {engine: kql, fixture: fixtures/logs, options: {now: "2024-06-01T12:00:00Z"}}
      adx:    {engine: kusto, url: "https://x.kusto.windows.net", options: {database: Logs}}
      movies: {engine: arcadedb, fixture: fixtures/movies.yaml}  # or path: a database folder
      neo:    {engine: neo4j, url: "bolt://localhost:7687",
               options: {user: neo4j, password_env: NEO4J_PASSWORD}}

Every engine takes `options.timeout_s`, `max_rows`, `max_bytes` (see `Limits`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval.engines._base import Engine, Limits, parse_size
from queryeval.errors import InputError

if TYPE_CHECKING:
    from queryeval.config import DatabaseConfig
    from queryeval.resources import RunResources

from queryeval.engines._options import ENGINE_ALIASES as _ALIASES
from queryeval.engines._registry import engine_kinds


def _file_identity(path: Path) -> str:
    stat = path.stat()
    return f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"


def _url_identity(url: str) -> str:
    """The URL without its password (identities end up in cache keys and reports)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.username:
        netloc = f"{parts.username}@{netloc}"
    if parts.port:
        netloc = f"{netloc}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def _secret(options: dict[str, Any], key: str) -> str | None:
    """`key` from options, or from the environment variable named by `<key>_env`."""
    if options.get(f"{key}_env"):
        return os.environ.get(str(options[f"{key}_env"]))
    value = options.get(key)
    return None if value is None else str(value)


def _now(options: dict[str, Any]) -> dt.datetime:
    """The pinned clock: `options.now`, else this moment (fixed for the engine's life)."""
    from queryeval.engines._kql import parse_now

    return parse_now(options["now"]) if "now" in options else dt.datetime.now(dt.UTC)


@dataclass(frozen=True)
class EngineSpec:
    """One configured database, as an engine's builder receives it: the entry, its options
    and limits, where relative paths resolve, and the cache folder (fixtures are built
    there)."""

    name: str
    config: DatabaseConfig
    options: dict[str, Any]
    limits: Limits
    base_dir: Path
    cache_dir: Path

    @property
    def where(self) -> str:
        """The entry's place in the suite (for errors)."""
        return f"databases.{self.name}"

    def resolve(self, value: str) -> Path:
        """A path of the entry, relative to the suite's folder."""
        p = Path(value).expanduser()
        return p if p.is_absolute() else self.base_dir / p

    def need(self, *keys: str) -> None:
        """InputError unless the entry sets one of `keys` (path, fixture, url)."""
        if not any(getattr(self.config, k) for k in keys):
            raise InputError(
                f"engine {self.config.engine!r} needs {' or '.join(keys)}", where=self.where
            )


def build_engine(name: str, config: DatabaseConfig, base_dir: Path, cache_dir: Path,
                 threads: int | None = None) -> Engine:  # fmt: skip
    """A ready engine for one configured database (fixtures are built on first use), by the
    builder registered for its engine kind (`queryeval.engines.register_engine`).
    `threads`: DuckDB's threads where the database's options set none."""
    from queryeval.engines._registry import engine_builder

    kind = _ALIASES.get(config.engine, config.engine)
    try:
        builder = engine_builder(kind)
    except KeyError:
        raise InputError(
            f"unknown engine {config.engine!r}; expected one of {', '.join(engine_kinds())}",
            where=f"databases.{name}",
        ) from None
    options = dict(config.options)
    limits = Limits.from_options(options)
    if threads is not None and limits.threads is None:
        limits = replace(limits, threads=threads)
    spec = EngineSpec(name, config, options, limits, base_dir, cache_dir)
    return builder(spec)


def _local_file(spec: EngineSpec, kind: str) -> tuple[Path, str]:
    """(the database file, its identity) of a file engine: its path, or its fixture built."""
    from queryeval.engines import _fixtures

    spec.need("path", "fixture")
    if spec.config.fixture:
        seed = spec.resolve(spec.config.fixture)
        build = _fixtures.build_sqlite if kind == "sqlite" else _fixtures.build_duckdb
        path = build(seed, spec.cache_dir)
        return path, f"{kind}:fixture:{path.stem}"
    path = spec.resolve(str(spec.config.path))
    if not path.exists():
        raise InputError("database file not found", path=path, where=spec.where)
    return path, f"{kind}:file:{_file_identity(path)}"


def build_duckdb(spec: EngineSpec) -> Engine:
    """DuckDB: a file, a fixture, or a URL (SQLAlchemy)."""
    if spec.config.url:
        return _sqlalchemy(spec.name, spec.config.url, spec.limits)
    from queryeval.engines._duckdb import DuckDBEngine

    path, identity = _local_file(spec, "duckdb")
    return DuckDBEngine(spec.name, path, spec.limits, identity, spec.options.get("settings"))


def build_sqlite(spec: EngineSpec) -> Engine:
    """SQLite: a file, a fixture, or a URL (SQLAlchemy)."""
    if spec.config.url:
        return _sqlalchemy(spec.name, spec.config.url, spec.limits)
    from queryeval.engines._sqlite import SQLiteEngine

    path, identity = _local_file(spec, "sqlite")
    text_errors = spec.options.get("text_errors", "strict")
    if text_errors not in ("strict", "ignore", "replace"):
        raise InputError(f"text_errors={text_errors!r}: expected strict, ignore or "
                         "replace", where=f"{spec.where}.options")  # fmt: skip
    if text_errors != "strict":  # the rows differ, so must the gold cache's key
        identity = f"{identity}:text_errors={text_errors}"
    return SQLiteEngine(spec.name, path, spec.limits, identity, text_errors=text_errors)


def build_kql(spec: EngineSpec) -> Engine:
    """duckdb-kql in process: a DuckDB file or fixture queried in KQL."""
    from queryeval.engines._kql import KqlEngine, parse_now

    path, identity = _local_file(spec, "kql")
    options = spec.options
    pinned = parse_now(options["now"]) if "now" in options else None
    external = None
    if options.get("externaldata"):  # URLs read from local files: the results depend on them
        from queryeval.engines._kql_externaldata import ExternalData, file_identity, resolve

        files = resolve(options["externaldata"], spec.base_dir)
        external = ExternalData(files)
        identity += f":externaldata={file_identity(files)}"
    return KqlEngine(spec.name, path, spec.limits, identity, pinned,  # else: the data's latest
                     externaldata=external)  # fmt: skip


def build_sqlalchemy(spec: EngineSpec) -> Engine:
    """Any SQLAlchemy URL."""
    spec.need("url")
    return _sqlalchemy(spec.name, str(spec.config.url), spec.limits)


def build_kusto(spec: EngineSpec) -> Engine:
    """An Azure Data Explorer (Kusto) endpoint."""
    spec.need("url")
    from queryeval.engines._kusto import KustoEngine

    options, url = spec.options, str(spec.config.url)
    database = options.get("database") or spec.name
    now = _now(options)
    identity = f"kusto:{_url_identity(url)}/{database}:now={now.isoformat()}"
    return KustoEngine(spec.name, url, str(database), spec.limits, identity, now,
                       auth=options.get("auth"))  # fmt: skip


def build_cypher(spec: EngineSpec) -> Engine:
    """Cypher: a Neo4j/Bolt URL, or an embedded ArcadeDB database folder or fixture."""
    from queryeval.engines._cypher import CypherEngine

    config, options, limits = spec.config, spec.options, spec.limits
    if config.url:
        user = _secret(options, "user") or "neo4j"
        password = _secret(options, "password") or ""
        identity = f"neo4j:{_url_identity(config.url)}/{options.get('database') or ''}"
        return CypherEngine(spec.name, limits, identity, url=config.url, auth=(user, password),
                            database=options.get("database"))  # fmt: skip
    spec.need("path", "fixture")
    from queryeval.engines._arcadedb import ArcadeDBServer, build_graph_fixture

    heap = str(options.get("heap", "1g"))
    if config.fixture:
        database = build_graph_fixture(spec.resolve(config.fixture), spec.cache_dir, heap)
        identity = f"arcadedb:fixture:{database.parent.parent.name}"
    else:
        database = spec.resolve(str(config.path))
        digest = hashlib.sha256(_file_identity(database).encode()).hexdigest()[:20]
        identity = f"arcadedb:dir:{digest}"
    copy = bool(options.get("copy", config.fixture is not None))
    # the queries' buffers: at most memory_limit, and at most half the JVM's heap
    budget = min(limits.memory_limit, parse_size(heap) // 2) // 2**20
    server = ArcadeDBServer(database, timeout_s=limits.timeout_s, heap=heap, copy=copy,
                            query_heap_mb=max(1, budget))  # fmt: skip
    return CypherEngine(spec.name, limits, identity, server=server)


def _sqlalchemy(name: str, url: str, limits: Limits) -> Engine:
    from queryeval.engines._sqlalchemy import SQLAlchemyEngine

    return SQLAlchemyEngine(name, url, limits, f"sqlalchemy:{_url_identity(url)}")


def database_names(ctx: RunResources) -> list[str]:
    """The suite's database names, in file order."""
    return list(ctx.suite.databases) if ctx.suite is not None else []


def engine_from_context(ctx: RunResources, database_name: str) -> Engine:
    """The engine of `database_name`, built on first use and shared for the whole run."""
    if ctx.suite is None or database_name not in ctx.suite.databases:
        known = ", ".join(database_names(ctx)) or "none"
        raise InputError(f"unknown database {database_name!r} (the suite has: {known})",
                         where="databases")  # fmt: skip
    config = ctx.suite.databases[database_name]
    base_dir = ctx.suite.base_dir
    return ctx.resource(
        f"engine:{database_name}",
        lambda: build_engine(database_name, config, base_dir, ctx.cache_dir, ctx.engine_threads),
    )
