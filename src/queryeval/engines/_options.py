"""A suite's `databases:` entries checked before anything runs: a known engine, where the
database lives, and every option typed and meant for that engine."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from queryeval._validation import first_problem
from queryeval.engines._base import parse_size

if TYPE_CHECKING:
    from pathlib import Path

    from queryeval.config import DatabaseConfig

ENGINE_ALIASES = {"duckdb-kql": "kql", "cypher": "arcadedb", "sql": "sqlalchemy"}
_COMMON = {"timeout_s", "max_wall_s", "max_rows", "max_bytes", "gold_cache", "memory_limit",
           "max_query_bytes"}  # fmt: skip
# which options each engine reads (beyond the common ones) and where its database lives are
# declared where it is registered (queryeval.engines._registry)


class DatabaseOptions(BaseModel):
    """Every option a database may set; `DatabaseConfig.options` is checked against it."""

    model_config = ConfigDict(extra="forbid")

    timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="limit of a query's own CPU time (embedded engines; a server's wall clock)",
    )
    max_wall_s: float | None = Field(
        default=None, gt=0, description="wall-clock cap of a query (default 10 x timeout_s)"
    )
    max_rows: int = Field(default=10_000, ge=1, description="rows kept of a result")
    max_bytes: int = Field(default=64 * 2**20, ge=1, description="approximate bytes kept")
    gold_cache: bool = Field(default=True, description="keep gold results on disk")
    memory_limit: int | str = Field(
        default="1GiB", description="memory of a query: the engine's limit, the process's growth"
    )
    max_query_bytes: int | str = Field(default="256KiB", description="length of a query's text")
    threads: int | None = Field(default=None, ge=1, description="DuckDB's threads")
    settings: dict[str, Any] = Field(default_factory=dict, description="DuckDB settings")
    now: dt.datetime | None = Field(default=None, description="KQL's pinned now()")
    externaldata: dict[str, str] | None = Field(
        default=None, description="KQL: externaldata URLs mapped to local files (suite-relative)"
    )
    database: str | None = None
    auth: Literal["none", "az_cli", "managed_identity"] | None = None
    heap: str = Field(default="1g", pattern=r"^\d+[kKmMgG]?$", description="JVM heap, e.g. 1g")
    text_errors: Literal["strict", "ignore", "replace"] = Field(
        default="strict", description="SQLite: how text that is not UTF-8 is read"
    )
    copy_: bool | None = Field(default=None, alias="copy")
    user: str | None = None
    user_env: str | None = None
    password: str | None = None
    password_env: str | None = None

    @field_validator("memory_limit", "max_query_bytes")
    @classmethod
    def _size(cls, v: int | str) -> int | str:
        if parse_size(v) < 1:
            raise ValueError("expected a positive size")
        return v

    @field_validator("now", mode="before")
    @classmethod
    def _instant(cls, v: Any) -> Any:
        return v.replace("Z", "+00:00") if isinstance(v, str) else v


def engine_kind(name: str) -> str:
    """The engine an `engine:` value stands for (aliases resolved)."""
    return ENGINE_ALIASES.get(name, name)


def database_problem(
    config: DatabaseConfig, base_dir: Path
) -> tuple[tuple[str | int, ...], str] | None:
    """What is wrong with one `databases:` entry, as (location inside it, message saying
    what was expected), or None. Files and fixture seeds must exist."""
    from queryeval.engines._registry import BUILTIN_ENGINES, engine_kind_entry, engine_kinds

    kind = engine_kind(config.engine)
    try:
        entry = engine_kind_entry(kind)
    except KeyError:
        known = ", ".join([*engine_kinds(), *ENGINE_ALIASES])
        return ("engine",), f"unknown engine {config.engine!r}; expected one of {known}"
    options = config.options
    if kind not in BUILTIN_ENGINES:  # a registered engine's own options: its model's to type
        options = {k: v for k, v in options.items() if k in _COMMON}
    problem = _model_problem(DatabaseOptions, options, entry.options)
    if problem is None and entry.model is not None:
        own = {k: v for k, v in config.options.items() if k in entry.options}
        problem = _model_problem(entry.model, own, entry.options)
    if problem is not None:
        return problem
    for key in config.options:
        if key not in _COMMON and key not in entry.options:
            allowed = ", ".join(_allowed(entry.options))
            return ("options", key), f"not an option of engine {kind!r}; expected some of {allowed}"
    if kind == "duckdb" and config.options.get("settings"):
        refused = _duckdb_settings_problem(config.options["settings"])
        if refused is not None:
            return ("options", "settings"), refused
    places = entry.places
    given = [p for p in ("path", "fixture", "url") if getattr(config, p)]
    wrong = [p for p in given if p not in places]
    if wrong:
        return (wrong[0],), f"engine {kind!r} takes {' or '.join(places)}, not {wrong[0]}"
    if not given:
        return ("engine",), f"engine {kind!r} needs {' or '.join(places)}"
    for place in ("path", "fixture"):
        value = getattr(config, place)
        if value:
            resolved = _resolve(value, base_dir)
            if not resolved.exists():
                what = "database file or folder" if place == "path" else "fixture seed"
                return (place,), f"{what} not found: {resolved}"
    if config.options.get("externaldata"):
        from queryeval.engines._kql_externaldata import mapping_problem

        found = mapping_problem(config.options["externaldata"], base_dir)
        if found is not None:
            return ("options", "externaldata", *found[0]), found[1]
    return None


def _model_problem(
    model: type[BaseModel], options: dict[str, Any], names: frozenset[str]
) -> tuple[tuple[str | int, ...], str] | None:
    """(location, message) of the first option `model` refuses, or None."""
    try:
        model.model_validate(options)
    except ValidationError as exc:
        unknown = f"unknown option; expected some of {', '.join(_allowed(names))}"
        loc, _, message = first_problem(exc, unknown)
        return ("options", *loc), message
    return None


def _allowed(options: frozenset[str]) -> list[str]:
    return sorted(_COMMON | options)


def _resolve(value: str, base_dir: Path) -> Path:
    from pathlib import Path

    p = Path(value).expanduser()
    return p if p.is_absolute() else base_dir / p


def _duckdb_settings_problem(settings: dict[str, Any]) -> str | None:
    """Why DuckDB refuses these settings (tried on an empty in-memory database), or None."""
    try:
        import duckdb
    except ImportError:  # pragma: no cover - the sql extra is not installed
        return None
    try:
        duckdb.connect(":memory:", config={k: v for k, v in settings.items()}).close()
    except duckdb.Error as exc:
        return f"DuckDB refuses these settings: {str(exc).splitlines()[0]}"
    return None
