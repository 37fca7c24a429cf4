"""The engine registry: engine kinds (what a `databases:` entry's `engine:` names) -> how
to build one and what it takes. Built-in kinds are one line each below, their modules
imported on first use; other engines register with `register_engine` (a suite's
`plugins:` module) or the `queryeval.engines` entry-point group, and need no edit here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from queryeval._registry import Registry, load_target

if TYPE_CHECKING:
    from pydantic import BaseModel

    from queryeval.engines._base import Engine
    from queryeval.engines._factory import EngineSpec

EngineBuilder = Callable[["EngineSpec"], "Engine"]


@dataclass(frozen=True)
class EngineKind:
    """An engine kind: its builder ("module:function", or the function), the options it
    reads beyond the common ones (timeout_s, max_rows, max_bytes, gold_cache, memory_limit,
    max_query_bytes), where its database may live (path, fixture, url), and for a
    registered kind the pydantic model its own options are checked with (if it gave one).

    What the rest of queryeval asks of a kind is said here, never listed elsewhere:
    `language` (the query language it runs: sql, kql, cypher), `file` (what a `path:` of it
    is, for a kind whose database is a local file this process opens: "a DuckDB database
    file"), `variants` (whether the gold self-test can derive database variants for it)."""

    build: str | EngineBuilder
    options: frozenset[str]
    places: tuple[str, ...]
    model: type[BaseModel] | None = None
    language: str = "sql"
    file: str | None = None
    variants: bool = False


def _builtin(build: str, options: set[str], places: tuple[str, ...], **kw: Any) -> EngineKind:
    return EngineKind(f"queryeval.engines._factory:{build}", frozenset(options), places, **kw)


_FILE = ("path", "fixture", "url")
_KQL_FILE = "a DuckDB database file with the KQL tables"
# Built-in kinds: one line each; the engine's module is imported when a database needs it.
_BUILTIN: dict[str, EngineKind] = {
    "duckdb": _builtin(
        "build_duckdb", {"settings", "threads"}, _FILE, file="a DuckDB database file", variants=True
    ),
    "sqlite": _builtin(
        "build_sqlite", {"text_errors"}, _FILE, file="an SQLite database file", variants=True
    ),
    "sqlalchemy": _builtin("build_sqlalchemy", set(), ("url",)),
    "kql": _builtin(
        "build_kql",
        {"now", "threads", "externaldata"},
        ("path", "fixture"),
        language="kql",
        file=_KQL_FILE,
        variants=True,
    ),
    "kusto": _builtin("build_kusto", {"now", "database", "auth"}, ("url",), language="kql"),
    "arcadedb": _builtin("build_cypher", {"heap", "copy"}, _FILE, language="cypher"),
    "neo4j": _builtin(
        "build_cypher",
        {"database", "user", "user_env", "password", "password_env"},
        ("url",),
        language="cypher",
    ),
    "postgres": EngineKind(
        "queryeval.engines._postgres_fixtures:build_postgres",
        frozenset({"database", "user", "user_env", "password", "password_env"}),
        ("fixture", "url"),
    ),
}
BUILTIN_ENGINES = tuple(_BUILTIN)  # the built-in engine kinds, in their order (`engines.ENGINES`)


def _from_entry_point(kind: str, loaded: Any) -> EngineKind:
    """An entry point names a builder; a module that registered the kind on import is
    found before this is asked."""
    return EngineKind(loaded, frozenset(), ("url",))


ENGINES: Registry[EngineKind] = Registry(
    "engine", builtins=_BUILTIN, group="queryeval.engines", adapt=_from_entry_point
)


def register_engine(
    kind: str,
    *,
    options: frozenset[str] | set[str] | type[BaseModel] = frozenset(),
    places: tuple[str, ...] = ("url",),
    language: str = "sql",
) -> Callable[[EngineBuilder], EngineBuilder]:
    """Decorator: register an engine builder `(EngineSpec) -> Engine` under `kind`, with the
    options it reads (beyond the common ones: their names, or a pydantic model that types
    them, checked before anything runs), where its database may live, and the query
    language it runs."""

    def deco(build: EngineBuilder) -> EngineBuilder:
        if isinstance(options, type):
            names = frozenset(f.alias or name for name, f in options.model_fields.items())
            entry = EngineKind(build, names, tuple(places), options, language=language)
        else:
            entry = EngineKind(build, frozenset(options), tuple(places), language=language)
        ENGINES.register(kind, entry)
        return build

    return deco


def engine_kinds() -> list[str]:
    """Every engine kind a suite may name (aliases aside), built-in ones first.

    >>> engine_kinds()[:3]
    ['duckdb', 'sqlite', 'sqlalchemy']
    """
    return ENGINES.names()


def engine_kind_entry(kind: str) -> EngineKind:
    """The registration of `kind` (an UnknownName, a KeyError, if unknown). A plugin's
    module is imported: its `register_engine` registers it. Aliases are resolved.

    >>> engine_kind_entry("duckdb-kql").language
    'kql'
    """
    from queryeval.engines._options import engine_kind

    return ENGINES.get(engine_kind(kind))


def engine_language(kind: str) -> str | None:
    """The query language an engine kind (or alias) runs; None for an unknown kind.

    >>> engine_language("arcadedb"), engine_language("sqlite"), engine_language("nope")
    ('cypher', 'sql', None)
    """
    try:
        return engine_kind_entry(kind).language
    except KeyError:
        return None


def engine_builder(kind: str) -> EngineBuilder:
    """The builder of `kind` (KeyError if unknown)."""
    build = engine_kind_entry(kind).build
    if isinstance(build, str):
        built: EngineBuilder = load_target(build)
        return built
    return build
