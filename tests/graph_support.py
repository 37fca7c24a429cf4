"""One example movie graph for the session: its ArcadeDB database built once from its seed, and
one server (a JVM: seconds to start) shared by the modules that query it as it is
(test_engines_cypher, test_agentic_kg, test_cypher_schema_failure, test_garbage_never_helps).
Every suite there configures `movies` alike (examples/cypher, `timeout_s: 2.0`); a test that
needs other limits or another graph still starts its own server, on the session's built
fixtures (see `with_built_fixtures`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from queryeval.config import DatabaseConfig
from queryeval.engines import Engine, build_engine
from queryeval.resources import RunResources
from queryeval.runner import load_suite

ROOT = Path(__file__).resolve().parents[1]
MOVIES_SUITE = ROOT / "examples" / "cypher" / "suite.yaml"


def with_built_fixtures(cache: Path, built: Path) -> Path:
    """`cache` (made here) with its `fixtures/` the session's `built` folder: databases built
    from seeds are content-addressed and only ever copied (a server works on a copy), so one
    build serves every cache; the rest of the cache (gold results, replies) stays its own."""
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "fixtures").symlink_to(built, target_is_directory=True)
    return cache


@contextmanager
def session_engine(name: str, cache: Path) -> Iterator[Engine]:
    """The engine of the example suite's database `name`, left open by the contexts that
    share it (`share_engine`) and closed when the session ends."""
    suite = load_suite(MOVIES_SUITE)
    engine = build_engine(name, suite.databases[name], suite.base_dir, cache)
    close = engine.close
    engine.close = lambda: None  # type: ignore[method-assign]  # contexts leave it open
    try:
        yield engine
    finally:
        close()


def serve_session_engine(
    monkeypatch: pytest.MonkeyPatch, engine: Engine, name: str = "movies"
) -> None:
    """Runs and contexts started in the test (`run_suite`, `engine_from_context`) get the
    session's `engine` for database `name` where their suite configures it as the session's
    suite does (the same checks as `share_engine`): a run on the example graph then queries
    the session's server instead of starting a JVM of its own (9 s of CPU). Any other
    database is built as usual."""
    from queryeval.engines import _factory

    real = _factory.build_engine
    suite = load_suite(MOVIES_SUITE)
    ours = suite.databases[name]

    def build(
        database: str, config: DatabaseConfig, base_dir: Path, *args: Any, **kwargs: Any
    ) -> Engine:
        if database == name and _same_database(config, base_dir, ours, suite.base_dir):
            return engine
        return real(database, config, base_dir, *args, **kwargs)

    monkeypatch.setattr(_factory, "build_engine", build)


def _same_database(
    config: DatabaseConfig, base_dir: Path, ours: DatabaseConfig, our_base: Path
) -> bool:
    """Whether `config` (of a suite in `base_dir`) is the session's database `ours`."""
    if config.model_dump(exclude={"fixture"}) != ours.model_dump(exclude={"fixture"}):
        return False
    theirs = (base_dir / str(config.fixture)).resolve()
    return theirs == (our_base / str(ours.fixture)).resolve()


def share_engine(ctx: RunResources, name: str, engine: Engine) -> None:
    """Make `engine` the context's engine of database `name` (what `engine_from_context`
    returns), after checking the context's suite configures that database as the session's."""
    assert ctx.suite is not None
    ours = load_suite(MOVIES_SUITE).databases[name]
    theirs = ctx.suite.databases[name]
    assert theirs.model_dump(exclude={"fixture"}) == ours.model_dump(exclude={"fixture"})
    assert ctx.suite.base_dir / str(theirs.fixture) == MOVIES_SUITE.parent / str(ours.fixture)
    assert ctx.resource(f"engine:{name}", lambda: engine) is engine
