"""Engines from a suite's `databases:` entries, built once per run through the context.

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
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from queryeval.engines._base import Engine, Limits, parse_size
from queryeval.errors import InputError

if TYPE_CHECKING:
    from queryeval.config import DatabaseConfig
    from queryeval.scorers import ScoringContext

from queryeval.engines._options import ENGINE_ALIASES as _ALIASES
from queryeval.engines._options import ENGINE_OPTIONS

ENGINES = tuple(ENGINE_OPTIONS)
_BUILD_LOCK = threading.Lock()  # ctx.resource is not thread-safe; building is rare


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


def build_engine(name: str, config: DatabaseConfig, base_dir: Path, cache_dir: Path) -> Engine:
    """A ready engine for one configured database (fixtures are built on first use)."""
    kind = _ALIASES.get(config.engine, config.engine)
    options = dict(config.options)
    limits = Limits.from_options(options)
    where = f"databases.{name}"

    def resolve(value: str) -> Path:
        p = Path(value).expanduser()
        return p if p.is_absolute() else base_dir / p

    def need(*keys: str) -> None:
        if not any(getattr(config, k) for k in keys):
            raise InputError(f"engine {config.engine!r} needs {' or '.join(keys)}", where=where)

    if kind in {"duckdb", "sqlite", "kql"}:
        from queryeval.engines import _fixtures

        if config.url and kind != "kql":
            return _sqlalchemy(name, config.url, limits)
        need("path", "fixture")
        if config.fixture:
            seed = resolve(config.fixture)
            build = _fixtures.build_sqlite if kind == "sqlite" else _fixtures.build_duckdb
            path = build(seed, cache_dir)
            identity = f"{kind}:fixture:{path.stem}"
        else:
            path = resolve(str(config.path))
            if not path.exists():
                raise InputError("database file not found", path=path, where=where)
            identity = f"{kind}:file:{_file_identity(path)}"
        if kind == "duckdb":
            from queryeval.engines._duckdb import DuckDBEngine

            return DuckDBEngine(name, path, limits, identity, options.get("settings"))
        if kind == "sqlite":
            from queryeval.engines._sqlite import SQLiteEngine

            text_errors = options.get("text_errors", "strict")
            if text_errors not in ("strict", "ignore", "replace"):
                raise InputError(f"text_errors={text_errors!r}: expected strict, ignore or "
                                 "replace", where=f"{where}.options")  # fmt: skip
            if text_errors != "strict":  # the rows differ, so must the gold cache's key
                identity = f"{identity}:text_errors={text_errors}"
            return SQLiteEngine(name, path, limits, identity, text_errors=text_errors)
        from queryeval.engines._kql import KqlEngine, parse_now

        pinned = parse_now(options["now"]) if "now" in options else None
        return KqlEngine(name, path, limits, identity, pinned)  # else: the data's latest time

    if kind == "sqlalchemy":
        need("url")
        return _sqlalchemy(name, str(config.url), limits)

    if kind == "kusto":
        need("url")
        from queryeval.engines._kusto import KustoEngine

        database = options.get("database") or name
        now = _now(options)
        identity = f"kusto:{_url_identity(str(config.url))}/{database}:now={now.isoformat()}"
        return KustoEngine(name, str(config.url), str(database), limits, identity, now,
                           auth=options.get("auth"))  # fmt: skip

    if kind in {"arcadedb", "neo4j"}:
        from queryeval.engines._cypher import CypherEngine

        if config.url:
            user = _secret(options, "user") or "neo4j"
            password = _secret(options, "password") or ""
            identity = f"neo4j:{_url_identity(config.url)}/{options.get('database') or ''}"
            return CypherEngine(name, limits, identity, url=config.url, auth=(user, password),
                                database=options.get("database"))  # fmt: skip
        need("path", "fixture")
        from queryeval.engines._arcadedb import ArcadeDBServer, build_graph_fixture

        heap = str(options.get("heap", "1g"))
        if config.fixture:
            database = build_graph_fixture(resolve(config.fixture), cache_dir, heap)
            identity = f"arcadedb:fixture:{database.parent.parent.name}"
        else:
            database = resolve(str(config.path))
            digest = hashlib.sha256(_file_identity(database).encode()).hexdigest()[:20]
            identity = f"arcadedb:dir:{digest}"
        copy = bool(options.get("copy", config.fixture is not None))
        # the queries' buffers: at most memory_limit, and at most half the JVM's heap
        budget = min(limits.memory_limit, parse_size(heap) // 2) // 2**20
        server = ArcadeDBServer(database, timeout_s=limits.timeout_s, heap=heap, copy=copy,
                                query_heap_mb=max(1, budget))  # fmt: skip
        return CypherEngine(name, limits, identity, server=server)

    raise InputError(
        f"unknown engine {config.engine!r}; expected one of {', '.join(ENGINES)}", where=where
    )


def _sqlalchemy(name: str, url: str, limits: Limits) -> Engine:
    from queryeval.engines._sqlalchemy import SQLAlchemyEngine

    return SQLAlchemyEngine(name, url, limits, f"sqlalchemy:{_url_identity(url)}")


def database_names(ctx: ScoringContext) -> list[str]:
    """The suite's database names, in file order."""
    return list(ctx.suite.databases) if ctx.suite is not None else []


def engine_from_context(ctx: ScoringContext, database_name: str) -> Engine:
    """The engine of `database_name`, built on first use and shared for the whole run."""
    if ctx.suite is None or database_name not in ctx.suite.databases:
        known = ", ".join(database_names(ctx)) or "none"
        raise InputError(f"unknown database {database_name!r} (the suite has: {known})",
                         where="databases")  # fmt: skip
    config = ctx.suite.databases[database_name]
    base_dir = ctx.suite.base_dir
    with _BUILD_LOCK:
        return ctx.resource(
            f"engine:{database_name}",
            lambda: build_engine(database_name, config, base_dir, ctx.cache_dir),
        )
