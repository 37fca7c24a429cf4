"""The engine registry: engine kinds (what a `databases:` entry's `engine:` names) -> how
to build one and what it takes. Built-in kinds are one line each below, their modules
imported on first use; other engines register with `register_engine` (a suite's
`plugins:` module) or the `queryeval.engines` entry-point group, and need no edit here."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

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
    registered kind the pydantic model its own options are checked with (if it gave one)."""

    build: str | EngineBuilder
    options: frozenset[str]
    places: tuple[str, ...]
    model: type[BaseModel] | None = None


def _builtin(build: str, options: set[str], places: tuple[str, ...]) -> EngineKind:
    return EngineKind(f"queryeval.engines._factory:{build}", frozenset(options), places)


_FILE = ("path", "fixture", "url")
# Built-in kinds: one line each; the engine's module is imported when a database needs it.
_BUILTIN: dict[str, EngineKind] = {
    "duckdb": _builtin("build_duckdb", {"settings", "threads"}, _FILE),
    "sqlite": _builtin("build_sqlite", {"text_errors"}, _FILE),
    "sqlalchemy": _builtin("build_sqlalchemy", set(), ("url",)),
    "kql": _builtin("build_kql", {"now", "threads"}, ("path", "fixture")),
    "kusto": _builtin("build_kusto", {"now", "database", "auth"}, ("url",)),
    "arcadedb": _builtin("build_cypher", {"heap", "copy"}, _FILE),
    "neo4j": _builtin(
        "build_cypher", {"database", "user", "user_env", "password", "password_env"}, ("url",)
    ),
    "postgres": EngineKind(
        "queryeval.engines._postgres_fixtures:build_postgres",
        frozenset({"database", "user", "user_env", "password", "password_env"}),
        ("fixture", "url"),
    ),
}
BUILTIN_ENGINES = tuple(_BUILTIN)
_REGISTERED: dict[str, EngineKind] = {}


def register_engine(
    kind: str,
    *,
    options: frozenset[str] | set[str] | type[BaseModel] = frozenset(),
    places: tuple[str, ...] = ("url",),
) -> Callable[[EngineBuilder], EngineBuilder]:
    """Decorator: register an engine builder `(EngineSpec) -> Engine` under `kind`, with the
    options it reads (beyond the common ones: their names, or a pydantic model that types
    them, checked before anything runs) and where its database may live."""

    def deco(build: EngineBuilder) -> EngineBuilder:
        if isinstance(options, type):
            names = frozenset(f.alias or name for name, f in options.model_fields.items())
            _REGISTERED[kind] = EngineKind(build, names, tuple(places), options)
        else:
            _REGISTERED[kind] = EngineKind(build, frozenset(options), tuple(places))
        return build

    return deco


@cache
def _plugins() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group="queryeval.engines")}


def engine_kinds() -> list[str]:
    """Every engine kind a suite may name (aliases aside), built-in ones first.

    >>> engine_kinds()[:3]
    ['duckdb', 'sqlite', 'sqlalchemy']
    """
    extra = sorted((set(_REGISTERED) | set(_plugins())) - set(_BUILTIN))
    return [*_BUILTIN, *extra]


def engine_kind_entry(kind: str) -> EngineKind:
    """The registration of `kind` (KeyError if unknown). A plugin's module is imported: its
    `register_engine` registers it."""
    if kind in _BUILTIN:
        return _BUILTIN[kind]
    if kind not in _REGISTERED and kind in _plugins():
        importlib.import_module(_plugins()[kind].partition(":")[0])
    return _REGISTERED[kind]


def engine_builder(kind: str) -> EngineBuilder:
    """The builder of `kind` (KeyError if unknown)."""
    build = engine_kind_entry(kind).build
    if isinstance(build, str):
        module, _, attr = build.partition(":")
        built: EngineBuilder = getattr(importlib.import_module(module), attr)
        return built
    return build
